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
    UniqueConstraint,
    text,
)

from ondeck.core.access import TokenScope
from ondeck.core.memory import NoteKind, NoteStatus
from ondeck.core.models import BackupStatus, MissedPolicy, ScheduleKind, TaskStatus
from ondeck.core.session_terms import SessionStatus
from ondeck.db import predicates
from ondeck.db.types import Id, Instant, ScrubbedJson, ScrubbedText

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


# A live schedule that fires: the predicate of ix_schedules_due (db/predicates.py says why).
SCHEDULES_LIVE = text(predicates.SCHEDULES_LIVE)


def _in(column: str, values: type[StrEnum]) -> str:
    """`status IN ('READY', 'RUNNING', …)`: the enum's values in their declared order.

    Migration 0001 wrote these CHECKs out in full and is released: the text built here must
    stay exactly that (tests/integration/test_migrations.py compares them), so a new value
    needs a new migration as well as a new member.
    """
    return f"{column} IN ({', '.join(repr(str(member)) for member in values)})"


def _is(column: str, value: StrEnum) -> str:
    return f"{column} = '{value.value}'"


_READY = _is("status", TaskStatus.READY)
_RUNNING = _is("status", TaskStatus.RUNNING)


tasks = Table(
    "tasks",
    metadata,
    Column("id", Id, primary_key=True),
    Column("title", ScrubbedText(500), nullable=False),
    Column("body", ScrubbedText(), nullable=False, server_default=""),
    Column("status", String(16), nullable=False, server_default=TaskStatus.READY.value),
    # 0 (drop everything) .. 9 (someday); lower comes first, like P0/P1/P2.
    Column("priority", Integer, nullable=False, server_default="2"),
    Column("due_on", Date),
    Column("project", ScrubbedText(64)),
    # "sch:{schedule_id}:{fire_date}" for tasks a schedule made: running twice creates once.
    Column("source", String(200)),
    Column("lease_owner", ScrubbedText(200)),
    Column("lease_until", Instant),
    # Fencing token: only grows, so a holder whose lease was reaped cannot act on a retake.
    Column("lease_token", BigInteger, nullable=False, server_default="0"),
    Column("created_at", Instant, nullable=False),
    Column("updated_at", Instant, nullable=False),
    Column("done_at", Instant),
    # Sides are hard partitions (revision 0007). NULL: no sides are configured (one pool),
    # or, while they are, the inbox: shown to no session until the owner gives it a side.
    Column("side", ScrubbedText(64)),
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
    # A side's lists and counts (revision 0007).
    Index("ix_tasks_side_status", "side", "status"),
)


schedules = Table(
    "schedules",
    metadata,
    Column("id", Id, primary_key=True),
    Column("title", ScrubbedText(500), nullable=False),
    Column("body", ScrubbedText(), nullable=False, server_default=""),
    Column("kind", String(16), nullable=False, server_default=ScheduleKind.TASK.value),
    Column("rule", String(200), nullable=False),
    Column("project", ScrubbedText(64)),
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
    # Its tasks and reminders take this side (revision 0007); NULL as for tasks.
    Column("side", ScrubbedText(64)),
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
    Column("actor", ScrubbedText(200), nullable=False),
    Column("kind", String(64), nullable=False),
    Column("subject", String(200), nullable=False),
    Column("details", ScrubbedJson(), nullable=False),
    # Activity pages read newest first (by id, which follows time), optionally by subject or
    # kind. Nothing reads events by `at`: an index on it would only slow every change down.
    Index("ix_events_subject", "subject", "id"),
    Index("ix_events_kind", "kind", "id"),
)

workers = Table(
    "workers",
    metadata,
    # "jobs@host:pid": one row per jobs process, its heartbeat.
    Column("name", ScrubbedText(200), primary_key=True),
    Column("started_at", Instant, nullable=False),
    Column("last_tick_at", Instant),
    Column("tick_ms", Float),
    Column("ticks", BigInteger, nullable=False, server_default="0"),
    Column("summary", ScrubbedJson()),
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
    Column("worker", ScrubbedText(200)),
    Column("file", ScrubbedText()),
    Column("bytes", BigInteger),
    Column("error", ScrubbedText()),
    Column("schedule_id", Id, ForeignKey("schedules.id")),
    CheckConstraint(_in("status", BackupStatus), name="status"),
    Index("ix_backups_started_at", "started_at"),
)


