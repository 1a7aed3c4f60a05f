"""Notes and handoffs: adding, reading, editing, pinning, superseding, marking wrong,
expiring, deleting; one handoff per session. Every change is an event (`note:<id>`) that
keeps what the change replaced, so nothing is silently rewritten.

Rules a reader can rely on (core/memory.py for the words):
- text is at most 8,000 characters, stored only after the scrubber (core/scrubber.py) took
  out private spans and secrets; what it took out is counted on the note;
- a note never changes side behind anyone's back: it is written with the side and project
  of where it came from (its session's, or what a person gave) and moved only by a person,
  or with its session when a person moves that session (`follow_session`);
- a superseded, wrong or expired note stays (with the reason, and the note that replaced
  it) and is never shown as true again; only a person deletes, and the event stays.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import fields
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, Engine, and_, delete, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from ondeck.core.clock import aware, today
from ondeck.core.errors import Conflict, InvalidInput, NotFound
from ondeck.core.memory import (
    ORIGIN_AGENT_PREFIX,
    ORIGIN_HOOK,
    ORIGIN_PERSON,
    REASON_MAX,
    TEXT_MAX,
    Note,
    NoteKind,
    NoteStatus,
    Scope,
    check_kind,
    check_note_id,
)
from ondeck.core.models import Event
from ondeck.core.validation import check_line, check_project, check_text
from ondeck.db.engine import writing
from ondeck.db.tables import notes, sessions
from ondeck.system import events as event_log

MAX_LIMIT = 500
_NAMES = tuple(f.name for f in fields(Note))
UNSET: Any = object()  # "leave as it is" for edits, where None means "clear it"


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
        if side not in sides:
            raise InvalidInput(
                f"side {side[:64]!r} is not configured: use one of {', '.join(sorted(sides))}"
            )
        return side
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
    where: list[Any] = []
    if scope.sides_on:
        where.append(notes.c.side.is_(None) if scope.inbox else notes.c.side == scope.side)
    if scope.project is not None:
        where.append(or_(notes.c.project == scope.project, notes.c.project.is_(None)))
    return where


def true_today(day: date) -> list[Any]:
    """Notes that may be shown as true on `day`: active and not past their date."""
    return [
        notes.c.status == NoteStatus.ACTIVE.value,
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


def handoff_of(conn: Connection, session_id: int) -> Note | None:
    row = conn.execute(
        select(notes).where(
            notes.c.session_id == session_id, notes.c.kind == NoteKind.HANDOFF.value
        )
    ).first()
    return None if row is None else note_from_row(row)


def history(conn: Connection, note_id: int, limit: int = 200) -> list[Event]:
    """The note's events, oldest first."""
    return list(reversed(event_log.list_events(conn, subject=f"note:{note_id}", limit=limit)))


# --- writing --------------------------------------------------------------------------------


def _session_row(conn: Connection, session_id: int) -> Any:
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


