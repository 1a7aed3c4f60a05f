"""The brief: what a new session of a project should know that is not a task, added to the
session context after the warnings and today's work (services/context.py calls
`build_brief`; services/brief_render.py writes it).

- **Handoff**: the latest handoff of this project (its side), with its age, the branch and
  HEAD it was written at and what changed in git since (read in the session's directory);
  if a later session of the project ended without one, the brief says so.
- **Pinned**: the pinned notes of the project, and the side-wide ones.
- **Recent sessions**: the last three of the project: when, how long, how it ended, tasks
  touched, commits.

Nothing here is paraphrased: texts are the notes' own. Each item carries why it was chosen.
Only what is true today is shown (never a wrong, superseded or expired note). After a
`compact` or `resume` start only the handoff is added (the session already saw the rest).
An unclassified session is shown nothing of memory, and says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, exists, func, select

from ondeck.core.memory import Note, NoteKind, Scope
from ondeck.db.tables import events, notes, sessions
from ondeck.services.notes import note_from_row, true_today

PINNED_MAX = 20
RECENT = 3
TASKS_SHOWN = 5
TASK_KINDS = ("task.claimed", "task.renewed", "task.completed", "task.released", "task.reaped")
ONLY_HANDOFF = frozenset({"compact", "resume"})


@dataclass(frozen=True, kw_only=True, slots=True)
class BriefRequest:
    """Who asks: the session's side and project as classified, how it started, where."""

    sides_on: bool
    side: str | None = None
    project: str | None = None
    unclassified: bool = False
    source: str | None = None  # startup, resume, clear, compact
    session: str | None = None  # this session's own id (its agent's)
    cwd: str | None = None  # where git is read for the handoff's drift


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionLine:
    id: int
    external_id: str
    started_at: datetime
    last_seen_at: datetime
    ended_at: datetime | None
    status: str
    end_reason: str | None
    branch: str | None
    commits: int | None  # None: not read
    tasks: list[int] = field(default_factory=list)
    tasks_total: int = 0
    handoff: int | None = None  # its handoff's note id


@dataclass(frozen=True, kw_only=True, slots=True)
class Handoff:
    note: Note
    session: SessionLine | None
    drift: Any = None  # core.git.Drift, or None when not read
    drift_note: str | None = None  # why git was not read
    # The latest session of the project after this handoff's that ended (or was lost)
    # without leaving one: its line.
    later_without: SessionLine | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Pinned:
    note: Note
    why: str  # "project match" or "side-wide pin"


@dataclass(kw_only=True)
class Brief:
    request: BriefRequest
    generated_at: datetime
    handoff: Handoff | None = None
    # No handoff in the project: its latest session that ended, if any.
    no_handoff_since: SessionLine | None = None
    pinned: list[Pinned] = field(default_factory=list)
    pinned_total: int = 0
    recent: list[SessionLine] = field(default_factory=list)
    only_handoff: bool = False
    closed: str | None = None  # why nothing of memory is shown (unclassified, no side)
    this_session: int | None = None  # the session's number, when it is recorded


def scope_of(request: BriefRequest) -> Scope | None:
    """The notes this session may see; None: none at all."""
    if request.unclassified:
        return None
    if request.sides_on and not request.side:
        return None
    return Scope(sides_on=request.sides_on, side=request.side, project=request.project)


def _in_project(column: Any, project: str | None) -> Any:
    return column.is_(None) if project is None else column == project


def _session_where(request: BriefRequest) -> list[Any]:
    where = [_in_project(sessions.c.project, request.project), sessions.c.unclassified.is_(False)]
    if request.sides_on:
        where.append(sessions.c.side == request.side)
    if request.session:
        where.append(sessions.c.external_id != request.session)
    return where


def _note_side(request: BriefRequest) -> list[Any]:
    return [notes.c.side == request.side] if request.sides_on else []


def _session_lines(conn: Connection, rows: list[Any], *, with_tasks: bool) -> list[SessionLine]:
    if not rows:
        return []
    handoffs = dict(
        conn.execute(
            select(notes.c.session_id, notes.c.id).where(
                notes.c.kind == NoteKind.HANDOFF.value,
                notes.c.session_id.in_([r.id for r in rows]),
                notes.c.status == "active",
            )
        ).all()
    )
    lines = []
    for row in rows:
        tasks, total = _tasks_touched(conn, row) if with_tasks else ([], 0)
        commits = row.commits.get("total") if isinstance(row.commits, dict) else None
        lines.append(
            SessionLine(
                id=row.id,
                external_id=row.external_id,
                started_at=row.started_at,
                last_seen_at=row.last_seen_at,
                ended_at=row.ended_at,
                status=row.status,
                end_reason=row.end_reason,
                branch=row.branch,
                commits=commits,
                tasks=tasks,
                tasks_total=total,
                handoff=handoffs.get(row.id),
            )
        )
    return lines


_SESSION_COLUMNS = (
    sessions.c.id,
    sessions.c.external_id,
    sessions.c.started_at,
    sessions.c.last_seen_at,
    sessions.c.ended_at,
    sessions.c.status,
    sessions.c.end_reason,
    sessions.c.branch,
    sessions.c.commits,
    sessions.c.start_head,
)


