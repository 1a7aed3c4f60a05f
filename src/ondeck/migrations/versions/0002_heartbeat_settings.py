"""heartbeat settings: the zone, tick interval and lease grace of the process that wrote it

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 10:00:00

A heartbeat alone said when a jobs process last ticked, not how often it means to tick
(so how long a silence is a dead loop), nor in which zone it fires dates, nor after what
grace its reaper releases a lease. Rows written before this revision keep NULL there and
readers fall back to their own settings. Adding nullable columns rewrites no row on either
store; the index lets the latest heartbeats be read without a scan of every process ever
started.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workers", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tz", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("tick_seconds", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("lease_grace_seconds", sa.Float(), nullable=True))
        batch_op.create_index("ix_workers_last_tick_at", ["last_tick_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("workers", schema=None) as batch_op:
        batch_op.drop_index("ix_workers_last_tick_at")
        batch_op.drop_column("lease_grace_seconds")
        batch_op.drop_column("tick_seconds")
        batch_op.drop_column("tz")
