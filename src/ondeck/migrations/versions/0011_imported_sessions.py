"""imported sessions

Revision ID: 0011
Revises: 0009
Create Date: 2026-12-16 09:00:00

The sessions before ondeck (issue 26): `ondeck session import` makes records of the
transcripts an agent left on disk. `imported` marks such a record, `imported_from` names
the file it came from (NULL when its session does not capture: a path says where it was);
`agent_version` keeps the agent's own version as its transcript gave it; `transcript_path`
is the transcript a hook named for a session it heard start, which the jobs tick reads for
the last activity and answer of a session whose end never came (NULL: none named).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = (
    "0009"  # no 0010: the recall index (issue 24) waits on its branch and follows as 0012
)
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (a constant default): SQLite's batch mode would copy the table, and
    # dropping the old copy trips the foreign keys of the rows that refer to it.
    op.add_column(
        "sessions",
        sa.Column("imported", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )
    op.add_column("sessions", sa.Column("imported_from", sa.Text(), nullable=True))
    op.add_column("sessions", sa.Column("agent_version", sa.String(length=32), nullable=True))
    op.add_column("sessions", sa.Column("transcript_path", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_column("transcript_path")
        batch_op.drop_column("agent_version")
        batch_op.drop_column("imported_from")
        batch_op.drop_column("imported")
