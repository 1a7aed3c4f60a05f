"""sessions: when the latest start was heard

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05 09:00:00

A session's records may arrive in any order (a spool drained late, an import beside live
hooks, the mod and a hook's hand-over): an end that happened before a resume, arriving after
it, must not end the session that resumed. `last_start_at` is the instant of the latest
start (startup or resume) heard; an end from before it is of an earlier run. Rows made
before it take their `started_at` when a start was heard.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import ondeck.db.types

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "sessions",
        sa.Column("last_start_at", ondeck.db.types.Instant(timezone=True), nullable=True),
    )
    op.execute("UPDATE sessions SET last_start_at = started_at WHERE start_source IS NOT NULL")


def downgrade() -> None:
    # A plain DROP COLUMN (SQLite 3.35+ and PostgreSQL): batch mode would copy the table, and
    # dropping the old copy trips the foreign keys of the rows that refer to it.
    op.drop_column("sessions", "last_start_at")
