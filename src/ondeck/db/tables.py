"""The schema: SQLAlchemy Core metadata. Migrations in `ondeck/migrations` produce exactly this.

Invariants live here as constraints so that no code path, and no hand-written SQL, can
break them: one task per schedule and fire date (`tasks.source`), one fire per schedule and
date, and RUNNING exactly when a lease has an owner and an end.
"""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Date,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from ondeck.core.models import BackupStatus, MissedPolicy, ScheduleKind, TaskStatus
from ondeck.db.types import Id, Instant, Json

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


# A live schedule that fires: the predicate of ix_schedules_due, written once. Every reader
# of due or live schedules (the jobs tick, the backup step, the context, the calendar feed)
# uses this text rather than `schedules.c.enabled`, which SQLite renders as `enabled = 1`
# and its planner then does not match to the partial index.
SCHEDULES_LIVE = text("enabled AND deleted_at IS NULL")


def _in(column: str, values: type[StrEnum]) -> str:
    """`status IN ('READY', 'RUNNING', …)`: the enum's values in their declared order.

    Migration 0001 wrote these CHECKs out in full and is released: the text built here must
    stay exactly that (tests/integration/test_migrations.py compares them), so a new value
    needs a new migration as well as a new member.
    """
    return f"{column} IN ({', '.join(repr(member.value) for member in values)})"


def _is(column: str, value: StrEnum) -> str:
    return f"{column} = '{value.value}'"


_READY = _is("status", TaskStatus.READY)
_RUNNING = _is("status", TaskStatus.RUNNING)


tasks = Table(
    "tasks",
    metadata,
    Column("id", Id, primary_key=True),
    Column("title", String(500), nullable=False),
    Column("body", Text, nullable=False, server_default=""),
    Column("status", String(16), nullable=False, server_default=TaskStatus.READY.value),
    # 0 (drop everything) .. 9 (someday); lower comes first, like P0/P1/P2.
    Column("priority", Integer, nullable=False, server_default="2"),
    Column("due_on", Date),
    Column("project", String(64)),
    # "sch:{schedule_id}:{fire_date}" for tasks a schedule made: running twice creates once.
    Column("source", String(200)),
    Column("lease_owner", String(200)),
    Column("lease_until", Instant),
    # Fencing token: only grows, so a holder whose lease was reaped cannot act on a retake.
    Column("lease_token", BigInteger, nullable=False, server_default="0"),
    Column("created_at", Instant, nullable=False),
    Column("updated_at", Instant, nullable=False),
    Column("done_at", Instant),
    CheckConstraint(_in("status", TaskStatus), name="status"),
    CheckConstraint(
        f"({_RUNNING} AND lease_owner IS NOT NULL AND lease_until IS NOT NULL)"
        f" OR (status <> '{TaskStatus.RUNNING.value}' AND lease_owner IS NULL"
        " AND lease_until IS NULL)",
        name="running_has_lease",
    ),
    CheckConstraint("lease_token >= 0", name="lease_token"),
    CheckConstraint("priority BETWEEN 0 AND 9", name="priority"),
    # Unique where set: tasks added by hand (no source) then cost it nothing on every change.
    # `ON CONFLICT (source) WHERE source IS NOT NULL` names it (backlog.insert_many_from_schedule).
    Index(
        "uq_tasks_source",
        "source",
        unique=True,
        sqlite_where=text("source IS NOT NULL"),
        postgresql_where=text("source IS NOT NULL"),
    ),
    # The claim-next query and the context's due list read READY tasks in this order.
    Index(
        "ix_tasks_ready",
        "due_on",
        "priority",
        "id",
        sqlite_where=text(_READY),
        postgresql_where=text(_READY),
    ),
    # The reaper and the context's running list read RUNNING tasks by lease end.
    Index(
        "ix_tasks_running",
        "lease_until",
        sqlite_where=text(_RUNNING),
        postgresql_where=text(_RUNNING),
    ),
    # The context counts a project's due and undated READY tasks from this index alone
    # (100,000 tasks: under 1 ms instead of 15).
    Index(
        "ix_tasks_ready_project",
        "project",
        "due_on",
        sqlite_where=text(_READY),
        postgresql_where=text(_READY),
    ),
    Index("ix_tasks_project_status", "project", "status"),
)


