"""Session records: reading them, moving them between sides, marking the silent ones lost,
the jobs tick's step (what the context warns about them: `session_warnings`). Hook records
are applied by `session_store` (plain SQL that also runs on the bare driver, for the hooks),
wrapped for SQLAlchemy callers by `session_hooks`.

Statuses: `open` (heard from within ONDECK_SESSION_GRACE), `ended` (SessionEnd came),
`lost` (silent past the grace: the record never claims a session still runs when nothing
was heard from it). Lost is decided when a session is read (db/predicates.SESSION_STATUS,
from `lost_before`: now minus the grace), so a store without a jobs loop shows it too; the
tick only records it (`mark_lost`). Unclassified is not a status but a state beside it: the
inbox.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Connection,
    Engine,
    TextClause,
    bindparam,
    func,
    literal_column,
    or_,
    select,
    text,
    update,
)

from ondeck.core import logs
from ondeck.core.clock import aware, iso
from ondeck.core.durations import format_duration
from ondeck.core.errors import Conflict, InvalidInput, NotFound
from ondeck.core.models import Event
from ondeck.core.validation import BIGINT_MAX, check_project
from ondeck.db import predicates
from ondeck.db.engine import writing
from ondeck.db.predicates import SESSIONS_INBOX
from ondeck.db.tables import events, session_compactions, sessions, tasks
from ondeck.sessions import rows as session_store
from ondeck.sessions.hook_events import parse_record
from ondeck.system import events as event_log

if TYPE_CHECKING:
    from ondeck.host.settings import Settings

log = logs.logger("ondeck.sessions")

STATUSES = ("open", "ended", "lost")
FILTERS = (*STATUSES, "unclassified")
MAX_LIMIT = 500
TASK_KINDS = ("task.claimed", "task.renewed", "task.completed", "task.released", "task.reaped")
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
    # Shown lost (silent past the grace) while its row still says open: no jobs tick has
    # recorded it yet.
    presumed_lost: bool = False

    @property
    def owner(self) -> str:
        """The lease owner this session claims tasks as."""
        return f"{session_store.OWNER_PREFIX}{self.external_id[:190]}"

    def badges(self) -> list[str]:
        found = [self.status]
        if self.unclassified:
            found.append("unclassified")
        if not self.capture:
            found.append("capture off")
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
class TaskTouched:
    task_id: int
    title: str | None  # None: the task is gone
    status: str | None
    actions: list[tuple[str, datetime]]  # (event kind, when), in order

    def to_json(self, zone: tzinfo) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "title": self.title,
            "status": self.status,
            "actions": [{"kind": k, "at": iso(at, zone)} for k, at in self.actions],
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionDetail:
    session: Session
    compactions: list[Compaction]
    tasks: list[TaskTouched]
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


def _status_is(status: str) -> Any:
    return sessions.c.status == literal_column(f"'{status}'")


def list_sessions(
    conn: Connection,
    *,
    status: str | None = None,
    side: str | None = None,
    project: str | None = None,
    before_id: int | None = None,
    limit: int = 50,
    lost_before: datetime | None = None,
) -> list[Session]:
    """Newest first (by id); `before_id` pages back. `status` is open, ended, lost or
    unclassified (the inbox); open and lost as shown (silent since before `lost_before`:
    lost; every entry point gives it, None reads the rows' own statuses)."""
    query = reading(lost_before)
    query = query.order_by(sessions.c.id.desc()).limit(max(1, min(limit, MAX_LIMIT)))
    if status is not None:
        if status not in FILTERS:
            raise InvalidInput(f"status {status[:20]!r} is not one of {', '.join(FILTERS)}")
        if status == "unclassified":
            query = query.where(_inbox())
        elif status == "open" and lost_before is not None:
            query = query.where(shown(predicates.SESSION_SHOWN_OPEN, lost_before))
        elif status == "lost" and lost_before is not None:
            query = query.where(shown(predicates.SESSION_SHOWN_LOST, lost_before))
        else:
            query = query.where(_status_is(status))
    if side is not None:
        query = query.where(sessions.c.side == check_side_name(side))
    if project is not None:
        query = query.where(sessions.c.project == check_project(project))
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
    from ondeck.host.quick_settings import is_name

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
        tasks=tasks_touched(conn, session, history),
        history=history,
    )


def tasks_touched(
    conn: Connection, session: Session, history: Sequence[Event]
) -> list[TaskTouched]:
    """The tasks this session claimed, renewed, completed or released (held as owner
    `claude:<session id>`), read from their events since the session's first."""
    first = min((e.id for e in history), default=None)
    if first is None:
        return []
    owner = events.c.details["owner"].as_string()
    rows = conn.execute(
        select(events.c.kind, events.c.subject, events.c.at)
        .where(
            events.c.kind.in_(TASK_KINDS),
            # ix_events_kind (kind, id): a range from the session's first event on.
            events.c.id >= first,
            or_(owner == session.owner, events.c.actor == f"hook:{session.external_id[:60]}"),
        )
        .order_by(events.c.id)
        .limit(1000)
    ).all()
    by_task: dict[int, list[tuple[str, datetime]]] = {}
    for kind, subject, at in rows:
        task_id = int(subject.removeprefix("task:"))
        by_task.setdefault(task_id, []).append((kind, at))
    if not by_task:
        return []
    found = {
        row.id: row
        for row in conn.execute(
            select(tasks.c.id, tasks.c.title, tasks.c.status).where(tasks.c.id.in_(by_task))
        )
    }
    return [
        TaskTouched(
            task_id=task_id,
            title=found[task_id].title if task_id in found else None,
            status=found[task_id].status if task_id in found else None,
            actions=actions,
        )
        for task_id, actions in by_task.items()
    ]


