"""Notes as they are written: adding one, the event every change records, the guarded
update every change makes, moving a session's notes with it, and expiring notes at their
date (the jobs tick)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, Engine, and_, insert, select, update

from ondeck.core.clock import aware, today
from ondeck.core.errors import Conflict, InvalidInput, NotFound
from ondeck.core.memory import (
    ORIGIN_AGENT_PREFIX,
    ORIGIN_HOOK,
    ORIGIN_PERSON,
    Note,
    NoteKind,
    NoteStatus,
    check_kind,
)
from ondeck.core.validation import check_project
from ondeck.db.engine import writing
from ondeck.db.tables import notes, sessions
from ondeck.memory.notes_read import check_note_text, check_side, note_from_row
from ondeck.system import events as event_log


def session_row(conn: Connection, session_id: int) -> Any:
    row = conn.execute(
        select(
            sessions.c.id,
            sessions.c.external_id,
            sessions.c.side,
            sessions.c.project,
            sessions.c.unclassified,
            sessions.c.capture,
        ).where(sessions.c.id == session_id)
    ).first()
    if row is None:
        raise NotFound(f"no session {session_id}")
    return row


def note_event(
    conn: Connection, now: datetime, note_id: int, what: str, actor: str, **details: Any
) -> None:
    event_log.record(conn, now, actor=actor, kind=what, subject=f"note:{note_id}", details=details)


def add_note(
    conn: Connection,
    now: datetime,
    *,
    text: str,
    kind: str | NoteKind = NoteKind.NOTE,
    side: str | None,
    project: str | None,
    sides: Collection[str],
    zone: Any,
    pinned: bool = False,
    expires_on: date | None = None,
    origin: str = ORIGIN_PERSON,
    session_id: int | None = None,
    actor: str,
    supersedes: int | None = None,
) -> Note:
    """A new note. With a session: written as that session's (its side and project, unless
    a project is given; refused if the session keeps no text)."""
    kind = check_kind(kind)
    stored, redactions = check_note_text(text)
    project = check_project(project)
    day = today(now, zone)
    if expires_on is not None and expires_on < day:
        raise InvalidInput(
            f"expires {expires_on.isoformat()} is before today ({day.isoformat()}): "
            "a note that is already expired would never be shown"
        )
    if session_id is not None:
        session = session_row(conn, session_id)
        if not session.capture:
            raise InvalidInput(
                f"session {session.id} keeps no text (capture is off where it runs): "
                "its notes are not kept"
            )
        # A session's note lives where the session lives: its side (none while it is
        # unclassified), its project unless another one of the same side was given.
        side = session.side
        if project is None:
            project = session.project
        if session.unclassified:
            project = None
        if origin == ORIGIN_PERSON:
            origin = f"{ORIGIN_AGENT_PREFIX}{session.external_id[:200]}"
    else:
        side = check_side(side, sides)
    if not (origin in (ORIGIN_PERSON, ORIGIN_HOOK) or origin.startswith(ORIGIN_AGENT_PREFIX)):
        raise InvalidInput(f"origin {origin[:40]!r} is not person, hook or agent:<session id>")
    row = conn.execute(
        insert(notes)
        .values(
            side=side,
            project=project,
            kind=kind.value,
            text=stored,
            pinned=bool(pinned),
            status=NoteStatus.ACTIVE.value,
            supersedes=supersedes,
            expires_on=expires_on,
            origin=origin[:220],
            session_id=session_id,
            redactions=redactions,
            created_at=aware(now),
            updated_at=aware(now),
        )
        .returning(*notes.c)
    ).one()
    note = note_from_row(row)
    note_event(
        conn,
        now,
        note.id,
        "note.added",
        actor,
        kind=kind.value,
        side=side,
        project=project,
        pinned=note.pinned,
        expires_on=expires_on.isoformat() if expires_on else None,
        origin=note.origin,
        session=session_id,
        supersedes=supersedes,
        text=stored,
        redactions=redactions,
    )
    return note


def guarded_update(conn: Connection, before: Note, **values: Any) -> Note:
    row = conn.execute(
        update(notes)
        # Guarded by what was read: a change made meanwhile is not overwritten unseen.
        .where(notes.c.id == before.id, notes.c.updated_at == before.updated_at)
        .values(**values)
        .returning(*notes.c)
    ).first()
    if row is None:
        raise Conflict(f"note {before.id} changed while this request ran; nothing was changed")
    return note_from_row(row)


def follow_session(
    conn: Connection,
    now: datetime,
    session_id: int,
    *,
    side: str | None,
    project: str | None,
    actor: str,
) -> list[int]:
    """A person moved a session: the notes it wrote move with it (events name from and to)."""
    moved = conn.execute(
        select(notes.c.id, notes.c.side, notes.c.project).where(notes.c.session_id == session_id)
    ).all()
    for note_id, old_side, old_project in moved:
        if (old_side, old_project) == (side, project):
            continue
        conn.execute(
            update(notes)
            .where(notes.c.id == note_id)
            .values(side=side, project=project, updated_at=aware(now))
        )
        note_event(
            conn,
            now,
            note_id,
            "note.moved",
            actor,
            session=session_id,
            **{"from": {"side": old_side, "project": old_project}},
            to={"side": side, "project": project},
        )
    return [note_id for note_id, *_ in moved]


# --- expiry (the jobs tick) -------------------------------------------------------------------


def expire_due(conn: Connection, now: datetime, day: date, *, actor: str = "jobs") -> list[int]:
    """Every active note whose `expires_on` is before `day` becomes `expired`."""
    # ix_notes_expiry: active notes by expires_on.
    due = conn.execute(
        select(notes.c.id, notes.c.expires_on)
        .where(
            notes.c.status == NoteStatus.ACTIVE.value,
            notes.c.expires_on.is_not(None),
            notes.c.expires_on < day,
        )
        .order_by(notes.c.expires_on, notes.c.id)
        .limit(1000)
    ).all()
    done: list[int] = []
    for note_id, expires_on in due:
        changed = conn.execute(
            update(notes)
            # Guarded: a note edited meanwhile (a new date, a wrong mark) keeps that change.
            .where(
                and_(
                    notes.c.id == note_id,
                    notes.c.status == NoteStatus.ACTIVE.value,
                    notes.c.expires_on == expires_on,
                )
            )
            .values(
                status=NoteStatus.EXPIRED.value,
                status_reason=f"past its date ({expires_on.isoformat()})",
                status_at=aware(now),
                pinned=False,
                updated_at=aware(now),
            )
        ).rowcount
        if changed:
            note_event(conn, now, note_id, "note.expired", actor, expires_on=expires_on.isoformat())
            done.append(note_id)
    return done


def notes_step(engine: Engine, now: datetime, settings: Any) -> dict[str, Any]:
    """The jobs tick's notes step: mark notes past their date expired (by the configured
    zone's today)."""
    day = today(now, settings.zone)
    expired: list[int] = []
    while True:
        with writing(engine) as conn:
            batch = expire_due(conn, now, day)
        expired += batch
        if len(batch) < 1000:
            break
    return {"expired": len(expired), "ids": expired[:50]}
