"""tasks, schedules and device tokens belong to a side

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 22:00:00

Sides are hard partitions (issue 21, item 4): with sides configured, every task and
schedule belongs to one, chosen where it is made, and a session, a claim of the next task,
the context and every list see one side at a time. A task a schedule makes takes the
schedule's side; a reminder's fire is read through its schedule, so `fires` needs none.

`side` is NULL for every existing row: nothing is guessed. While sides are configured a
row without a side waits in the inbox, shown to no session, until the owner gives it one
(the dashboard's inbox, `ondeck task edit ID --side NAME`). A device token with a side
(`ondeck token create NAME --side work`) sees and writes that side only; NULL: every side.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("tasks", "schedules", "tokens"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("side", sa.String(length=64), nullable=True))
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.create_index("ix_tasks_side_status", ["side", "status"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index("ix_tasks_side_status")
    for table in ("tokens", "schedules", "tasks"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("side")