sessions = Table(
    "sessions",
    metadata,
    # One row per agent session: what its hooks reported, classified with the rule that
    # decided. Events (`session:<id>`) hold every change; this row is the current state.
    Column("id", Id, primary_key=True),
    Column("agent", String(32), nullable=False),
    # The agent's own id for the session (Claude Code's `session_id`).
    Column("external_id", String(200), nullable=False),
    Column("status", String(16), nullable=False, server_default="open"),
    Column("started_at", Instant, nullable=False),
    # The last hook event heard: a session silent past ONDECK_SESSION_GRACE becomes `lost`.
    Column("last_seen_at", Instant, nullable=False),
    Column("ended_at", Instant),
    Column("end_reason", ScrubbedText(64)),
    # How the first start came (startup, resume, clear, compact); NULL: no start was heard.
    Column("start_source", ScrubbedText(16)),
    # The latest start heard (a resume's): an end from before it, arriving after it, is of
    # an earlier run and ends nothing (migration 0013).
    Column("last_start_at", Instant),
    Column("resumes", Integer, nullable=False, server_default="0"),
    Column("cwd", ScrubbedText()),
    Column("git_root", ScrubbedText()),
    Column("branch", ScrubbedText(255)),
    Column("start_head", ScrubbedText(64)),
    Column("end_head", ScrubbedText(64)),
    # False: the session keeps its times, side and project, and nothing else.
    Column("capture", Boolean, nullable=False, server_default=text("true")),
    Column("side", ScrubbedText(64)),
    Column("project", ScrubbedText(64)),
    # Which rule decided: marker, path, remote, git (project only), moved, or none.
    Column("side_rule", String(16), nullable=False, server_default="none"),
    Column("project_rule", String(16), nullable=False, server_default="none"),
    # Undecided (in the inbox): shown to no other session until a person moves it.
    Column("unclassified", Boolean, nullable=False, server_default=text("false")),
    # The decision with its signals and reason (sessions/classify.py).
    Column("classification", ScrubbedJson(), nullable=False),
    # Every signal that disagreed, and every later hook whose place classified otherwise.
    Column("disagreements", ScrubbedJson(), nullable=False),
    Column("last_word", ScrubbedText()),
    Column("last_word_at", Instant),
    Column("compactions", Integer, nullable=False, server_default="0"),
    # What the session did in git, read at its end (NULL: not read, `git_note` says why).
    Column("commits", ScrubbedJson()),
    Column("files", ScrubbedJson()),
    Column("git_note", ScrubbedText()),
    # How many secrets and private spans were taken out of what was stored, by kind.
    Column("redactions", Integer, nullable=False, server_default="0"),
    Column("redaction_kinds", ScrubbedJson(), nullable=False),
    Column("created_at", Instant, nullable=False),
    Column("updated_at", Instant, nullable=False),
    # Made by `ondeck session import` from a transcript on disk (issue 26), not by hooks;
    # the file it came from (NULL when the session does not capture: a path is a place).
    Column("imported", Boolean, nullable=False, server_default=text("false")),
    Column("imported_from", ScrubbedText()),
    # The agent's version as its transcript gave it (Claude Code's `version`).
    Column("agent_version", ScrubbedText(32)),
    # The transcript a hook named (checked: a file under ~/.claude/projects): the jobs
    # tick reads the last activity and answer of a session whose end never came from it.
    Column("transcript_path", ScrubbedText()),
    UniqueConstraint("agent", "external_id"),
    CheckConstraint(_in("status", SessionStatus), name="status"),
    CheckConstraint(
        "(status = 'ended' AND ended_at IS NOT NULL) OR (status <> 'ended' AND ended_at IS NULL)",
        name="ended_has_end",
    ),
    # capture = false keeps times, side and project only: no text, place, files or commits.
    CheckConstraint(
        "capture OR (last_word IS NULL AND cwd IS NULL AND git_root IS NULL AND branch IS NULL"
        " AND start_head IS NULL AND end_head IS NULL AND commits IS NULL AND files IS NULL)",
        name="capture_off_keeps_no_text",
    ),
    # Unclassified means nothing was decided: no side or project to be shown under.
    CheckConstraint(
        "NOT unclassified OR (side IS NULL AND project IS NULL)", name="unclassified_undecided"
    ),
    CheckConstraint("resumes >= 0 AND compactions >= 0 AND redactions >= 0", name="counts"),
    # The jobs step that marks silent sessions lost reads open sessions by last_seen_at.
    Index(
        "ix_sessions_open_seen",
        "last_seen_at",
        sqlite_where=text("status = 'open'"),
        postgresql_where=text("status = 'open'"),
    ),
    # The inbox (Sessions page, context warning) reads unclassified sessions newest first.
    Index(
        "ix_sessions_inbox",
        "id",
        sqlite_where=text("unclassified"),
        postgresql_where=text("unclassified"),
    ),
    # The session list filtered by project or side, newest first.
    Index("ix_sessions_project", "project", "id"),
    Index("ix_sessions_side", "side", "id"),
)

