"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29 08:31:51.102595
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import ondeck.db.types

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column(
            "details",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index("ix_events_kind", ["kind", "id"], unique=False)
        batch_op.create_index("ix_events_subject", ["subject", "id"], unique=False)

    op.create_table(
        "schedules",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("body", sa.Text(), server_default="", nullable=False),
        sa.Column("kind", sa.String(length=16), server_default="task", nullable=False),
        sa.Column("rule", sa.String(length=200), nullable=False),
        sa.Column("project", sa.String(length=64), nullable=True),
        sa.Column("start_on", sa.Date(), nullable=False),
        sa.Column("next_due", sa.Date(), nullable=True),
        sa.Column("missed", sa.String(length=16), server_default="latest", nullable=False),
        sa.Column("last_fired_on", sa.Date(), nullable=True),
        sa.Column("last_fired_at", ondeck.db.types.Instant(timezone=True), nullable=True),
        sa.Column("enabled", sa.Boolean(), server_default=sa.text("(true)"), nullable=False),
        sa.Column("priority", sa.Integer(), server_default="2", nullable=False),
        sa.Column("created_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("updated_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("deleted_at", ondeck.db.types.Instant(timezone=True), nullable=True),
        sa.CheckConstraint("kind IN ('task', 'remind', 'backup')", name=op.f("ck_schedules_kind")),
        sa.CheckConstraint("missed IN ('latest', 'all', 'skip')", name=op.f("ck_schedules_missed")),
        sa.CheckConstraint("priority BETWEEN 0 AND 9", name=op.f("ck_schedules_priority")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schedules")),
    )
    with op.batch_alter_table("schedules", schema=None) as batch_op:
        batch_op.create_index(
            "ix_schedules_due",
            ["next_due"],
            unique=False,
            sqlite_where=sa.text("enabled AND deleted_at IS NULL"),
            postgresql_where=sa.text("enabled AND deleted_at IS NULL"),
        )

    op.create_table(
        "tasks",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("body", sa.Text(), server_default="", nullable=False),
        sa.Column("status", sa.String(length=16), server_default="READY", nullable=False),
        sa.Column("priority", sa.Integer(), server_default="2", nullable=False),
        sa.Column("due_on", sa.Date(), nullable=True),
        sa.Column("project", sa.String(length=64), nullable=True),
        sa.Column("source", sa.String(length=200), nullable=True),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("lease_until", ondeck.db.types.Instant(timezone=True), nullable=True),
        sa.Column("lease_token", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("created_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("updated_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("done_at", ondeck.db.types.Instant(timezone=True), nullable=True),
        sa.CheckConstraint(
            "(status = 'RUNNING' AND lease_owner IS NOT NULL AND lease_until IS NOT NULL) OR (status <> 'RUNNING' AND lease_owner IS NULL AND lease_until IS NULL)",
            name=op.f("ck_tasks_running_has_lease"),
        ),
        sa.CheckConstraint(
            "status IN ('READY', 'RUNNING', 'DONE', 'CANCELLED')", name=op.f("ck_tasks_status")
        ),
        sa.CheckConstraint("lease_token >= 0", name=op.f("ck_tasks_lease_token")),
        sa.CheckConstraint("priority BETWEEN 0 AND 9", name=op.f("ck_tasks_priority")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tasks")),
    )
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.create_index(
            "uq_tasks_source",
            ["source"],
            unique=True,
            sqlite_where=sa.text("source IS NOT NULL"),
            postgresql_where=sa.text("source IS NOT NULL"),
        )
        batch_op.create_index("ix_tasks_project_status", ["project", "status"], unique=False)
        batch_op.create_index(
            "ix_tasks_ready_project",
            ["project", "due_on"],
            unique=False,
            sqlite_where=sa.text("status = 'READY'"),
            postgresql_where=sa.text("status = 'READY'"),
        )
        batch_op.create_index(
            "ix_tasks_ready",
            ["due_on", "priority", "id"],
            unique=False,
            sqlite_where=sa.text("status = 'READY'"),
            postgresql_where=sa.text("status = 'READY'"),
        )
        batch_op.create_index(
            "ix_tasks_running",
            ["lease_until"],
            unique=False,
            sqlite_where=sa.text("status = 'RUNNING'"),
            postgresql_where=sa.text("status = 'RUNNING'"),
        )

    op.create_table(
        "workers",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("started_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("last_tick_at", ondeck.db.types.Instant(timezone=True), nullable=True),
        sa.Column("tick_ms", sa.Float(), nullable=True),
        sa.Column("ticks", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column(
            "summary",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("stopped_at", ondeck.db.types.Instant(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_workers")),
    )
    op.create_table(
        "backups",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("started_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("finished_at", ondeck.db.types.Instant(timezone=True), nullable=True),
        sa.Column("status", sa.String(length=16), server_default="running", nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=True),
        sa.Column("file", sa.Text(), nullable=True),
        sa.Column("bytes", sa.BigInteger(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column(
            "schedule_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.CheckConstraint(
            "status IN ('running', 'ok', 'failed', 'abandoned')", name=op.f("ck_backups_status")
        ),
        sa.ForeignKeyConstraint(
            ["schedule_id"], ["schedules.id"], name=op.f("fk_backups_schedule_id_schedules")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_backups")),
    )
    with op.batch_alter_table("backups", schema=None) as batch_op:
        batch_op.create_index("ix_backups_started_at", ["started_at"], unique=False)

    op.create_table(
        "fires",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "schedule_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("fire_date", sa.Date(), nullable=False),
        sa.Column("fired_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("task_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("skipped", sa.Integer(), server_default="0", nullable=False),
        sa.CheckConstraint("skipped >= 0", name=op.f("ck_fires_skipped")),
        sa.ForeignKeyConstraint(
            ["schedule_id"], ["schedules.id"], name=op.f("fk_fires_schedule_id_schedules")
        ),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name=op.f("fk_fires_task_id_tasks")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fires")),
        sa.UniqueConstraint(
            "schedule_id", "fire_date", name=op.f("uq_fires_schedule_id_fire_date")
        ),
    )
    with op.batch_alter_table("fires", schema=None) as batch_op:
        batch_op.create_index("ix_fires_fire_date", ["fire_date"], unique=False)
        batch_op.create_index("ix_fires_fired_at", ["fired_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("fires", schema=None) as batch_op:
        batch_op.drop_index("ix_fires_fired_at")
        batch_op.drop_index("ix_fires_fire_date")

    op.drop_table("fires")
    with op.batch_alter_table("backups", schema=None) as batch_op:
        batch_op.drop_index("ix_backups_started_at")

    op.drop_table("backups")
    op.drop_table("workers")
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_tasks_running",
            sqlite_where=sa.text("status = 'RUNNING'"),
            postgresql_where=sa.text("status = 'RUNNING'"),
        )
        batch_op.drop_index(
            "ix_tasks_ready_project",
            sqlite_where=sa.text("status = 'READY'"),
            postgresql_where=sa.text("status = 'READY'"),
        )
        batch_op.drop_index(
            "ix_tasks_ready",
            sqlite_where=sa.text("status = 'READY'"),
            postgresql_where=sa.text("status = 'READY'"),
        )
        batch_op.drop_index("ix_tasks_project_status")
        batch_op.drop_index(
            "uq_tasks_source",
            sqlite_where=sa.text("source IS NOT NULL"),
            postgresql_where=sa.text("source IS NOT NULL"),
        )

    op.drop_table("tasks")
    with op.batch_alter_table("schedules", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_schedules_due",
            sqlite_where=sa.text("enabled AND deleted_at IS NULL"),
            postgresql_where=sa.text("enabled AND deleted_at IS NULL"),
        )

    op.drop_table("schedules")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index("ix_events_subject")
        batch_op.drop_index("ix_events_kind")

    op.drop_table("events")
