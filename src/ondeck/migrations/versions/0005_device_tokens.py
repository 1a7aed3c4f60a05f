"""device tokens

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-08 09:00:00

Device tokens (issue 16): one row per token made with `ondeck token create`, holding the
SHA-256 of the token (never the token), its scope, when it was made, last used, expires and
was revoked. Revises 0004.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import ondeck.db.types

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tokens",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("scope", sa.String(length=8), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("last_used_at", ondeck.db.types.Instant(timezone=True), nullable=True),
        sa.Column("expires_at", ondeck.db.types.Instant(timezone=True), nullable=True),
        sa.Column("revoked_at", ondeck.db.types.Instant(timezone=True), nullable=True),
        sa.CheckConstraint("scope IN ('read', 'write')", name=op.f("ck_tokens_scope")),
        sa.CheckConstraint("length(name) BETWEEN 1 AND 64", name=op.f("ck_tokens_name_length")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tokens")),
        sa.UniqueConstraint("hash", name=op.f("uq_tokens_hash")),
    )
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.create_index(
            "uq_tokens_name_live",
            ["name"],
            unique=True,
            sqlite_where=sa.text("revoked_at IS NULL"),
            postgresql_where=sa.text("revoked_at IS NULL"),
        )


def downgrade() -> None:
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.drop_index("uq_tokens_name_live")
    op.drop_table("tokens")
