"""What recall searches, source by source: which of the items the index found a reader may
see (sides never mix, memory/notes_read.py's scope for notes; nothing superseded, wrong or
expired unless asked), read as the hits recall shows.

A session, its compaction summaries and its last word are in its side; a task in the side
it was given (a task still in the inbox is found by nobody's recall); unclassified items
only for a person asking for the inbox.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, bindparam, func, literal_column, select

from ondeck.core.memory import NoteKind, NoteStatus, Scope, shown_status
from ondeck.db.predicates import presumed_lost
from ondeck.db.tables import notes, session_compactions, sessions, tasks
from ondeck.memory.notes_read import scope_clauses, true_today
from ondeck.memory.recall_query import Hit
from ondeck.sessions.hook_agents import CLAUDE_CODE

# The index's source of each kind `--kind` takes.
SOURCE_OF = {
    "note": "notes",
    "decision": "notes",
    "handoff": "notes",
    "last_word": "session_words",
    "compaction": "compactions",
    "task": "tasks",
}
NOTE_KINDS = ("note", "decision", "handoff")


@dataclass(frozen=True, slots=True)
class Shape:
    """What a source's statement looks like; its values are bound at each call."""

    source: str
    sides_on: bool
    inbox: bool
    project: bool
    include_all: bool = False  # notes only
    kinds: tuple[str, ...] = ()  # notes only: the kinds asked for (empty: all)
    # What is read: the whole rows (0), or for ranking the id and when it was written (1)
    # and its text (2).
    read: int = 0


def _session_scope(shape: Shape) -> list[Any]:
    where: list[Any] = []
    if shape.sides_on:
        where.append(
            literal_column("sessions.unclassified")
            if shape.inbox
            else sessions.c.side == bindparam("side")
        )
    if shape.project:
        where.append(sessions.c.project == bindparam("project"))
    return where


_COLUMNS = {
    "session_words": (
        sessions.c.id,
        sessions.c.external_id,
        sessions.c.agent,
        sessions.c.last_word,
        sessions.c.last_word_at,
        sessions.c.last_seen_at,
        sessions.c.side,
        sessions.c.project,
        sessions.c.status,
    ),
    "compactions": (
        session_compactions.c.id,
        session_compactions.c.session_id,
        session_compactions.c.at,
        session_compactions.c.summary,
        sessions.c.external_id,
        sessions.c.side,
        sessions.c.project,
        sessions.c.status,
        sessions.c.last_seen_at,
    ),
    "tasks": (
        tasks.c.id,
        tasks.c.title,
        tasks.c.body,
        tasks.c.status,
        tasks.c.project,
        tasks.c.side,
        tasks.c.source,
        tasks.c.created_at,
    ),
}


def _ranking(source: str, read: int) -> tuple[Any, ...]:
    """The columns ranking reads: the id, when it was written (recency breaks ties), and with
    `read` 2 the text (an identifier or phrase is checked on it)."""
    c = session_compactions
    key, at, text = {
        "notes": (notes.c.id, notes.c.updated_at, notes.c.text),
        "session_words": (
            sessions.c.id,
            func.coalesce(sessions.c.last_word_at, sessions.c.last_seen_at),
            sessions.c.last_word,
        ),
        "compactions": (c.c.id, c.c.at, c.c.summary),
        "tasks": (tasks.c.id, tasks.c.created_at, tasks.c.title + "\n" + tasks.c.body),
    }[source]
    columns = (key.label("id"), at.label("at"))
    return (*columns, text.label("text")) if read == 2 else columns


@lru_cache(maxsize=256)
def statement(shape: Shape) -> Any:
    """The rows of `shape.source` among the ids bound as `ids` that its scope lets through."""
    ids: Any = bindparam("ids", expanding=True)
    if shape.read:
        wanted = _ranking(shape.source, shape.read)
        plain = replace(shape, read=0)
        return statement(plain).with_only_columns(*wanted, maintain_column_froms=True)
    if shape.source == "notes":
        project: Any = bindparam("project") if shape.project else None
        where = [
            notes.c.id.in_(ids),
            *scope_clauses(shape.sides_on, shape.inbox, bindparam("side"), project),
        ]
        if shape.kinds:
            where.append(notes.c.kind.in_(shape.kinds))
        if not shape.include_all:
            where += true_today(bindparam("day"))
        return select(notes).where(*where)
    if shape.source == "session_words":
        where = [sessions.c.id.in_(ids), sessions.c.last_word.is_not(None), *_session_scope(shape)]
        return select(*_COLUMNS["session_words"]).where(*where)
    if shape.source == "compactions":
        c = session_compactions
        frm = c.join(sessions, sessions.c.id == c.c.session_id)
        where = [c.c.id.in_(ids), c.c.summary.is_not(None), *_session_scope(shape)]
        return select(*_COLUMNS["compactions"]).select_from(frm).where(*where)
    where = [tasks.c.id.in_(ids)]
    if shape.sides_on:
        where.append(tasks.c.side == bindparam("side"))
    if shape.project:
        where.append(tasks.c.project == bindparam("project"))
    return select(*_COLUMNS["tasks"]).where(*where)


