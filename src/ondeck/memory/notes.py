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

The parts, each in its module: reading, the checks, the scope and "true today"
(notes_read.py); adding, the events, moving with a session, expiry (notes_write.py);
changing a note (notes_changes.py); handoffs (notes_handoffs.py); what each entry point
calls (notes_calls.py). This module is their one name for callers.
"""

from __future__ import annotations

from ondeck.memory.notes_changes import (
    UNSET,
    delete_note,
    edit_note,
    expire_note,
    mark_wrong,
    set_pinned,
    supersede,
)
from ondeck.memory.notes_handoffs import handoff_of, write_handoff
from ondeck.memory.notes_read import (
    MAX_LIMIT,
    check_note_text,
    check_reason,
    check_scope,
    check_side,
    get_note,
    history,
    in_scope,
    list_notes,
    note_from_row,
    scope_clauses,
    true_today,
)
from ondeck.memory.notes_write import (
    add_note,
    expire_due,
    follow_session,
    guarded_update,
    note_event,
    notes_step,
    session_row,
)

__all__ = [
    "MAX_LIMIT",
    "UNSET",
    "add_note",
    "check_note_text",
    "check_reason",
    "check_scope",
    "check_side",
    "delete_note",
    "edit_note",
    "expire_due",
    "expire_note",
    "follow_session",
    "get_note",
    "guarded_update",
    "handoff_of",
    "history",
    "in_scope",
    "list_notes",
    "mark_wrong",
    "note_event",
    "note_from_row",
    "notes_step",
    "scope_clauses",
    "session_row",
    "set_pinned",
    "supersede",
    "true_today",
    "write_handoff",
]