def _event(
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
        session = _session_row(conn, session_id)
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
    _event(
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


def _guarded_update(conn: Connection, before: Note, **values: Any) -> Note:
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
    after = _guarded_update(conn, before, updated_at=aware(now), **values)
    replaced = {
        key: (value.isoformat() if isinstance(value, date) else value)
        for key, value in ((k, getattr(before, k)) for k in values if k != "redactions")
    }
    changed = {
        key: (value.isoformat() if isinstance(value, date) else value)
        for key, value in values.items()
        if key != "redactions"
    }
    _event(conn, now, before.id, "note.edited", actor, before=replaced, after=changed)
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
    after = _guarded_update(conn, before, pinned=pinned, updated_at=aware(now))
    _event(conn, now, before.id, "note.pinned" if pinned else "note.unpinned", actor)
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
    old = _guarded_update(
        conn,
        before,
        status=NoteStatus.SUPERSEDED.value,
        status_at=aware(now),
        superseded_by=new.id,
        pinned=False,
        updated_at=aware(now),
    )
    _event(conn, now, before.id, "note.superseded", actor, by=new.id, was_pinned=before.pinned)
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
    after = _guarded_update(
        conn,
        before,
        status=NoteStatus.WRONG.value,
        status_reason=why,
        status_at=aware(now),
        pinned=False,
        updated_at=aware(now),
    )
    _event(
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
    after = _guarded_update(
        conn,
        before,
        status=NoteStatus.EXPIRED.value,
        status_reason=f"expired by {actor[:60]}",
        status_at=aware(now),
        pinned=False,
        updated_at=aware(now),
    )
    _event(conn, now, before.id, "note.expired", actor, by=actor, was_pinned=before.pinned)
    return after


def delete_note(
    conn: Connection, now: datetime, note_id: int | str, *, scope: Scope | None = None, actor: str
) -> Note:
    """Gone from memory; the events stay, this one with the whole note as it was."""
    before = get_note(conn, note_id, scope)
    conn.execute(delete(notes).where(notes.c.id == before.id))
    _event(
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


# --- handoffs -------------------------------------------------------------------------------


def write_handoff(
    conn: Connection,
    now: datetime,
    session_id: int,
    text: str,
    *,
    git_root: str | None = None,
    branch: str | None = None,
    head: str | None = None,
    actor: str,
) -> tuple[Note, bool]:
    """The session's handoff: written, or (written again) replaced in place, the event
    keeping the text it replaced. Returns (handoff, replaced)."""
    session = _session_row(conn, session_id)
    if not session.capture:
        raise InvalidInput(
            f"session {session.id} keeps no text (capture is off where it runs): "
            "its handoff is not kept"
        )
    stored, redactions = check_note_text(text)
    git = {
        "git_root": (git_root or None) and str(git_root)[:4000],
        "branch": (branch or None) and str(branch)[:255],
        "head": head if head and len(head) <= 64 and head.isalnum() else None,
    }
    before = handoff_of(conn, session.id)
    side = session.side
    project = None if session.unclassified else session.project
    row = None
    if before is None:
        try:
            # A savepoint: another writer may write this session's first handoff at the
            # same moment (uq_notes_handoff_session); then this one replaces it below.
            with conn.begin_nested():
                row = _insert_handoff(conn, now, session, stored, redactions, side, project, git)
        except IntegrityError:
            before = handoff_of(conn, session.id)
            if before is None:
                raise
    if row is not None:
        note = note_from_row(row)
        _event(
            conn,
            now,
            note.id,
            "handoff.written",
            actor,
            session=session.id,
            side=side,
            project=project,
            text=stored,
            redactions=redactions,
            **git,
        )
        return note, False
    assert before is not None
    after = _guarded_update(
        conn,
        before,
        text=stored,
        redactions=redactions,
        # Written again: it is this session's word now, whatever was said of the last one.
        status=NoteStatus.ACTIVE.value,
        status_reason=None,
        status_at=None,
        side=side,
        project=project,
        updated_at=aware(now),
        **git,
    )
    _event(
        conn,
        now,
        before.id,
        "handoff.replaced",
        actor,
        session=session.id,
        before={
            "text": before.text,
            "status": before.status.value,
            "status_reason": before.status_reason,
            "head": before.head,
            "branch": before.branch,
        },
        text=stored,
        **git,
    )
    return after, True


def _insert_handoff(
    conn: Connection,
    now: datetime,
    session: Any,
    stored: str,
    redactions: int,
    side: str | None,
    project: str | None,
    git: dict[str, Any],
) -> Any:
    return conn.execute(
        insert(notes)
        .values(
            side=side,
            project=project,
            kind=NoteKind.HANDOFF.value,
            text=stored,
            status=NoteStatus.ACTIVE.value,
            origin=f"{ORIGIN_AGENT_PREFIX}{session.external_id[:200]}",
            session_id=session.id,
            redactions=redactions,
            created_at=aware(now),
            updated_at=aware(now),
            **git,
        )
        .returning(*notes.c)
    ).one()


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
        _event(
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
            _event(conn, now, note_id, "note.expired", actor, expires_on=expires_on.isoformat())
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
