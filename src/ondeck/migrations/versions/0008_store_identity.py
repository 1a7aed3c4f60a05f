"""store identity

Revision ID: 0008
Revises: 0006
Create Date: 2026-12-01 22:30:00

The store's random id (issue 21 item 2): one row, made the first time ondeck opens the
database for a server or a hook (services/store_identity.py), so that `X-Ondeck-Store` is no
longer a hash of the database URL. Revises 0006 (the integrator re-chains).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import ondeck.db.types

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "store_identity",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("store_id", sa.String(length=32), nullable=False),
        sa.Column("created_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.CheckConstraint("id = 1", name=op.f("ck_store_identity_one_row")),
        sa.CheckConstraint(
            "length(store_id) BETWEEN 16 AND 32", name=op.f("ck_store_identity_store_id_length")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_store_identity")),
    )


def downgrade() -> None:
    op.drop_table("store_identity")