session_compactions = Table(
    "session_compactions",
    metadata,
    Column("id", Id, primary_key=True),
    Column("session_id", Id, ForeignKey("sessions.id"), nullable=False),
    Column("at", Instant, nullable=False),
    Column("trigger", ScrubbedText(16)),
    # Claude's own summary, scrubbed and capped; NULL when the session does not capture.
    Column("summary", ScrubbedText()),
    # Its length before the cap.
    Column("chars", Integer, nullable=False, server_default="0"),
    Column("redactions", Integer, nullable=False, server_default="0"),
    # The session page's timeline reads a session's compactions in order.
    Index("ix_session_compactions_session_id", "session_id", "id"),
)

hook_receipts = Table(
    "hook_receipts",
    metadata,
    # One row per hook event applied: the same event twice (a hook installed twice, a spool
    # drained again after a crash) finds its receipt and changes nothing.
    Column("fingerprint", String(64), primary_key=True),
    Column("session_id", Id, ForeignKey("sessions.id"), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("at", Instant, nullable=False),
)


# --- memory: notes and handoffs -------------------------------------------------------------

_NOTE_ACTIVE = "status = 'active'"

notes = Table(
    "notes",
    metadata,
    # What a session should know that is not a task (core/memory.py). Events (`note:<id>`)
    # hold every change, with the texts it replaced; this row is the current state.
    Column("id", Id, primary_key=True),
    # Sides are hard partitions. NULL: no sides are configured (one pool), or the note came
    # from an unclassified session (shown to nobody but a person asking for the inbox).
    Column("side", ScrubbedText(64)),
    # NULL: the whole side.
    Column("project", ScrubbedText(64)),
    Column("kind", String(16), nullable=False, server_default="note"),
    Column("text", ScrubbedText(), nullable=False),
    Column("pinned", Boolean, nullable=False, server_default=text("false")),
    Column("status", String(16), nullable=False, server_default="active"),
    # Why it is wrong (or expired): the words of whoever said so.
    Column("status_reason", ScrubbedText()),
    Column("status_at", Instant),
    # The note this one replaces, and (on the replaced one) the note that replaced it. Kept
    # SET NULL if the other is deleted: the status still says it was superseded.
    Column("supersedes", Id, ForeignKey("notes.id", ondelete="SET NULL")),
    Column("superseded_by", Id, ForeignKey("notes.id", ondelete="SET NULL")),
    # A calendar date in the configured zone: from the day after, the note is expired.
    Column("expires_on", Date),
    # `person`, `agent:<session id>` or `hook`.
    Column("origin", ScrubbedText(220), nullable=False),
    Column("session_id", Id, ForeignKey("sessions.id")),
    # Where a handoff was written: the brief says what changed in git since.
    Column("git_root", ScrubbedText()),
    Column("branch", ScrubbedText(255)),
    Column("head", ScrubbedText(64)),
    # Secrets and private spans the scrubber took out of the text before it was stored.
    Column("redactions", Integer, nullable=False, server_default="0"),
    Column("created_at", Instant, nullable=False),
    Column("updated_at", Instant, nullable=False),
    CheckConstraint(_in("kind", NoteKind), name="kind"),
    CheckConstraint(_in("status", NoteStatus), name="status"),
    CheckConstraint("length(text) BETWEEN 1 AND 8000", name="text_length"),
    CheckConstraint("origin IN ('person', 'hook') OR origin LIKE 'agent:%'", name="origin"),
    # A handoff is a session's own words: it always names its session.
    CheckConstraint("kind <> 'handoff' OR session_id IS NOT NULL", name="handoff_has_session"),
    CheckConstraint("supersedes IS NULL OR supersedes <> id", name="not_itself"),
    CheckConstraint(
        "status IN ('wrong', 'expired') OR status_reason IS NULL", name="reason_when_not_true"
    ),
    CheckConstraint("redactions >= 0", name="redactions"),
    # One handoff per session: writing it again replaces it.
    Index(
        "uq_notes_handoff_session",
        "session_id",
        unique=True,
        sqlite_where=text("kind = 'handoff'"),
        postgresql_where=text("kind = 'handoff'"),
    ),
    # A note is replaced once: a second supersede of it is refused by the store too.
    Index(
        "uq_notes_supersedes",
        "supersedes",
        unique=True,
        sqlite_where=text("supersedes IS NOT NULL"),
        postgresql_where=text("supersedes IS NOT NULL"),
    ),
    # The brief's latest handoff of a project (memory/brief.py), newest first.
    Index(
        "ix_notes_handoffs",
        "side",
        "project",
        "id",
        sqlite_where=text("kind = 'handoff'"),
        postgresql_where=text("kind = 'handoff'"),
    ),
    # The brief's pinned notes of a project and of the side.
    Index(
        "ix_notes_pinned",
        "side",
        "project",
        "id",
        sqlite_where=text(f"pinned AND {_NOTE_ACTIVE}"),
        postgresql_where=text(f"pinned AND {_NOTE_ACTIVE}"),
    ),
    # The jobs tick's expiry step: active notes by the date they expire.
    Index(
        "ix_notes_expiry",
        "expires_on",
        sqlite_where=text(f"{_NOTE_ACTIVE} AND expires_on IS NOT NULL"),
        postgresql_where=text(f"{_NOTE_ACTIVE} AND expires_on IS NOT NULL"),
    ),
    # `note list` by side and project, newest first; the session page's notes.
    Index("ix_notes_side_project", "side", "project", "id"),
    Index("ix_notes_session_id", "session_id"),
    # Ids are never reused after a delete (SQLite would reuse the highest): the events of a
    # deleted note must never read as another note's history.
    sqlite_autoincrement=True,
)

# Made (0004) for recall's first rule for tasks, a task's side from its project's sessions;
# since 0007 a task carries its own side and recall reads that. No reader is left: a later
# migration may drop it.
Index("ix_sessions_project_side", sessions.c.project, sessions.c.side)


# --- device tokens --------------------------------------------------------------------------

tokens = Table(
    "tokens",
    metadata,
    # A device's bearer token for the API (system/tokens.py). The token itself is shown
    # once, when made, and never stored: `hash` is its SHA-256.
    Column("id", Id, primary_key=True),
    Column("name", ScrubbedText(64), nullable=False),
    Column("scope", String(8), nullable=False),
    Column("hash", String(64), nullable=False),
    Column("created_at", Instant, nullable=False),
    # Written at most once a minute per token, not at every request.
    Column("last_used_at", Instant),
    # NULL: never expires.
    Column("expires_at", Instant),
    # Revoked tokens stay listed; their name may be given to a new token.
    Column("revoked_at", Instant),
    # The one side it sees and writes (revision 0007); NULL: every side.
    Column("side", ScrubbedText(64)),
    CheckConstraint(_in("scope", TokenScope), name="scope"),
    CheckConstraint("length(name) BETWEEN 1 AND 64", name="name_length"),
    # Every API request with a device token looks its hash up here.
    UniqueConstraint("hash"),
    # One live token per name: `token revoke NAME` and the actor `api:<name>` mean one token.
    Index(
        "uq_tokens_name_live",
        "name",
        unique=True,
        sqlite_where=text("revoked_at IS NULL"),
        postgresql_where=text("revoked_at IS NULL"),
    ),
)


# --- the store's identity -------------------------------------------------------------------

store_identity = Table(
    "store_identity",
    metadata,
    # One row: a random id of this database (system/store_id.py), sent as
    # `X-Ondeck-Store` so a hook or client knows the server it reached serves the database its
    # events were captured for. Random, not derived from the URL (which may hold a password).
    # It travels with the data: a restored backup says the id of the database it was taken
    # from, and a copied file is the same store.
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("store_id", String(32), nullable=False),
    Column("created_at", Instant, nullable=False),
    CheckConstraint("id = 1", name="one_row"),
    CheckConstraint("length(store_id) BETWEEN 16 AND 32", name="store_id_length"),
)


# --- dashboard sessions ---------------------------------------------------------------------

dashboard_sessions = Table(
    "dashboard_sessions",
    metadata,
    # One login to the dashboard (system/dashboard_logins.py): the signed cookie carries
    # a random id, `hash` is its SHA-256. Logging out deletes the row, so a copy of the cookie
    # is refused from then on.
    Column("id", Id, primary_key=True),
    Column("hash", String(64), nullable=False),
    Column("created_at", Instant, nullable=False),
    Column("expires_at", Instant, nullable=False),
    CheckConstraint("expires_at > created_at", name="ends_after_start"),
    # Every dashboard request with a session cookie looks its hash up here.
    UniqueConstraint("hash"),
)
