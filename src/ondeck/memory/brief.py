"""The brief: what a new session of a project should know that is not a task, added to the
session context after the warnings and today's work (context/build.py calls
`build_brief`; memory/brief_render.py writes it).

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
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ondeck.core.memory import TRUE_TODAY, Note, Scope
from ondeck.core.sides import SideView
from ondeck.db.plain import Columns, Db, as_db, date_in, expand, instant_in
from ondeck.db.predicates import SESSION_SHOWN_OPEN, SESSION_STATUS, lost_before
from ondeck.sessions.capture.events import AGENT
from ondeck.sessions.records_tasks import tasks_held

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy import Connection

    from ondeck.host.git import Repo

PINNED_MAX = 20
RECENT = 3
TASKS_SHOWN = 5
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
    agent: str = AGENT  # whose id it is: claude-code, codex, gemini-cli
    cwd: str | None = None  # where git is read for the handoff's drift
    # cwd's repository (host.git.Repo) as this session's record read it a moment ago, so
    # that the drift does not read it again; None: read it.
    repo: Repo | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionLine:
    id: int
    external_id: str
    agent: str
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
    drift: Any = None  # host.git.Drift, or None when not read
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
    view = SideView(sides_on=request.sides_on, side=request.side)
    return Scope(view=view, project=request.project)


# --- statements: plain SQL (db/plain.py), one text per shape, values bound -------------------
# The column lists and their types are typed out (no SQLAlchemy on the hook's path):
# tests/unit/test_plain_columns.py holds them to db/tables.py.

NOTES = Columns(
    instants=("status_at", "created_at", "updated_at"), dates=("expires_on",), bools=("pinned",)
)
SESSIONS = Columns(instants=("started_at", "last_seen_at", "ended_at"), jsons=("commits",))
_NOTE_COLUMNS = (
    "notes.id, notes.side, notes.project, notes.kind, notes.text, notes.pinned, notes.status,"
    " notes.status_reason, notes.status_at, notes.supersedes, notes.superseded_by,"
    " notes.expires_on, notes.origin, notes.session_id, notes.git_root, notes.branch,"
    " notes.head, notes.redactions, notes.created_at, notes.updated_at"
)
_SESSION_COLUMNS = (
    "sessions.id, sessions.external_id, sessions.agent, sessions.started_at,"
    " sessions.last_seen_at,"
    f" sessions.ended_at, {SESSION_STATUS} AS status, sessions.end_reason, sessions.branch,"
    " sessions.commits, sessions.start_head"
)


def _in_project(column: str, project_null: bool) -> str:
    return f"{column} IS NULL" if project_null else f"{column} = :project"


@lru_cache(maxsize=64)
def _sessions_sql(sides_on: bool, project_null: bool, mine: bool, what: str, limit: int) -> str:
    """The project's sessions (not this one), newest first: `recent` (the last few),
    `closed` (the last that ended or was lost), `later` (the last that ended after the
    handoff's session without an active handoff)."""
    where = [_in_project("sessions.project", project_null), "NOT sessions.unclassified"]
    # Sessions are newest first by id; an imported one's id says when it was imported, not
    # when it ran (months ago, before ondeck): it is no recent or later session.
    where.append("NOT sessions.imported")
    if sides_on:
        where.append("sessions.side = :side")
    if mine:
        where.append("sessions.external_id != :session")
    if what in ("closed", "later"):
        where.append(f"NOT {SESSION_SHOWN_OPEN}")  # ended, or lost (recorded or presumed)
    if what == "later":
        where += [
            "sessions.id > :after",
            # uq_notes_handoff_session answers per session.
            "NOT EXISTS (SELECT 1 FROM notes WHERE notes.session_id = sessions.id"
            " AND notes.kind = 'handoff' AND notes.status = 'active')",
        ]
    # ix_sessions_project (project, id): the project's sessions, newest first.
    return (
        f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {' AND '.join(where)}"
        f" ORDER BY sessions.id DESC LIMIT {int(limit)}"
    )


@lru_cache(maxsize=16)
def _handoff_sql(sides_on: bool, project_null: bool) -> str:
    # ix_notes_handoffs (side, project, id) where kind = 'handoff': newest first.
    where = ["notes.kind = 'handoff'", _in_project("notes.project", project_null), TRUE_TODAY]
    if sides_on:
        where.append("notes.side = :side")
    return (
        f"SELECT {_NOTE_COLUMNS} FROM notes WHERE {' AND '.join(where)}"
        " ORDER BY notes.id DESC LIMIT 1"
    )


@lru_cache(maxsize=16)
def _pinned_sql(sides_on: bool, project_null: bool) -> str:
    """The pinned notes true today of the project (first) and the side-wide ones, each row
    with how many there are in all (`total`: the page is sorted from all of them anyway, so
    counting them costs no second statement)."""
    where = [
        "notes.pinned",
        TRUE_TODAY,
        "notes.kind != 'handoff'",
        "notes.project IS NULL"
        if project_null
        else "(notes.project = :project OR notes.project IS NULL)",
    ]
    if sides_on:
        where.append("notes.side = :side")
    # ix_notes_pinned (side, project, id) where pinned and active.
    return (
        f"SELECT {_NOTE_COLUMNS}, count(*) OVER () AS total FROM notes"
        f" WHERE {' AND '.join(where)}"
        f" ORDER BY notes.project IS NULL, notes.id DESC LIMIT {PINNED_MAX}"
    )


_ONE_SESSION = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE sessions.id = :id"
# By uq_sessions_agent_external_id: the agent first (without it, a scan of the sessions).
_THIS_SESSION = (
    "SELECT sessions.id FROM sessions"
    " WHERE sessions.agent = :agent AND sessions.external_id = :session"
)


def _session_lines(
    db: Db,
    rows: list[dict[str, Any]],
    *,
    tasks_of: set[int] = frozenset(),  # type: ignore[assignment]
) -> dict[int, SessionLine]:
    """Lines for session rows: their handoffs in one statement, the tasks of `tasks_of` in
    two."""
    if not rows:
        return {}
    ids, values = expand("id", sorted({r["id"] for r in rows}))
    handoffs = {
        r["session_id"]: r["id"]
        for r in NOTES.read(
            db,
            "SELECT notes.session_id, notes.id FROM notes WHERE notes.kind = 'handoff'"
            f" AND notes.session_id IN {ids} AND notes.status = 'active'",
            values,
        )
    }
    touched = tasks_held(db, [r for r in rows if r["id"] in tasks_of], TASKS_SHOWN)
    lines = {}
    for row in rows:
        shown, total = touched.get(row["id"], ([], 0))
        commits = row["commits"].get("total") if isinstance(row["commits"], dict) else None
        lines[row["id"]] = SessionLine(
            id=row["id"],
            external_id=row["external_id"],
            agent=row["agent"],
            started_at=row["started_at"],
            last_seen_at=row["last_seen_at"],
            ended_at=row["ended_at"],
            status=row["status"],
            end_reason=row["end_reason"],
            branch=row["branch"],
            commits=commits,
            tasks=shown,
            tasks_total=total,
            handoff=handoffs.get(row["id"]),
        )
    return lines


def _drift(handoff: Note, request: BriefRequest) -> Callable[[], tuple[Any, str | None]]:
    """Start reading what changed in git since the handoff, on a thread of its own: `git`
    runs while the brief's statements do. The function returned waits for it (at most the
    git reads' budget) and gives (the drift, why git was not read)."""
    head, cwd = handoff.head, request.cwd
    if not head:
        return lambda: (None, "no HEAD was recorded with it")
    if not cwd:
        return lambda: (None, "git not read: no working directory given")
    import threading

    from ondeck.host.git import drift
    from ondeck.host.git_run import Deadline

    deadline = Deadline()
    found: list[Any] = []
    failed: list[BaseException] = []

    def read() -> None:
        try:
            found.append(drift(cwd, head, deadline, repo=request.repo))
        except BaseException as exc:  # raised where the brief waits for it, as before
            failed.append(exc)

    thread = threading.Thread(target=read, name="ondeck-brief-git", daemon=True)
    thread.start()

    def wait() -> tuple[Any, str | None]:
        thread.join()
        if failed:
            raise failed[0]
        return found[0], None

    return wait


@dataclass(frozen=True, kw_only=True, slots=True)
class BriefStart:
    """The brief's first step (`begin_brief`): the project's latest handoff, and what changed
    in git since it, being read."""

    handoff: Note | None = None
    drifted: Callable[[], tuple[Any, str | None]] | None = None


def begin_brief(conn: Db | Connection, request: BriefRequest, day: date) -> BriefStart:
    """Read the handoff and start reading its drift in git: called before the rest of the
    session context is read (context/build.py), so that `git` runs meanwhile."""
    if scope_of(request) is None:
        return BriefStart()
    db = as_db(conn)
    values = {"side": request.side, "project": request.project, "day": date_in(db, day)}
    rows = NOTES.read(db, _handoff_sql(request.sides_on, request.project is None), values)
    if not rows:
        return BriefStart()
    handoff = Note.from_values(rows[0])
    return BriefStart(handoff=handoff, drifted=_drift(handoff, request))


def build_brief(
    conn: Db | Connection,
    now: datetime,
    request: BriefRequest,
    day: date,
    started: BriefStart | None = None,
    *,
    session_grace: timedelta = timedelta(hours=12),
) -> Brief:
    """The brief of `request` (`started`: its first step, taken earlier in the same
    transaction; else taken here). A session silent past `session_grace` is shown lost."""
    db = as_db(conn)
    if started is None:
        started = begin_brief(db, request, day)
    brief = Brief(request=request, generated_at=now)
    brief.only_handoff = (request.source or "") in ONLY_HANDOFF
    if request.session:
        found = SESSIONS.read(
            db, _THIS_SESSION, {"agent": request.agent, "session": request.session}
        )
        brief.this_session = found[0]["id"] if found else None
    if scope_of(request) is None:
        brief.closed = (
            "this session is unclassified: ondeck shows it no notes, handoffs or sessions "
            "until a person classifies it (`ondeck session move`)"
            if request.unclassified
            else "no side is known for this session: ondeck shows it no notes, handoffs or sessions"
        )
        return brief
    shape = (request.sides_on, request.project is None)
    values: dict[str, Any] = {
        "side": request.side,
        "project": request.project,
        "day": date_in(db, day),
        "lost_before": instant_in(db, lost_before(now, session_grace)),
    }
    mine = request.session is not None
    if mine:
        values["session"] = request.session

    def project_sessions(what: str, limit: int, **more: Any) -> list[dict[str, Any]]:
        return SESSIONS.read(db, _sessions_sql(*shape, mine, what, limit), {**values, **more})

    handoff = started.handoff
    own = later = last = None
    if handoff is not None:
        if handoff.session_id is not None:
            found = SESSIONS.read(
                db,
                _ONE_SESSION,
                {"id": handoff.session_id, "lost_before": values["lost_before"]},
            )
            own = found[0] if found else None
        found = project_sessions("later", 1, after=handoff.session_id or 0)
        later = found[0] if found else None
    else:
        found = project_sessions("closed", 1)
        last = found[0] if found else None
    recent: list[dict[str, Any]] = []
    if not brief.only_handoff:
        rows = NOTES.read(db, _pinned_sql(*shape), values)
        brief.pinned_total = int(rows[0]["total"]) if rows else 0
        side_wide = "side-wide pin" if request.sides_on else "pinned for every project"
        brief.pinned = [
            Pinned(note=Note.from_values(r), why="project match" if r["project"] else side_wide)
            for r in rows
        ]
        recent = project_sessions("recent", RECENT)
    lines = _session_lines(
        db,
        [r for r in (own, later, last, *recent) if r is not None],
        tasks_of={r["id"] for r in recent},
    )
    if handoff is not None and started.drifted is not None:
        drift, why_not = started.drifted()
        brief.handoff = Handoff(
            note=handoff,
            session=lines.get(own["id"]) if own is not None else None,
            drift=drift,
            drift_note=why_not,
            later_without=lines.get(later["id"]) if later is not None else None,
        )
    elif last is not None:
        brief.no_handoff_since = lines[last["id"]]
    brief.recent = [lines[r["id"]] for r in recent]
    return brief
