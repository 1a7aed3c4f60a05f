"""What each entry point calls for notes and handoffs: one function per operation, which the
API's route, the CLI's `local` (the same route, made here when there is no server) and the
MCP tool all call, so the service's arguments (the configured sides and zone, the actor,
the session that writes) are written once. Each takes the caller's open transaction and
gives the note as the API shows it (`Note.to_json`).

Also here: where a new note goes (`new_note_place`), and which session writes when an agent
names none (`writing_session`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, select

from ondeck.core.errors import InvalidInput, NotFound
from ondeck.core.memory import ORIGIN_PERSON, Note, NoteKind, Scope, agent_origin, check_kind
from ondeck.db.tables import sessions
from ondeck.memory import notes_changes, notes_handoffs, notes_read, notes_write

if TYPE_CHECKING:
    from ondeck.system.caller import Caller


def note_json(at: Caller, note: Note) -> dict[str, Any]:
    """The note as the API shows it: its status as true today, instants in the zone.

    Every note leaving these calls, read or just written, passes here, and one of a side
    the caller does not reach is "not found" (a write is then rolled back with it): the
    last gate behind each list's and step's own side filter."""
    at.access.check_reaches(at.settings.sides, note.side, f"note {note.id}")
    return note.to_json(at.settings.zone, at.today())


def _writer(
    conn: Connection, at: Caller, session: str | int | None, origin: str | None
) -> tuple[Any, str]:
    """The session that writes (named by number or id; one of a side the caller does not
    reach is not found), and the note's origin: the one given, else that session's agent,
    else a person."""
    from ondeck.sessions.records import find_session

    at.access.may_write()
    found = find_session(conn, session) if session is not None else None
    if found is not None:
        at.access.check_reaches(
            at.settings.sides, None if found.unclassified else found.side, f"session {session!r}"
        )
    if origin is None:
        origin = agent_origin(found.external_id) if found is not None else ORIGIN_PERSON
    return found, origin


# --- reading ----------------------------------------------------------------------------------


def list_notes(
    conn: Connection,
    at: Caller,
    scope: Scope,
    *,
    kinds: Sequence[str | NoteKind] = (),
    include_all: bool = False,
    pinned: bool | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> dict[str, Any]:
    found = notes_read.list_notes(
        conn,
        scope,
        at.today(),
        kinds=[check_kind(k, handoff_ok=True) for k in kinds],
        include_all=include_all,
        pinned=pinned,
        before_id=before_id,
        limit=limit,
    )
    return {"notes": [note_json(at, n) for n in found]}


def show_note(
    conn: Connection, at: Caller, note_id: int | str, scope: Scope, *, history: bool = False
) -> dict[str, Any]:
    """The note; with `history`, its events too, oldest first."""
    note = notes_read.get_note(conn, note_id, scope)
    shown = note_json(at, note)
    if history:
        events = notes_read.history(conn, note.id)
        shown["history"] = [e.to_json(at.settings.zone) for e in events]
    return shown


# --- writing ----------------------------------------------------------------------------------


def new_note_place(
    sides: Collection[str],
    *,
    side: str | None,
    project: str | None,
    whole_side: bool,
    writer: Any | None = None,
    here: Callable[[], Any] | None = None,
) -> tuple[str | None, str | None]:
    """The side and project a new note goes to. The side: the one named, else (sides
    configured) the directory's. The project: none for the whole side; else the one named;
    else that of the session writing it; else the directory's, if the note goes to the
    directory's side. `here()` reads the directory (its side, project, whether it is
    unclassified and why) on this machine, and only when the answer needs it."""
    found = None
    if sides and not side:
        if here is None:
            raise InvalidInput(f"give the side: one of {', '.join(sorted(sides))}")
        found = here()
        if found.unclassified or not found.side:
            raise InvalidInput(
                f"this directory belongs to no side ({found.reason}): give --side "
                f"({', '.join(sorted(sides))})"
            )
        side = found.side
    if whole_side:
        return side, None
    if project is not None:
        return side, project
    if writer is not None:
        return side, writer.project
    if found is None and here is not None:
        found = here()
    if found is not None and (not sides or side == found.side):
        return side, found.project
    return side, None


def add_note(
    conn: Connection,
    at: Caller,
    *,
    text: str,
    kind: str | NoteKind = NoteKind.NOTE,
    side: str | None,
    project: str | None,
    pinned: bool = False,
    expires_on: date | None = None,
    session: str | None = None,
    origin: str | None = None,
) -> dict[str, Any]:
    """A new note; with `session`, written as that session's (its side and project)."""
    found, origin = _writer(conn, at, session, origin)
    note = notes_write.add_note(
        conn,
        at.now(),
        text=text,
        kind=kind,
        side=at.access.own(side),
        project=project,
        sides=at.settings.sides,
        zone=at.settings.zone,
        pinned=pinned,
        expires_on=expires_on,
        origin=origin,
        session_id=found.id if found is not None else None,
        actor=at.actor,
    )
    return note_json(at, note)


