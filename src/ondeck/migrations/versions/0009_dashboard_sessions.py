"""dashboard sessions

Revision ID: 0009
Revises: 0006
Create Date: 2026-12-15 09:00:00

Dashboard sessions (issue 21, item 8): one row per login, holding the SHA-256 of the
session's random id (the signed cookie carries the id), when it began and when it ends.
Logging out deletes the row, so the cookie is refused from then on, wherever it was copied.
Revises 0006.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import ondeck.db.types

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dashboard_sessions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("expires_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.CheckConstraint(
            "expires_at > created_at", name=op.f("ck_dashboard_sessions_ends_after_start")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dashboard_sessions")),
        sa.UniqueConstraint("hash", name=op.f("uq_dashboard_sessions_hash")),
    )


def downgrade() -> None:
    op.drop_table("dashboard_sessions")
