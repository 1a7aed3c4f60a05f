"""What recall searches, source by source: which of the items the index found a reader may
see (sides never mix, memory/notes_read.py's scope for notes; nothing superseded, wrong or
expired unless asked), read as the hits recall shows.

A session, its compaction summaries and its last word are in its side; a task in the side
it was given (a task still in the inbox is found by nobody's recall); unclassified items
only for a person asking for the inbox.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Connection,
    any_,
    bindparam,
    cast,
    func,
    literal_column,
    null,
    select,
    type_coerce,
    union_all,
)

from ondeck.core.memory import NoteKind, NoteStatus, Scope, shown_status
from ondeck.db.predicates import presumed_lost
from ondeck.db.tables import notes, session_compactions, sessions, tasks
from ondeck.memory.notes_read import scope_clauses, true_today
from ondeck.memory.recall_query import Hit
from ondeck.sessions.capture.agents import CLAUDE_CODE

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
    # What is read: the whole rows (0), or for ranking the source, the id and when it was
    # written (1) and its text (2).
    read: int = 0
    # The ids are bound under this name, as one array (PostgreSQL: one statement text for
    # any number of ids, which psycopg prepares once) or as an IN list.
    ids: str = "ids"
    array: bool = False


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


# What a hit is read as: the same columns, typed alike, from every source (one statement
# reads a page's hits of every source), NULL where a source has no such column.
_HIT_TYPES: dict[str, Any] = {
    "id": notes.c.id.type,
    "session_id": notes.c.session_id.type,
    "at": notes.c.updated_at.type,
    "text": notes.c.text.type,
    "body": tasks.c.body.type,
    "side": notes.c.side.type,
    "project": notes.c.project.type,
    "status": notes.c.status.type,
    "kind": notes.c.kind.type,
    "expires_on": notes.c.expires_on.type,
    "superseded_by": notes.c.superseded_by.type,
    "status_reason": notes.c.status_reason.type,
    "origin": notes.c.origin.type,
    "task_source": tasks.c.source.type,
    "external_id": sessions.c.external_id.type,
    "agent": sessions.c.agent.type,
    "last_seen_at": sessions.c.last_seen_at.type,
}
_C = session_compactions
_HIT_COLUMNS: dict[str, dict[str, Any]] = {
    "notes": {
        "id": notes.c.id,
        "session_id": notes.c.session_id,
        "at": notes.c.updated_at,
        "text": notes.c.text,
        "side": notes.c.side,
        "project": notes.c.project,
        "status": notes.c.status,
        "kind": notes.c.kind,
        "expires_on": notes.c.expires_on,
        "superseded_by": notes.c.superseded_by,
        "status_reason": notes.c.status_reason,
        "origin": notes.c.origin,
    },
    "session_words": {
        "id": sessions.c.id,
        "session_id": sessions.c.id,
        "at": func.coalesce(sessions.c.last_word_at, sessions.c.last_seen_at),
        "text": sessions.c.last_word,
        "side": sessions.c.side,
        "project": sessions.c.project,
        "status": sessions.c.status,
        "external_id": sessions.c.external_id,
        "agent": sessions.c.agent,
        "last_seen_at": sessions.c.last_seen_at,
    },
    "compactions": {
        "id": _C.c.id,
        "session_id": _C.c.session_id,
        "at": _C.c.at,
        "text": _C.c.summary,
        "side": sessions.c.side,
        "project": sessions.c.project,
        "status": sessions.c.status,
        "external_id": sessions.c.external_id,
        "last_seen_at": sessions.c.last_seen_at,
    },
    "tasks": {
        "id": tasks.c.id,
        "at": tasks.c.created_at,
        "text": tasks.c.title,
        "body": tasks.c.body,
        "side": tasks.c.side,
        "project": tasks.c.project,
        "status": tasks.c.status,
        "task_source": tasks.c.source,
    },
}


def _hit_columns(source: str) -> tuple[Any, ...]:
    """A source's columns as a hit is read (a NULL cast to the column's type: PostgreSQL
    matches a union's types pairwise, and the first statement's types read every row)."""
    of = _HIT_COLUMNS[source]
    return (
        _source_column(source),
        *(
            (type_coerce(of[name], kind) if name in of else cast(null(), kind)).label(name)
            for name, kind in _HIT_TYPES.items()
        ),
    )


def _ranking(source: str, read: int) -> tuple[Any, ...]:
    """The columns ranking reads: the source, the id, when it was written (recency breaks
    ties), and with `read` 2 the text (an identifier or phrase is checked on it: a task's
    title and body, as the index read them)."""
    of = _HIT_COLUMNS[source]
    columns = (_source_column(source), of["id"].label("id"), of["at"].label("at"))
    if read != 2:
        return columns
    text = of["text"] + "\n" + of["body"] if "body" in of else of["text"]
    return (*columns, text.label("text"))


def _source_column(source: str) -> Any:
    # The source is one of SOURCES' names, never a value from outside.
    return literal_column(f"'{source}'").label("source")


@lru_cache(maxsize=256)
def statement(shape: Shape) -> Any:
    """The rows of `shape.source` among the ids bound as `shape.ids` that its scope lets
    through."""
    if shape.read:
        wanted = _ranking(shape.source, shape.read)
        plain = replace(shape, read=0)
        return statement(plain).with_only_columns(*wanted, maintain_column_froms=True)
    if shape.array:
        ids: Any = bindparam(shape.ids, type_=ARRAY(BigInteger))

        def among(column: Any) -> Any:
            return column == any_(ids)
    else:
        ids = bindparam(shape.ids, expanding=True)

        def among(column: Any) -> Any:
            return column.in_(ids)

    if shape.source == "notes":
        project: Any = bindparam("project") if shape.project else None
        where = [
            among(notes.c.id),
            *scope_clauses(shape.sides_on, shape.inbox, bindparam("side"), project),
        ]
        if shape.kinds:
            where.append(notes.c.kind.in_(shape.kinds))
        if not shape.include_all:
            where += true_today(bindparam("day"))
        return select(*_hit_columns("notes")).where(*where)
    if shape.source == "session_words":
        where = [among(sessions.c.id), sessions.c.last_word.is_not(None), *_session_scope(shape)]
        return select(*_hit_columns("session_words")).where(*where)
    if shape.source == "compactions":
        c = session_compactions
        frm = c.join(sessions, sessions.c.id == c.c.session_id)
        where = [among(c.c.id), c.c.summary.is_not(None), *_session_scope(shape)]
        return select(*_hit_columns("compactions")).select_from(frm).where(*where)
    where = [among(tasks.c.id)]
    if shape.sides_on:
        where.append(tasks.c.side == bindparam("side"))
    if shape.project:
        where.append(tasks.c.project == bindparam("project"))
    return select(*_hit_columns("tasks")).where(*where)


@lru_cache(maxsize=256)
def _union(shapes: tuple[Shape, ...]) -> Any:
    """The statements of `shapes` as one."""
    if len(shapes) == 1:
        return statement(shapes[0])
    return union_all(*(statement(shape) for shape in shapes))


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

    def parts(self) -> tuple[str, ...] | None:
        """The index's parts (db/recall_tables.py) whose counts weigh this reader's terms:
        its side's, the inbox's (''), every part with no sides configured (None), none for a
        reader placed nowhere."""
        scope = self.scope
        if not scope.sides_on:
            return None
        if scope.inbox:
            return ("",)
        return (scope.side,) if scope.side else ()

    def seen(
        self, conn: Connection, wanted: Mapping[str, Sequence[int]], text: bool
    ) -> dict[tuple[str, int], tuple[datetime, str | None]]:
        """Of the items `wanted` (ids by source), those this reader may see: when each was
        written, and its text if asked. One statement for all sources (a round trip counts
        on PostgreSQL)."""
        rows = self._read(conn, wanted, 2 if text else 1)
        return {
            (str(row.source), int(row.id)): (row.at, row.text if text else None) for row in rows
        }

    def hits(
        self, conn: Connection, wanted: Mapping[str, Sequence[int]]
    ) -> dict[tuple[str, int], Hit]:
        """The items `wanted` (ids by source) that this reader may see, as hits, read in one
        statement."""
        rows = self._read(conn, wanted, 0)
        make = {
            "notes": self._note,
            "session_words": self._last_word,
            "compactions": self._compaction,
            "tasks": _task,
        }
        return {(str(row.source), int(row.id)): make[row.source](row) for row in rows}

    def _read(self, conn: Connection, wanted: Mapping[str, Sequence[int]], read: int) -> Any:
        array = conn.dialect.name == "postgresql"
        shapes = tuple(self._shape(source, read, f"ids_{source}", array) for source in wanted)
        values = self._values()
        for source, ids in wanted.items():
            values[f"ids_{source}"] = list(ids)
        return conn.execute(_union(shapes), values).all()

    def _shape(self, source: str, read: int, ids: str, array: bool) -> Shape:
        note_kinds = tuple(k for k in NOTE_KINDS if k in self.kinds)
        return Shape(
            source=source,
            sides_on=self.scope.sides_on,
            inbox=self.scope.inbox,
            project=self.scope.project is not None,
            include_all=self.include_all if source == "notes" else False,
            kinds=() if note_kinds == NOTE_KINDS else note_kinds,
            read=read,
            ids=ids,
            array=array,
        )

    def _values(self) -> dict[str, Any]:
        """The scope's values, bound by name in every source's statement."""
        scope = self.scope
        values: dict[str, Any] = {}
        if scope.sides_on and not scope.inbox:
            values["side"] = scope.side
        if scope.project is not None:
            values["project"] = scope.project
        if not self.include_all:
            values["day"] = self.day
        return values

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
            at=row.at,
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
            at=row.at,
            text=row.text,
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
            text=row.text,
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
        at=row.at,
        text=f"{row.text}\n{row.body}" if row.body else row.text,
        side=row.side,
        project=row.project,
        status=row.status,
        origin=f"schedule {row.task_source.split(':')[1]}" if row.task_source else "backlog",
        true=True,
        label=None,
    )