def _tasks_touched(conn: Connection, row: Any) -> tuple[list[int], int]:
    """The tasks the session held (lease owner `claude:<its id>`), from the task events
    between its own first and last events: a bounded range of ix_events_kind."""
    span = conn.execute(
        select(func.min(events.c.id), func.max(events.c.id)).where(
            events.c.subject == f"session:{row.id}"
        )
    ).one()
    if span[0] is None:
        return [], 0
    owner = f"claude:{row.external_id[:190]}"
    subjects = conn.execute(
        select(events.c.subject)
        .where(
            events.c.kind.in_(TASK_KINDS),
            events.c.id.between(span[0], span[1]),
            events.c.details["owner"].as_string() == owner,
        )
        .order_by(events.c.id)
        .limit(500)
    ).scalars()
    seen: list[int] = []
    for subject in subjects:
        task_id = int(subject.removeprefix("task:"))
        if task_id not in seen:
            seen.append(task_id)
    return seen[:TASKS_SHOWN], len(seen)


def _latest_handoff(conn: Connection, request: BriefRequest, day: date) -> Note | None:
    # ix_notes_handoffs (side, project, id) where kind = 'handoff': newest first.
    row = conn.execute(
        select(notes)
        .where(
            notes.c.kind == NoteKind.HANDOFF.value,
            *_note_side(request),
            _in_project(notes.c.project, request.project),
            *true_today(day),
        )
        .order_by(notes.c.id.desc())
        .limit(1)
    ).first()
    return None if row is None else note_from_row(row)


def _pinned(conn: Connection, request: BriefRequest, day: date) -> tuple[list[Pinned], int]:
    # ix_notes_pinned: the project's pinned notes, then the side-wide ones.
    found: list[Pinned] = []
    total = 0
    groups = [(request.project, "project match")] if request.project else []
    groups.append((None, "side-wide pin" if request.sides_on else "pinned for every project"))
    for project, why in groups:
        where = (
            notes.c.pinned,
            *true_today(day),
            notes.c.kind != NoteKind.HANDOFF.value,
            *_note_side(request),
            _in_project(notes.c.project, project),
        )
        rows = conn.execute(
            select(notes).where(*where).order_by(notes.c.id.desc()).limit(PINNED_MAX)
        ).all()
        count = len(rows)
        if count == PINNED_MAX:
            count = int(
                conn.execute(select(func.count()).select_from(notes).where(*where)).scalar_one()
            )
        total += count
        found += [Pinned(note=note_from_row(r), why=why) for r in rows]
    return found[:PINNED_MAX], total


def _drift(handoff: Note, cwd: str | None) -> tuple[Any, str | None]:
    if not handoff.head:
        return None, "no HEAD was recorded with it"
    if not cwd:
        return None, "git not read: no working directory given"
    from ondeck.core.git import Deadline, drift

    return drift(cwd, handoff.head, Deadline()), None


def build_brief(conn: Connection, now: datetime, request: BriefRequest, day: date) -> Brief:
    brief = Brief(request=request, generated_at=now)
    brief.only_handoff = (request.source or "") in ONLY_HANDOFF
    if request.session:
        brief.this_session = conn.execute(
            select(sessions.c.id).where(sessions.c.external_id == request.session)
        ).scalar()
    if scope_of(request) is None:
        brief.closed = (
            "this session is unclassified: ondeck shows it no notes, handoffs or sessions "
            "until a person classifies it (`ondeck session move`)"
            if request.unclassified
            else "no side is known for this session: ondeck shows it no notes, handoffs or sessions"
        )
        return brief
    where = _session_where(request)
    handoff = _latest_handoff(conn, request, day)
    if handoff is not None:
        own = conn.execute(
            select(*_SESSION_COLUMNS, sessions.c.project).where(sessions.c.id == handoff.session_id)
        ).first()
        later = conn.execute(
            select(*_SESSION_COLUMNS)
            .where(
                *where,
                sessions.c.id > (handoff.session_id or 0),
                sessions.c.status != "open",
                # uq_notes_handoff_session answers per session.
                ~exists().where(
                    notes.c.session_id == sessions.c.id,
                    notes.c.kind == NoteKind.HANDOFF.value,
                    notes.c.status == "active",
                ),
            )
            .order_by(sessions.c.id.desc())
            .limit(1)
        ).first()
        drift, why_not = _drift(handoff, request.cwd)
        brief.handoff = Handoff(
            note=handoff,
            session=_session_lines(conn, [own], with_tasks=False)[0] if own else None,
            drift=drift,
            drift_note=why_not,
            later_without=(_session_lines(conn, [later], with_tasks=False)[0] if later else None),
        )
    else:
        last = conn.execute(
            select(*_SESSION_COLUMNS)
            .where(*where, sessions.c.status != "open")
            .order_by(sessions.c.id.desc())
            .limit(1)
        ).first()
        if last is not None:
            brief.no_handoff_since = _session_lines(conn, [last], with_tasks=False)[0]
    if brief.only_handoff:
        return brief
    brief.pinned, brief.pinned_total = _pinned(conn, request, day)
    # ix_sessions_project (project, id): the project's sessions, newest first.
    recent = conn.execute(
        select(*_SESSION_COLUMNS).where(*where).order_by(sessions.c.id.desc()).limit(RECENT)
    ).all()
    brief.recent = _session_lines(conn, list(recent), with_tasks=True)
    return brief
