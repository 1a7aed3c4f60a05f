"""Notes and handoffs: their kinds, statuses and origins.

A note is something a session should know that is not a task: a plain `note`, a
`decision`, or a `handoff` (an agent's own words for the next session of its project, one
per session). Its status says whether it may be shown as true:

    active      shown (if not past its `expires_on`)
    superseded  replaced by a newer note (`superseded_by`); shown only when asked, labelled
    wrong       marked wrong by someone, with the reason; never shown as true again
    expired     past its `expires_on` (the jobs tick marks it)

Standard library only: the session hook's brief reads these words too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, tzinfo
from enum import StrEnum
from typing import Any

from ondeck.core.errors import InvalidInput
from ondeck.core.sides import SideView
from ondeck.core.validation import BIGINT_MAX

TEXT_MAX = 8_000
REASON_MAX = 500
ORIGIN_PERSON = "person"
ORIGIN_HOOK = "hook"
ORIGIN_AGENT_PREFIX = "agent:"


class NoteKind(StrEnum):
    NOTE = "note"
    DECISION = "decision"
    HANDOFF = "handoff"


class NoteStatus(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    WRONG = "wrong"
    EXPIRED = "expired"


# A note that may be shown as true on `:day`, as SQL: `shown_status` below, for a row. Both
# stores read it; memory/notes.py `true_today` is its Core form (tests/unit/test_predicates.py
# holds the three together).
TRUE_TODAY = "notes.status = 'active' AND (notes.expires_on IS NULL OR notes.expires_on >= :day)"


def shown_status(status: NoteStatus, expires_on: date | None, today: date) -> NoteStatus:
    """The status as it is true today: an active note past its date is expired even before
    the jobs tick marks it (no reader is told it is still true)."""
    if status is NoteStatus.ACTIVE and expires_on and expires_on < today:
        return NoteStatus.EXPIRED
    return status


def agent_origin(session_external_id: str | None) -> str:
    """`agent:<session id>`; `agent:unknown` when the session could not be told."""
    return f"{ORIGIN_AGENT_PREFIX}{(session_external_id or 'unknown')[:200]}"


# --- the record ---------------------------------------------------------------------------


def _iso(instant: datetime | None, zone: tzinfo) -> str | None:
    return None if instant is None else instant.astimezone(zone).isoformat()


@dataclass(frozen=True, kw_only=True, slots=True)
class Note:
    id: int
    side: str | None
    project: str | None
    kind: NoteKind
    text: str
    pinned: bool
    status: NoteStatus
    status_reason: str | None
    status_at: datetime | None
    supersedes: int | None
    superseded_by: int | None
    expires_on: date | None
    origin: str
    session_id: int | None
    git_root: str | None
    branch: str | None
    head: str | None
    redactions: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> Note:
        """A `notes` row (SQLAlchemy) as the record."""
        return cls.from_values(row._mapping)

    @classmethod
    def from_values(cls, row: Any) -> Note:
        """A `notes` row's values as the record (instants and dates already converted: a
        SQLAlchemy row's, or db/plain.py's)."""
        values = dict(row)
        values["kind"] = NoteKind(values["kind"])
        values["status"] = NoteStatus(values["status"])
        values["pinned"] = bool(values["pinned"])
        return cls(**{name: values[name] for name in _NOTE_FIELDS})

    def shown_status(self, today: date) -> NoteStatus:
        return shown_status(self.status, self.expires_on, today)

    def is_true(self, today: date) -> bool:
        return self.shown_status(today) is NoteStatus.ACTIVE

    def to_json(self, zone: tzinfo, today: date) -> dict[str, Any]:
        shown = self.shown_status(today)
        return {
            "id": self.id,
            "kind": self.kind.value,
            "side": self.side,
            "project": self.project,
            "text": self.text,
            "pinned": self.pinned,
            "status": shown.value,
            "stored_status": self.status.value,
            "status_reason": self.status_reason,
            "status_at": _iso(self.status_at, zone),
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "expires_on": self.expires_on.isoformat() if self.expires_on else None,
            "origin": self.origin,
            "session_id": self.session_id,
            "git_root": self.git_root,
            "branch": self.branch,
            "head": self.head,
            "redactions": self.redactions,
            "created_at": _iso(self.created_at, zone),
            "updated_at": _iso(self.updated_at, zone),
        }


_NOTE_FIELDS = tuple(Note.__dataclass_fields__)


@dataclass(frozen=True, kw_only=True, slots=True)
class Scope:
    """Whose memory a reader sees: its side (the one `SideView`, core/sides.py, that every
    kind of item is read through) and, within it, a project or the whole side."""

    view: SideView
    project: str | None = None

    @classmethod
    def of(
        cls,
        *,
        sides_on: bool,
        side: str | None = None,
        inbox: bool = False,
        project: str | None = None,
    ) -> Scope:
        """The scope of a reader already placed (its side checked where it came from)."""
        return cls(view=SideView(sides_on=sides_on, side=side, inbox=inbox), project=project)

    @property
    def sides_on(self) -> bool:
        return self.view.sides_on

    @property
    def side(self) -> str | None:
        return self.view.side

    @property
    def inbox(self) -> bool:
        return self.view.inbox

    def describe(self) -> str:
        where = (
            "the unclassified inbox"
            if self.inbox
            else f"side {self.side}"
            if self.sides_on
            else "all notes"
        )
        return f"{where}, project {self.project}" if self.project else where


def check_kind(value: str | NoteKind, *, handoff_ok: bool = False) -> NoteKind:
    try:
        kind = NoteKind(str(value).strip().lower())
    except ValueError:
        raise InvalidInput(
            f"kind {str(value)[:40]!r} is not one of note, decision, handoff"
        ) from None
    if kind is NoteKind.HANDOFF and not handoff_ok:
        raise InvalidInput(
            "a handoff is written for its session: `ondeck handoff TEXT --session ID` "
            "(MCP: write_handoff)"
        )
    return kind


def check_note_id(value: Any) -> int:
    text = str(value).strip().removeprefix("#")
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text[:20]) <= BIGINT_MAX:
        raise InvalidInput(f"note id {str(value)[:40]!r} is not valid: use a positive number")
    return int(text)
