"""Session records as the store shows them: the record, its detail, and the queries of the
Sessions page, the API and the CLI. Beside it: `records_move` (moving one by hand),
`records_tasks` (the tasks one touched), `records_tick` (the jobs tick: the spool's drain
and marking the silent ones lost), `rows` (applying hook records, plain SQL that
also runs on the hook's bare driver), `alerts` (what the context warns about).

Statuses (core/session_terms.SessionStatus): `open`, `ended`, `lost`. Lost is decided when a
session is read (db/predicates.SESSION_STATUS, from `lost_before`: now minus the grace), so
a store without a jobs loop shows it too; the tick only records it. Unclassified is not a
status but a state beside it: the inbox.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime, tzinfo
from typing import Any

from sqlalchemy import (
    Connection,
    TextClause,
    bindparam,
    func,
    literal_column,
    select,
    text,
)

from ondeck.core import logs
from ondeck.core.clock import aware, iso
from ondeck.core.errors import InvalidInput, NotFound
from ondeck.core.models import Event
from ondeck.core.session_terms import SessionStatus, session_owner
from ondeck.core.validation import BIGINT_MAX, check_project
from ondeck.db import predicates
from ondeck.db.predicates import SESSIONS_INBOX
from ondeck.db.tables import events, session_compactions, sessions
from ondeck.sessions.capture.agents import AGENTS
from ondeck.sessions.records_tasks import TaskActedOn, tasks_acted_on

log = logs.logger("ondeck.sessions")

STATUSES = tuple(SessionStatus)
FILTERS = (*STATUSES, "unclassified", "imported")
MAX_LIMIT = 500
PREVIEW = 200
HISTORY_MAX = 500


@dataclass(frozen=True, kw_only=True, slots=True)
class Session:
    id: int
    agent: str
    external_id: str
    status: str
    started_at: datetime
    last_seen_at: datetime
    ended_at: datetime | None
    end_reason: str | None
    start_source: str | None
    resumes: int
    cwd: str | None
    git_root: str | None
    branch: str | None
    start_head: str | None
    end_head: str | None
    capture: bool
    side: str | None
    project: str | None
    side_rule: str
    project_rule: str
    unclassified: bool
    classification: dict[str, Any]
    disagreements: list[dict[str, Any]]
    last_word: str | None
    last_word_at: datetime | None
    compactions: int
    commits: dict[str, Any] | None
    files: dict[str, Any] | None
    git_note: str | None
    redactions: int
    redaction_kinds: dict[str, int]
    created_at: datetime
    updated_at: datetime
    # Made by `session import` from a transcript (sessions/session_import.py), and from which.
    imported: bool
    imported_from: str | None
    agent_version: str | None
    transcript_path: str | None
    # Shown lost (silent past the grace) while its row still says open: no jobs tick has
    # recorded it yet.
    presumed_lost: bool = False

    @property
    def owner(self) -> str:
        """The lease owner this session claims tasks as."""
        return session_owner(self.external_id)

    def badges(self) -> list[str]:
        found = [self.status]
        if self.unclassified:
            found.append("unclassified")
        if not self.capture:
            found.append("capture off")
        if self.imported:
            found.append("imported")
        return found

    def summary_json(self, zone: tzinfo) -> dict[str, Any]:
        """The session as lists show it (API, `--json`): no long texts."""
        word = self.last_word
        return {
            "id": self.id,
            "agent": self.agent,
            "external_id": self.external_id,
            "status": self.status,
            "unclassified": self.unclassified,
            "capture": self.capture,
            "badges": self.badges(),
            "side": self.side,
            "project": self.project,
            "side_rule": self.side_rule,
            "project_rule": self.project_rule,
            "started_at": iso(self.started_at, zone),
            "last_seen_at": iso(self.last_seen_at, zone),
            "ended_at": iso(self.ended_at, zone),
            "end_reason": self.end_reason,
            "start_source": self.start_source,
            "cwd": self.cwd,
            "git_root": self.git_root,
            "branch": self.branch,
            "compactions": self.compactions,
            "disagreements": len(self.disagreements),
            "redactions": self.redactions,
            "last_word_preview": None if word is None else word[:PREVIEW],
            "presumed_lost": self.presumed_lost,
            "imported": self.imported,
        }

    def to_json(self, zone: tzinfo) -> dict[str, Any]:
        """Everything the record holds."""
        return {
            **self.summary_json(zone),
            "resumes": self.resumes,
            "start_head": self.start_head,
            "end_head": self.end_head,
            "classification": self.classification,
            "disagreements": self.disagreements,
            "last_word": self.last_word,
            "last_word_at": iso(self.last_word_at, zone),
            "commits": self.commits,
            "files": self.files,
            "git_note": self.git_note,
            "redaction_kinds": self.redaction_kinds,
            "imported_from": self.imported_from,
            "agent_version": self.agent_version,
            "transcript_path": self.transcript_path,
            "created_at": iso(self.created_at, zone),
            "updated_at": iso(self.updated_at, zone),
        }


_NAMES = tuple(f.name for f in fields(Session) if f.name != "presumed_lost")
SHOWN_STATUS = "shown_status"


def session_from_row(row: Any) -> Session:
    """A session of a row; with the status it is shown with when the row has it (`reading`)."""
    values = row._mapping if hasattr(row, "_mapping") else row
    found = {name: values[name] for name in _NAMES}
    shown = values.get(SHOWN_STATUS) if hasattr(values, "get") else None
    if shown is not None and shown != found["status"]:
        found["presumed_lost"] = True
        found["status"] = shown
    return Session(**found)


def lost_before(now: datetime, settings: Any) -> datetime:
    """Before this instant, an open session's silence makes it lost (now minus
    ONDECK_SESSION_GRACE): what every reader passes."""
    return predicates.lost_before(aware(now), settings.session_grace)


def shown(sql: str, cutoff: datetime) -> TextClause:
    """A predicate of db/predicates.py on sessions, with its :lost_before bound as the
    column stores instants."""
    return text(sql).bindparams(
        bindparam("lost_before", aware(cutoff), type_=sessions.c.last_seen_at.type)
    )


def reading(cutoff: datetime | None) -> Any:
    """SELECT of sessions with the status each is shown with (none: the row's own)."""
    if cutoff is None:
        return select(sessions)
    column = shown(f"{predicates.SESSION_STATUS} AS {SHOWN_STATUS}", cutoff)
    return select(sessions, column)


@dataclass(frozen=True, kw_only=True, slots=True)
class Compaction:
    id: int
    at: datetime
    trigger: str | None
    summary: str | None
    chars: int
    redactions: int

    def to_json(self, zone: tzinfo) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": iso(self.at, zone),
            "trigger": self.trigger,
            "summary": self.summary,
            "chars": self.chars,
            "redactions": self.redactions,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionDetail:
    session: Session
    compactions: list[Compaction]
    tasks: list[TaskActedOn]
    history: list[Event]  # the session's own events, oldest first

    def to_json(self, zone: tzinfo) -> dict[str, Any]:
        return {
            **self.session.to_json(zone),
            "compaction_summaries": [c.to_json(zone) for c in self.compactions],
            "tasks": [t.to_json(zone) for t in self.tasks],
            "history": [e.to_json(zone) for e in self.history],
        }


# --- reading ------------------------------------------------------------------------------


def _inbox() -> Any:
    # Written as the partial index's own predicate (ix_sessions_inbox): db/predicates.py.
    return text(SESSIONS_INBOX)


def status_is(status: str) -> Any:
    return sessions.c.status == literal_column(f"'{status}'")


def list_sessions(
    conn: Connection,
    *,
    status: str | None = None,
    side: str | None = None,
    project: str | None = None,
    agent: str | None = None,
    before_id: int | None = None,
    limit: int = 50,
    lost_before: datetime | None = None,
) -> list[Session]:
    """Newest first (by id); `before_id` pages back. `status` is open, ended, lost,
    unclassified (the inbox) or imported (made by `session import`); open and lost as
    shown (silent since before `lost_before`: lost; every entry point gives it, None reads
    the rows' own statuses)."""
    query = reading(lost_before)
    query = query.order_by(sessions.c.id.desc()).limit(max(1, min(limit, MAX_LIMIT)))
    if status is not None:
        if status not in FILTERS:
            raise InvalidInput(f"status {status[:20]!r} is not one of {', '.join(FILTERS)}")
        if status == "unclassified":
            query = query.where(_inbox())
        elif status == "imported":
            query = query.where(sessions.c.imported.is_(True))
        elif status == SessionStatus.OPEN and lost_before is not None:
            query = query.where(shown(predicates.SESSION_SHOWN_OPEN, lost_before))
        elif status == SessionStatus.LOST and lost_before is not None:
            query = query.where(shown(predicates.SESSION_SHOWN_LOST, lost_before))
        else:
            query = query.where(status_is(status))
    if side is not None:
        query = query.where(sessions.c.side == check_side_name(side))
    if project is not None:
        query = query.where(sessions.c.project == check_project(project))
    if agent is not None:
        if agent not in AGENTS:
            raise InvalidInput(f"agent {agent[:40]!r} is not one of {', '.join(AGENTS)}")
        query = query.where(sessions.c.agent == agent)
    if before_id is not None:
        query = query.where(sessions.c.id < before_id)
    return [session_from_row(row) for row in conn.execute(query)]


def count_unclassified(conn: Connection) -> int:
    return int(
        conn.execute(select(func.count()).select_from(sessions).where(_inbox())).scalar_one()
    )


def session_projects(conn: Connection, limit: int = 200) -> list[str]:
    """Projects that have session records, for filters (ix_sessions_project, leading column)."""
    rows = conn.execute(
        select(sessions.c.project)
        .where(sessions.c.project.is_not(None))
        .group_by(sessions.c.project)
        .order_by(sessions.c.project)
        .limit(limit)
    )
    return [r.project for r in rows]


def check_side_name(value: str) -> str:
    from ondeck.host.quick_settings_rules import is_name

    if not is_name(value):
        raise InvalidInput(
            f"side {str(value)[:80]!r} is not valid: use 1 to 64 letters, digits, '.', '_', '-'"
        )
    return value


def find_session(
    conn: Connection, ref: str | int, *, lost_before: datetime | None = None
) -> Session:
    """A session by its number, its agent's id, or (8 characters at least) the start of it;
    with the status it is shown with when `lost_before` is given."""
    query = reading(lost_before)
    text_ref = str(ref).strip()
    if not text_ref:
        raise InvalidInput("give a session: its number or its session id")
    if text_ref.isascii() and text_ref.isdigit():
        number = int(text_ref)
        if not 1 <= number <= BIGINT_MAX:
            raise InvalidInput(f"session {text_ref[:30]} is not a valid number")
        row = conn.execute(query.where(sessions.c.id == number)).first()
        if row is None:
            raise NotFound(f"no session {number}")
        return session_from_row(row)
    if len(text_ref) > 200 or not text_ref.isprintable():
        raise InvalidInput("a session id is 1 to 200 printable characters")
    row = conn.execute(query.where(sessions.c.external_id == text_ref)).first()
    if row is not None:
        return session_from_row(row)
    if len(text_ref) >= 8:
        found = conn.execute(
            query.where(sessions.c.external_id.startswith(text_ref, autoescape=True))
            .order_by(sessions.c.id)
            .limit(2)
        ).all()
        if len(found) == 1:
            return session_from_row(found[0])
        if len(found) > 1:
            raise InvalidInput(f"session id {text_ref!r} is the start of several: give more")
    raise NotFound(f"no session {text_ref[:80]!r}")


def session_detail(
    conn: Connection, ref: str | int, *, lost_before: datetime | None = None
) -> SessionDetail:
    session = find_session(conn, ref, lost_before=lost_before)
    compactions = [
        Compaction(
            **{
                k: row._mapping[k]
                for k in ("id", "at", "trigger", "summary", "chars", "redactions")
            }
        )
        for row in conn.execute(
            select(session_compactions)
            .where(session_compactions.c.session_id == session.id)
            .order_by(session_compactions.c.id)
        )
    ]
    # Oldest first, without the one event every turn writes (a long session has thousands):
    # ix_events_subject, from the session's first event on.
    rows = conn.execute(
        select(events)
        .where(
            events.c.subject == f"session:{session.id}",
            events.c.kind != "session.last_word",
        )
        .order_by(events.c.id)
        .limit(HISTORY_MAX)
    )
    history = [Event(**row._mapping) for row in rows]
    return SessionDetail(
        session=session,
        compactions=compactions,
        tasks=tasks_acted_on(conn, session.external_id, min((e.id for e in history), default=None)),
        history=history,
    )
