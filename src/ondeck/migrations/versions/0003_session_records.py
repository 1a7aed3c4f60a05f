"""session records

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 05:12:07.737218

Session records (issue 14): `sessions`, their compactions, and the receipts that make every
hook event idempotent. Revises 0002.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import ondeck.db.types

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("agent", sa.String(length=32), nullable=False),
        sa.Column("external_id", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=16), server_default="open", nullable=False),
        sa.Column("started_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("last_seen_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("ended_at", ondeck.db.types.Instant(timezone=True), nullable=True),
        sa.Column("end_reason", sa.String(length=64), nullable=True),
        sa.Column("start_source", sa.String(length=16), nullable=True),
        sa.Column("resumes", sa.Integer(), server_default="0", nullable=False),
        sa.Column("cwd", sa.Text(), nullable=True),
        sa.Column("git_root", sa.Text(), nullable=True),
        sa.Column("branch", sa.String(length=255), nullable=True),
        sa.Column("start_head", sa.String(length=64), nullable=True),
        sa.Column("end_head", sa.String(length=64), nullable=True),
        sa.Column("capture", sa.Boolean(), server_default=sa.text("(true)"), nullable=False),
        sa.Column("side", sa.String(length=64), nullable=True),
        sa.Column("project", sa.String(length=64), nullable=True),
        sa.Column("side_rule", sa.String(length=16), server_default="none", nullable=False),
        sa.Column("project_rule", sa.String(length=16), server_default="none", nullable=False),
        sa.Column("unclassified", sa.Boolean(), server_default=sa.text("(false)"), nullable=False),
        sa.Column(
            "classification",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "disagreements",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("last_word", sa.Text(), nullable=True),
        sa.Column("last_word_at", ondeck.db.types.Instant(timezone=True), nullable=True),
        sa.Column("compactions", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "commits",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "files",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("git_note", sa.Text(), nullable=True),
        sa.Column("redactions", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "redaction_kinds",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("updated_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.CheckConstraint(
            "(status = 'ended' AND ended_at IS NOT NULL) OR (status <> 'ended' AND ended_at IS NULL)",
            name=op.f("ck_sessions_ended_has_end"),
        ),
        sa.CheckConstraint("status IN ('open', 'ended', 'lost')", name=op.f("ck_sessions_status")),
        sa.CheckConstraint(
            "NOT unclassified OR (side IS NULL AND project IS NULL)",
            name=op.f("ck_sessions_unclassified_undecided"),
        ),
        sa.CheckConstraint(
            "capture OR (last_word IS NULL AND cwd IS NULL AND git_root IS NULL AND branch IS NULL AND start_head IS NULL AND end_head IS NULL AND commits IS NULL AND files IS NULL)",
            name=op.f("ck_sessions_capture_off_keeps_no_text"),
        ),
        sa.CheckConstraint(
            "resumes >= 0 AND compactions >= 0 AND redactions >= 0", name=op.f("ck_sessions_counts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sessions")),
        sa.UniqueConstraint("agent", "external_id", name=op.f("uq_sessions_agent_external_id")),
    )
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_sessions_inbox",
            ["id"],
            unique=False,
            sqlite_where=sa.text("unclassified"),
            postgresql_where=sa.text("unclassified"),
        )
        batch_op.create_index(
            "ix_sessions_open_seen",
            ["last_seen_at"],
            unique=False,
            sqlite_where=sa.text("status = 'open'"),
            postgresql_where=sa.text("status = 'open'"),
        )
        batch_op.create_index("ix_sessions_project", ["project", "id"], unique=False)
        batch_op.create_index("ix_sessions_side", ["side", "id"], unique=False)

    op.create_table(
        "hook_receipts",
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column(
            "session_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_hook_receipts_session_id_sessions")
        ),
        sa.PrimaryKeyConstraint("fingerprint", name=op.f("pk_hook_receipts")),
    )
    op.create_table(
        "session_compactions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "session_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("trigger", sa.String(length=16), nullable=True),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("chars", sa.Integer(), server_default="0", nullable=False),
        sa.Column("redactions", sa.Integer(), server_default="0", nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_session_compactions_session_id_sessions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_session_compactions")),
    )
    with op.batch_alter_table("session_compactions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_session_compactions_session_id", ["session_id", "id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("session_compactions", schema=None) as batch_op:
        batch_op.drop_index("ix_session_compactions_session_id")

    op.drop_table("session_compactions")
    op.drop_table("hook_receipts")
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_index("ix_sessions_side")
        batch_op.drop_index("ix_sessions_project")
        batch_op.drop_index(
            "ix_sessions_open_seen",
            sqlite_where=sa.text("status = 'open'"),
            postgresql_where=sa.text("status = 'open'"),
        )
        batch_op.drop_index(
            "ix_sessions_inbox",
            sqlite_where=sa.text("unclassified"),
            postgresql_where=sa.text("unclassified"),
        )

    op.drop_table("sessions")