@dataclass(frozen=True, slots=True)
class Reader:
    """Who reads, and how: the scope, the day notes are true on, the kinds asked for."""

    scope: Scope
    day: date
    kinds: tuple[str, ...]
    include_all: bool
    lost_before: datetime | None

    def sources(self) -> tuple[str, ...]:
        """The index's sources to search, in its order (db/recall_tables.SOURCES)."""
        from ondeck.db.recall_tables import SOURCES

        wanted = {SOURCE_OF[k] for k in self.kinds} if self.kinds else set(SOURCES)
        if self.scope.sides_on and self.scope.inbox:
            wanted.discard("tasks")  # an inbox task waits for its side on the Backlog
        return tuple(s for s in SOURCES if s in wanted)

    def seen(
        self, conn: Connection, source: str, ids: Sequence[int], text: bool
    ) -> dict[int, tuple[datetime, str | None]]:
        """Of the items of `source` among `ids`, those this reader may see: when each was
        written, and its text if asked."""
        rows = self._rows(conn, source, ids, 2 if text else 1)
        return {int(row.id): (row.at, row.text if text else None) for row in rows}

    def hits(self, conn: Connection, source: str, ids: Sequence[int]) -> dict[int, Hit]:
        """The items of `source` among `ids` that this reader may see, as hits."""
        make = {
            "notes": self._note,
            "session_words": self._last_word,
            "compactions": self._compaction,
            "tasks": _task,
        }[source]
        return {int(row.id): make(row) for row in self._rows(conn, source, ids, 0)}

    def _rows(self, conn: Connection, source: str, ids: Sequence[int], read: int) -> Any:
        scope = self.scope
        note_kinds = tuple(k for k in NOTE_KINDS if k in self.kinds)
        shape = Shape(
            source=source,
            sides_on=scope.sides_on,
            inbox=scope.inbox,
            project=scope.project is not None,
            include_all=self.include_all if source == "notes" else False,
            kinds=() if note_kinds == NOTE_KINDS else note_kinds,
            read=read,
        )
        values: dict[str, Any] = {"ids": list(ids)}
        if scope.sides_on and not scope.inbox:
            values["side"] = scope.side
        if scope.project is not None:
            values["project"] = scope.project
        if source == "notes" and not self.include_all:
            values["day"] = self.day
        return conn.execute(statement(shape), values).all()

    def _note(self, row: Any) -> Hit:
        status = shown_status(NoteStatus(row.status), row.expires_on, self.day)
        label = None
        if status is NoteStatus.SUPERSEDED:
            by = f" by note {row.superseded_by}" if row.superseded_by else ""
            label = f"SUPERSEDED{by}: not true any more"
        elif status is NoteStatus.WRONG:
            label = f"WRONG: {row.status_reason}"
        elif status is NoteStatus.EXPIRED:
            label = f"EXPIRED (after {row.expires_on.isoformat()}): may no longer hold"
        return Hit(
            kind=NoteKind(row.kind).value,
            id=row.id,
            session_id=row.session_id,
            at=row.updated_at,
            text=row.text,
            side=row.side,
            project=row.project,
            status=status.value,
            origin=row.origin,
            true=status is NoteStatus.ACTIVE,
            label=label,
        )

    def _status(self, row: Any) -> str:
        """The session's status as it is shown (db/predicates.SESSION_PRESUMED_LOST)."""
        lost = self.lost_before
        if lost is not None and presumed_lost(row.status, row.last_seen_at, lost):
            return "lost"
        return str(row.status)

    def _last_word(self, row: Any) -> Hit:
        whose = "" if row.agent == CLAUDE_CODE else f"{row.agent}, "
        return Hit(
            kind="last_word",
            id=row.id,
            session_id=row.id,
            at=row.last_word_at or row.last_seen_at,
            text=row.last_word,
            side=row.side,
            project=row.project,
            status=self._status(row),
            origin=f"session {row.id}'s last word ({whose}{row.external_id[:12]})",
            true=True,
            label=None,
        )

    def _compaction(self, row: Any) -> Hit:
        return Hit(
            kind="compaction",
            id=row.id,
            session_id=row.session_id,
            at=row.at,
            text=row.summary,
            side=row.side,
            project=row.project,
            status=self._status(row),
            origin=f"Claude's compaction summary in session {row.session_id}",
            true=True,
            label=None,
        )


def _task(row: Any) -> Hit:
    return Hit(
        kind="task",
        id=row.id,
        session_id=None,
        at=row.created_at,
        text=f"{row.title}\n{row.body}" if row.body else row.title,
        side=row.side,
        project=row.project,
        status=row.status,
        origin=f"schedule {row.source.split(':')[1]}" if row.source else "backlog",
        true=True,
        label=None,
    )