def edit_note(
    conn: Connection,
    at: Caller,
    note_id: int | str,
    *,
    scope: Scope,
    text: str | None = None,
    kind: str | None = None,
    project: str | None = None,
    whole_side: bool = False,
    to_side: str | None = None,
    expires_on: date | None = None,
    clear_expiry: bool = False,
) -> dict[str, Any]:
    """Change what is given: a project, or the whole side; a date, or none."""
    new_project: Any = notes_changes.UNSET
    if whole_side:
        if project is not None:
            raise InvalidInput("give either project or whole_side")
        new_project = None
    elif project is not None:
        new_project = project
    expires: Any = notes_changes.UNSET
    if clear_expiry:
        if expires_on is not None:
            raise InvalidInput("give either expires_on or clear_expiry")
        expires = None
    elif expires_on is not None:
        expires = expires_on
    note = notes_changes.edit_note(
        conn,
        at.now(),
        note_id,
        scope=scope,
        text=text,
        kind=kind,
        project=new_project,
        side=at.access.own(to_side) if to_side is not None else notes_changes.UNSET,
        sides=at.settings.sides,
        expires_on=expires,
        zone=at.settings.zone,
        actor=at.actor,
    )
    return note_json(at, note)


def pin_note(
    conn: Connection, at: Caller, note_id: int | str, pinned: bool, *, scope: Scope
) -> dict[str, Any]:
    note = notes_changes.set_pinned(
        conn, at.now(), note_id, pinned, scope=scope, zone=at.settings.zone, actor=at.actor
    )
    return note_json(at, note)


def supersede_note(
    conn: Connection,
    at: Caller,
    note_id: int | str,
    text: str,
    *,
    scope: Scope,
    session: str | int | None = None,
    origin: str | None = None,
) -> dict[str, Any]:
    """The old note (now superseded) and the one replacing it; with `session`, written by
    that session (its agent the origin; the place stays the old note's)."""
    found, origin = _writer(conn, at, session, origin)
    old, new = notes_changes.supersede(
        conn,
        at.now(),
        note_id,
        text,
        scope=scope,
        zone=at.settings.zone,
        origin=origin,
        session_id=found.id if found is not None else None,
        actor=at.actor,
    )
    return {"superseded": note_json(at, old), "note": note_json(at, new)}


def mark_wrong(
    conn: Connection, at: Caller, note_id: int | str, reason: str, *, scope: Scope
) -> dict[str, Any]:
    note = notes_changes.mark_wrong(conn, at.now(), note_id, reason, scope=scope, actor=at.actor)
    return note_json(at, note)


def delete_note(
    conn: Connection, at: Caller, note_id: int | str, *, scope: Scope
) -> dict[str, Any]:
    note = notes_changes.delete_note(conn, at.now(), note_id, scope=scope, actor=at.actor)
    return note_json(at, note)


def write_handoff(
    conn: Connection,
    at: Caller,
    session: str | int,
    text: str,
    *,
    git_root: str | None = None,
    branch: str | None = None,
    head: str | None = None,
) -> dict[str, Any]:
    """The session's handoff, and whether it replaced one it wrote before."""
    found, _ = _writer(conn, at, session, None)
    note, replaced = notes_handoffs.write_handoff(
        conn,
        at.now(),
        found.id,
        text,
        git_root=git_root,
        branch=branch,
        head=head,
        actor=at.actor,
    )
    return {"note": note_json(at, note), "replaced": replaced}


# --- the session that writes ----------------------------------------------------------------


def writing_session(
    conn: Connection,
    ref: str | None,
    *,
    cwd: str | None,
    side: str | None,
    sides_on: bool,
    lost_before: datetime,
) -> Any | None:
    """The session named (in `side`, with sides configured), else the open session last
    heard from in `cwd` (one silent past the grace is lost, not open: db/predicates.py);
    None when there is none, or several at once (then the agent must say which)."""
    from ondeck.db.predicates import SESSION_SHOWN_OPEN
    from ondeck.sessions.records import find_session, shown

    if ref:
        found = find_session(conn, ref, lost_before=lost_before)
        if sides_on and (found.unclassified or found.side != side):
            raise NotFound(f"no session {ref[:80]!r} in side {side}")
        return found
    if not cwd:
        return None
    rows = conn.execute(
        select(sessions.c.id)
        .where(shown(SESSION_SHOWN_OPEN, lost_before), sessions.c.cwd == cwd)
        .order_by(sessions.c.last_seen_at.desc(), sessions.c.id.desc())
        .limit(2)
    ).all()
    if len(rows) != 1:
        return None
    return find_session(conn, rows[0].id, lost_before=lost_before)
