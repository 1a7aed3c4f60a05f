"""Handoffs: an agent's own words for the next session of its project, one per session.
Written again, it is replaced in place (the event keeps the text it replaced); it lives
where its session does."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select
from sqlalchemy.exc import IntegrityError

from ondeck.core.clock import aware
from ondeck.core.errors import InvalidInput
from ondeck.core.memory import ORIGIN_AGENT_PREFIX, Note, NoteKind, NoteStatus
from ondeck.db.tables import notes
from ondeck.memory.notes_read import check_note_text, note_from_row
from ondeck.memory.notes_write import guarded_update, note_event, session_row


def handoff_of(conn: Connection, session_id: int) -> Note | None:
    row = conn.execute(
        select(notes).where(
            notes.c.session_id == session_id, notes.c.kind == NoteKind.HANDOFF.value
        )
    ).first()
    return None if row is None else note_from_row(row)


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
    session = session_row(conn, session_id)
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
        note_event(
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
    after = guarded_update(
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
    note_event(
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