schedules = Table(
    "schedules",
    metadata,
    Column("id", Id, primary_key=True),
    Column("title", String(500), nullable=False),
    Column("body", Text, nullable=False, server_default=""),
    Column("kind", String(16), nullable=False, server_default=ScheduleKind.TASK.value),
    Column("rule", String(200), nullable=False),
    Column("project", String(64)),
    Column("start_on", Date, nullable=False),
    Column("next_due", Date),
    Column("missed", String(16), nullable=False, server_default=MissedPolicy.LATEST.value),
    Column("last_fired_on", Date),
    Column("last_fired_at", Instant),
    Column("enabled", Boolean, nullable=False, server_default=text("true")),
    Column("priority", Integer, nullable=False, server_default="2"),
    Column("created_at", Instant, nullable=False),
    Column("updated_at", Instant, nullable=False),
    # Removed schedules keep their row so fires and events still name them.
    Column("deleted_at", Instant),
    CheckConstraint(_in("kind", ScheduleKind), name="kind"),
    CheckConstraint(_in("missed", MissedPolicy), name="missed"),
    CheckConstraint("priority BETWEEN 0 AND 9", name="priority"),
    # The jobs tick's "what is due" query (firing, the backup step), the context's pending
    # reminders and overdue warning: enabled, live schedules by next_due.
    Index(
        "ix_schedules_due",
        "next_due",
        sqlite_where=SCHEDULES_LIVE,
        postgresql_where=SCHEDULES_LIVE,
    ),
)

fires = Table(
    "fires",
    metadata,
    Column("id", Id, primary_key=True),
    Column("schedule_id", Id, ForeignKey("schedules.id"), nullable=False),
    Column("fire_date", Date, nullable=False),
    # When it was processed: the evidence the session context needs after next_due moved on.
    Column("fired_at", Instant, nullable=False),
    Column("task_id", Id, ForeignKey("tasks.id")),
    Column("skipped", Integer, nullable=False, server_default="0"),
    UniqueConstraint("schedule_id", "fire_date"),
    CheckConstraint("skipped >= 0", name="skipped"),
    # The context's "reminders fired today" reads fires by date and by instant: with both
    # indexes it never reads the whole history of fires.
    Index("ix_fires_fired_at", "fired_at"),
    Index("ix_fires_fire_date", "fire_date"),
)

events = Table(
    "events",
    metadata,
    Column("id", Id, primary_key=True),
    Column("at", Instant, nullable=False),
    Column("actor", String(200), nullable=False),
    Column("kind", String(64), nullable=False),
    Column("subject", String(200), nullable=False),
    Column("details", Json(), nullable=False),
    # Activity pages read newest first (by id, which follows time), optionally by subject or
    # kind. Nothing reads events by `at`: an index on it would only slow every change down.
    Index("ix_events_subject", "subject", "id"),
    Index("ix_events_kind", "kind", "id"),
)

workers = Table(
    "workers",
    metadata,
    # "jobs@host:pid": one row per jobs process, its heartbeat.
    Column("name", String(200), primary_key=True),
    Column("started_at", Instant, nullable=False),
    Column("last_tick_at", Instant),
    Column("tick_ms", Float),
    Column("ticks", BigInteger, nullable=False, server_default="0"),
    Column("summary", Json()),
    Column("stopped_at", Instant),
    # The settings of the process that wrote the heartbeat (revision 0002; NULL in rows
    # written before it): its zone decides the dates it fires, its interval how long a
    # silence means it is not running, its grace when its reaper releases a lease.
    Column("tz", String(64)),
    Column("tick_seconds", Float),
    Column("lease_grace_seconds", Float),
    # workers.jobs_health and the System page read the latest heartbeats: one row per jobs
    # process ever started (`jobs --once` from cron adds one a run), so not a scan.
    Index("ix_workers_last_tick_at", "last_tick_at"),
)

backups = Table(
    "backups",
    metadata,
    Column("id", Id, primary_key=True),
    Column("started_at", Instant, nullable=False),
    Column("finished_at", Instant),
    Column("status", String(16), nullable=False, server_default=BackupStatus.RUNNING.value),
    Column("worker", String(200)),
    Column("file", Text),
    Column("bytes", BigInteger),
    Column("error", Text),
    Column("schedule_id", Id, ForeignKey("schedules.id")),
    CheckConstraint(_in("status", BackupStatus), name="status"),
    Index("ix_backups_started_at", "started_at"),
)
