"""Changing a note: editing, pinning, superseding, marking wrong, expiring by hand,
deleting. Each change is guarded by what was read (a change made meanwhile is refused, not
overwritten) and is an event that keeps what it replaced."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, delete, update
from sqlalchemy.exc import IntegrityError

from ondeck.core.clock import aware, today
from ondeck.core.errors import Conflict, InvalidInput
from ondeck.core.memory import ORIGIN_PERSON, Note, NoteKind, NoteStatus, Scope, check_kind
from ondeck.core.validation import check_project
from ondeck.db.tables import notes
from ondeck.memory.notes_read import check_note_text, check_reason, check_side, get_note
from ondeck.memory.notes_write import add_note, guarded_update, note_event

UNSET: Any = object()  # "leave as it is" for edits, where None means "clear it"
_NAMES = tuple(Note.__dataclass_fields__)


def _live(
    conn: Connection,
    note_id: int | str,
    scope: Scope | None,
    doing: str,
    day: date | None = None,
) -> Note:
    """The note, if it may change: active as it is shown on `day` (one past its date is
    expired whether or not a jobs tick has swept it yet: refused the same way)."""
    note = get_note(conn, note_id, scope)
    status = note.shown_status(day) if day is not None else note.status
    if status is not NoteStatus.ACTIVE:
        where = f" by note {note.superseded_by}" if note.superseded_by else ""
        raise Conflict(
            f"note {note.id} is {status.value}{where}: it cannot be {doing}"
            + (" (supersede the note that replaced it)" if note.superseded_by else "")
        )
    return note


def edit_note(
    conn: Connection,
    now: datetime,
    note_id: int | str,
    *,
    scope: Scope | None = None,
    text: str | None = None,
    kind: str | NoteKind | None = None,
    project: Any = UNSET,
    side: Any = UNSET,
    sides: Collection[str] = (),
    expires_on: Any = UNSET,
    zone: Any,
    actor: str,
) -> Note:
    """Change an active note; the event keeps every value it replaced."""
    before = _live(conn, note_id, scope, "edited", today(now, zone))
    values: dict[str, Any] = {}
    if text is not None:
        stored, redactions = check_note_text(text)
        if stored != before.text:
            values["text"] = stored
            values["redactions"] = redactions
    if kind is not None:
        new_kind = check_kind(kind, handoff_ok=before.kind is NoteKind.HANDOFF)
        if (new_kind is NoteKind.HANDOFF) != (before.kind is NoteKind.HANDOFF):
            raise InvalidInput("a handoff stays a handoff, and a note never becomes one")
        if new_kind is not before.kind:
            values["kind"] = new_kind.value
    if project is not UNSET:
        project = check_project(project)
        if project != before.project:
            values["project"] = project
    if side is not UNSET:
        if before.session_id is not None and before.kind is NoteKind.HANDOFF:
            raise InvalidInput("a handoff lives where its session does: move the session")
        side = check_side(side, sides)
        if side != before.side:
            values["side"] = side
    if expires_on is not UNSET:
        day = today(now, zone)
        if expires_on is not None and expires_on < day:
            raise InvalidInput(
                f"expires {expires_on.isoformat()} is before today ({day.isoformat()})"
            )
        if expires_on != before.expires_on:
            values["expires_on"] = expires_on
    if not values:
        raise InvalidInput(f"note {before.id}: nothing to change")
    after = guarded_update(conn, before, updated_at=aware(now), **values)
    replaced = {
        key: (value.isoformat() if isinstance(value, date) else value)
        for key, value in ((k, getattr(before, k)) for k in values if k != "redactions")
    }
    changed = {
        key: (value.isoformat() if isinstance(value, date) else value)
        for key, value in values.items()
        if key != "redactions"
    }
    note_event(conn, now, before.id, "note.edited", actor, before=replaced, after=changed)
    return after


def set_pinned(
    conn: Connection,
    now: datetime,
    note_id: int | str,
    pinned: bool,
    *,
    scope: Scope | None = None,
    zone: Any = None,
    actor: str,
) -> Note:
    day = today(now, zone) if zone is not None else None
    before = _live(conn, note_id, scope, "pinned" if pinned else "unpinned", day)
    if before.pinned == pinned:
        raise InvalidInput(f"note {before.id} is already {'pinned' if pinned else 'not pinned'}")
    after = guarded_update(conn, before, pinned=pinned, updated_at=aware(now))
    note_event(conn, now, before.id, "note.pinned" if pinned else "note.unpinned", actor)
    return after


def supersede(
    conn: Connection,
    now: datetime,
    note_id: int | str,
    text: str,
    *,
    scope: Scope | None = None,
    zone: Any,
    origin: str = ORIGIN_PERSON,
    session_id: int | None = None,
    actor: str,
) -> tuple[Note, Note]:
    """A new note replacing `note_id` (same kind, side, project and pin); the old one
    becomes `superseded` and names the new one. Returns (old, new)."""
    before = _live(conn, note_id, scope, "superseded", today(now, zone))
    if before.kind is NoteKind.HANDOFF:
        raise InvalidInput(
            "a handoff is replaced by its session writing it again, or by the next "
            "session's; mark it wrong if it is wrong"
        )
    try:
        with conn.begin_nested():  # uq_notes_supersedes: another writer got there first
            new = _replacement(conn, now, before, text, zone, origin, actor)
    except IntegrityError:
        raise Conflict(
            f"note {before.id} was superseded by another change meanwhile; nothing was changed"
        ) from None
    if session_id is not None:
        # Written by an agent: the origin names its session, the place stays the old note's.
        conn.execute(update(notes).where(notes.c.id == new.id).values(session_id=session_id))
    old = guarded_update(
        conn,
        before,
        status=NoteStatus.SUPERSEDED.value,
        status_at=aware(now),
        superseded_by=new.id,
        pinned=False,
        updated_at=aware(now),
    )
    note_event(conn, now, before.id, "note.superseded", actor, by=new.id, was_pinned=before.pinned)
    return old, get_note(conn, new.id)


def _replacement(
    conn: Connection,
    now: datetime,
    before: Note,
    text: str,
    zone: Any,
    origin: str,
    actor: str,
) -> Note:
    """The note that replaces `before`: same kind, side, project and pin."""
    return add_note(
        conn,
        now,
        text=text,
        kind=before.kind,
        side=before.side,
        project=before.project,
        sides=[before.side] if before.side else [],
        zone=zone,
        pinned=before.pinned,
        # The replacement keeps the date, unless that date has passed (it replaces a note
        # that has expired, and starts again).
        expires_on=before.expires_on
        if before.expires_on and before.expires_on >= today(now, zone)
        else None,
        origin=origin,
        session_id=None,
        actor=actor,
        supersedes=before.id,
    )


def mark_wrong(
    conn: Connection,
    now: datetime,
    note_id: int | str,
    reason: str,
    *,
    scope: Scope | None = None,
    actor: str,
) -> Note:
    """Kept, with the reason, and never shown as true again (nor pinned)."""
    why = check_reason(reason)
    before = get_note(conn, note_id, scope)
    if before.status is NoteStatus.WRONG:
        raise Conflict(f"note {before.id} is already marked wrong ({before.status_reason})")
    after = guarded_update(
        conn,
        before,
        status=NoteStatus.WRONG.value,
        status_reason=why,
        status_at=aware(now),
        pinned=False,
        updated_at=aware(now),
    )
    note_event(
        conn,
        now,
        before.id,
        "note.wrong",
        actor,
        reason=why,
        was=before.status.value,
        was_pinned=before.pinned,
    )
    return after


def expire_note(
    conn: Connection,
    now: datetime,
    note_id: int | str,
    *,
    scope: Scope | None = None,
    zone: Any = None,
    actor: str,
) -> Note:
    """Expired now, by a person (what the jobs tick does at a note's date): kept, never shown
    as true again."""
    day = today(now, zone) if zone is not None else None
    before = _live(conn, note_id, scope, "expired", day)
    after = guarded_update(
        conn,
        before,
        status=NoteStatus.EXPIRED.value,
        status_reason=f"expired by {actor[:60]}",
        status_at=aware(now),
        pinned=False,
        updated_at=aware(now),
    )
    note_event(conn, now, before.id, "note.expired", actor, by=actor, was_pinned=before.pinned)
    return after


def delete_note(
    conn: Connection, now: datetime, note_id: int | str, *, scope: Scope | None = None, actor: str
) -> Note:
    """Gone from memory; the events stay, this one with the whole note as it was."""
    before = get_note(conn, note_id, scope)
    conn.execute(delete(notes).where(notes.c.id == before.id))
    note_event(
        conn,
        now,
        before.id,
        "note.deleted",
        actor,
        note={
            **{
                k: (v.value if hasattr(v, "value") else v)
                for k, v in ((name, getattr(before, name)) for name in _NAMES)
                if not isinstance(v, datetime | date)
            },
            "expires_on": before.expires_on.isoformat() if before.expires_on else None,
            "created_at": before.created_at.isoformat(),
        },
    )
    return before
