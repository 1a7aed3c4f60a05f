"""Notes as they are read: what may be stored (the checks), who may see a note (its scope),
which notes are true today, and reading them."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import date
from typing import Any

from sqlalchemy import Connection, literal_column, or_, select

from ondeck.core.errors import InvalidInput, NotFound
from ondeck.core.memory import REASON_MAX, TEXT_MAX, Note, NoteKind, Scope, check_note_id
from ondeck.core.models import Event
from ondeck.core.sides import configured
from ondeck.core.validation import check_line, check_project, check_text
from ondeck.db.tables import notes
from ondeck.system import events as event_log

MAX_LIMIT = 500


def note_from_row(row: Any) -> Note:
    return Note.from_row(row)


# --- checking what comes in ---------------------------------------------------------------


def check_note_text(value: str | None) -> tuple[str, int]:
    """The text as it may be stored (scrubbed) and how many spans the scrubber took out."""
    from ondeck.core.scrubber import scrub

    raw = check_text(value, "note text", limit=TEXT_MAX).strip()
    if not raw:
        raise InvalidInput("note text must not be empty")
    scrubbed = scrub(raw)
    stored = scrubbed.text.strip()
    if not stored:
        raise InvalidInput("nothing is left of the note text once its private spans are removed")
    if len(stored) > TEXT_MAX:
        raise InvalidInput(
            f"note text is {len(stored)} characters once its secrets are marked redacted; "
            f"at most {TEXT_MAX} are allowed"
        )
    return stored, scrubbed.redactions


def check_side(side: str | None, sides: Collection[str]) -> str | None:
    """The side a note is written to: one of the configured sides, or none without sides."""
    if sides:
        if not side:
            raise InvalidInput(f"give the side: one of {', '.join(sorted(sides))}")
        return configured(sides, side)
    if side:
        raise InvalidInput("no sides are configured (one pool): leave the side out")
    return None


def check_scope(scope: Scope) -> Scope:
    if scope.project is not None:
        check_project(scope.project)
    if scope.sides_on and not scope.inbox and not scope.side:
        raise InvalidInput("give a side: sides are configured and memory is never read across them")
    return scope


def check_reason(value: str | None) -> str:
    if value is None or not str(value).strip():
        raise InvalidInput("give the reason (--reason): what is wrong with it")
    return check_line(" ".join(str(value).split()), "reason", limit=REASON_MAX)


def in_scope(scope: Scope) -> list[Any]:
    """WHERE clauses for notes a reader with `scope` may see (project: its notes and the
    side-wide ones)."""
    return scope_clauses(scope.sides_on, scope.inbox, scope.side, scope.project)


def scope_clauses(sides_on: bool, inbox: bool, side: Any, project: Any) -> list[Any]:
    """`in_scope` with the side and project as values or as bound parameters (recall builds
    its statements once per shape and binds them at each call); no project: all of them."""
    where: list[Any] = []
    if sides_on:
        where.append(notes.c.side.is_(None) if inbox else notes.c.side == side)
    if project is not None:
        where.append(or_(notes.c.project == project, notes.c.project.is_(None)))
    return where


def true_today(day: Any) -> list[Any]:
    """Notes that may be shown as true on `day` (a date, or a bound parameter): active and
    not past their date. The Core form of core/memory.py TRUE_TODAY; the status is written
    in the statement, not bound, so a plan made once still reads only active notes."""
    return [
        notes.c.status == literal_column("'active'"),
        or_(notes.c.expires_on.is_(None), notes.c.expires_on >= day),
    ]


# --- reading --------------------------------------------------------------------------------


def get_note(conn: Connection, note_id: int | str, scope: Scope | None = None) -> Note:
    """A note by id; with a scope, one the reader may see (else: not found, as if absent)."""
    query = select(notes).where(notes.c.id == check_note_id(note_id))
    if scope is not None:
        query = query.where(*in_scope(check_scope(scope)))
    row = conn.execute(query).first()
    if row is None:
        where = f" in {scope.describe()}" if scope is not None and scope.sides_on else ""
        raise NotFound(f"no note {note_id}{where}")
    return note_from_row(row)


def list_notes(
    conn: Connection,
    scope: Scope,
    day: date,
    *,
    kinds: Sequence[NoteKind] = (),
    include_all: bool = False,
    pinned: bool | None = None,
    session_id: int | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> list[Note]:
    """Newest first. By default only what is true today; `include_all` adds superseded,
    wrong and expired notes (their status says so)."""
    query = (
        select(notes)
        .where(*in_scope(check_scope(scope)))
        .order_by(notes.c.id.desc())
        .limit(max(1, min(limit, MAX_LIMIT)))
    )
    if not include_all:
        query = query.where(*true_today(day))
    if kinds:
        query = query.where(notes.c.kind.in_([k.value for k in kinds]))
    if pinned is not None:
        query = query.where(notes.c.pinned == pinned)
    if session_id is not None:
        query = query.where(notes.c.session_id == session_id)
    if before_id is not None:
        query = query.where(notes.c.id < before_id)
    return [note_from_row(row) for row in conn.execute(query)]


def history(conn: Connection, note_id: int, limit: int = 200) -> list[Event]:
    """The note's events, oldest first."""
    return list(reversed(event_log.list_events(conn, subject=f"note:{note_id}", limit=limit)))