# --- moving ---------------------------------------------------------------------------------


def move_session(
    conn: Connection,
    now: datetime,
    ref: str | int,
    *,
    side: str | None,
    project: str | None,
    sides: Mapping[str, Any],
    actor: str,
) -> Session:
    """Reclassify a session by hand: `session.moved` names from, to and who. Its former
    classification, the signals and the disagreements stay in the record."""
    if side is not None:
        side = side.strip()
    if project is not None:
        project = check_project(project.strip() or None)
    if sides:
        if not side:
            raise InvalidInput(f"give the side to move it to: one of {', '.join(sorted(sides))}")
        if side not in sides:
            raise InvalidInput(
                f"side {side[:64]!r} is not configured: use one of {', '.join(sorted(sides))}"
            )
    elif side:
        raise InvalidInput("no sides are configured (one pool): give only --project")
    elif project is None:
        raise InvalidInput("give the project to move it to")
    before = find_session(conn, ref)
    new_side = side if sides else None
    new_project = project if project is not None else before.project
    if (
        before.side == new_side
        and before.project == new_project
        and not before.unclassified
        and (project is None or before.project_rule == "moved")
        and (not sides or before.side_rule == "moved")
    ):
        raise InvalidInput(f"session {before.id} is already there: nothing to change")
    values: dict[str, Any] = {
        "side": new_side,
        "project": new_project,
        "unclassified": False,
        "updated_at": aware(now),
    }
    if sides:
        values["side_rule"] = "moved"
    if project is not None:
        values["project_rule"] = "moved"
    row = conn.execute(
        update(sessions)
        # Guarded by what was read: a hook that changed the row meanwhile is not overwritten.
        .where(sessions.c.id == before.id, sessions.c.updated_at == before.updated_at)
        .values(**values)
        .returning(*sessions.c)
    ).first()
    if row is None:
        raise Conflict(f"session {before.id} changed while this request ran; nothing was changed")
    from ondeck.memory.notes import follow_session

    # Its handoff and notes live where it does.
    follow_session(conn, now, before.id, side=new_side, project=new_project, actor=actor)
    event_log.record(
        conn,
        now,
        actor=actor,
        kind="session.moved",
        subject=f"session:{before.id}",
        details={
            "from": {
                "side": before.side,
                "project": before.project,
                "unclassified": before.unclassified,
            },
            "to": {"side": new_side, "project": new_project},
            "by": actor,
        },
    )
    return session_from_row(row)


# --- lost -----------------------------------------------------------------------------------


def mark_lost(
    conn: Connection, now: datetime, grace: timedelta, *, actor: str = "jobs"
) -> list[int]:
    """Every open session silent (no hook event) for longer than `grace` becomes `lost`."""
    cutoff = predicates.lost_before(aware(now), grace)
    # What every reader already shows (db/predicates.py); ix_sessions_open_seen: open
    # sessions by last_seen_at.
    candidates = conn.execute(
        select(sessions.c.id, sessions.c.last_seen_at)
        .where(shown(predicates.SESSION_PRESUMED_LOST, cutoff))
        .order_by(sessions.c.id)
        .with_for_update(skip_locked=True)
    ).all()
    lost: list[int] = []
    for session_id, seen in candidates:
        row = conn.execute(
            update(sessions)
            # A hook heard between the read and this write keeps the session open.
            .where(
                sessions.c.id == session_id,
                _status_is("open"),
                sessions.c.last_seen_at == seen,
            )
            .values(status="lost", updated_at=aware(now))
            .returning(sessions.c.id)
        ).first()
        if row is None:
            continue
        event_log.record(
            conn,
            now,
            actor=actor,
            kind="session.lost",
            subject=f"session:{session_id}",
            details={"last_seen_at": aware(seen).isoformat(), "grace": format_duration(grace)},
        )
        lost.append(session_id)
    return lost


# --- the jobs tick ----------------------------------------------------------------------------


def sessions_step(engine: Engine, now: datetime, settings: Settings) -> dict[str, Any]:
    """The jobs tick's sessions step: drain the spool, then mark silent sessions lost."""
    from sqlalchemy.exc import DBAPIError

    from ondeck.core.errors import Unavailable
    from ondeck.sessions import spool
    from ondeck.sessions.intake import apply_alone

    def apply(batch: list[dict[str, Any]]) -> list[str | None]:
        answers: list[str | None] = []
        for record in batch:
            try:
                result = apply_alone(
                    engine, now, record, grace=settings.session_grace, sides=settings.sides
                )
            except (Unavailable, DBAPIError) as exc:
                # The store takes nothing now: the rest waits, the step goes on.
                if answers:
                    return answers
                raise spool.Unreachable(" ".join(str(exc).split())[:300]) from exc
            answers.append(result["reason"] if result.get("outcome") == "rejected" else None)
        return answers

    drained = spool.drain(settings.spool_dir, apply, parse_record, wait_s=0.0)
    with writing(engine) as conn:
        lost = mark_lost(conn, now, settings.session_grace)
    if drained.applied or drained.rejected:
        log.info("spool: %d applied, %d rejected", drained.applied, drained.rejected)
    if lost:
        log.info("marked %d silent sessions lost: ids %s", len(lost), lost[:50])
    return {
        "drained": drained.applied,
        "rejected": drained.rejected,
        "waiting": drained.left,
        **({"why": drained.why} if drained.left and drained.why else {}),
        "lost": len(lost),
        "ids": lost[:50],
    }
