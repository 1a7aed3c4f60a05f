"""Recall: one full-text search over notes (and decisions and handoffs), compaction
summaries, sessions' last words and tasks' titles and bodies, within one side.

The query is split into terms at white space (a "quoted phrase" is one term); an item
matches when it holds every term as a substring, case folded: `배포` finds 배포했다 and
배포 일정, `ploy` finds deploy, `ondeck/db` finds src/ondeck/db/engine.py. Results are
ranked by match (items holding the whole query as typed first), then recency.

Each store's own machinery, kept in step with the rows in the same transaction (migration
0004; the names in db/fulltext.py):

- terms of 3+ characters: SQLite FTS5 `trigram` tables (`fts_<source>`), PostgreSQL
  `pg_trgm` GIN indexes (`ix_<source>_trgm`) under ILIKE;
- terms of 2 characters (a two-syllable Korean word): the same over the text with every
  character doubled (`fts_<source>_pairs`, `ix_<source>_pairs`), where the pair `ab` is the
  4-character `aabb` (db/textpairs.py says why that is exact);
- a 1-character term is checked on the rows the other terms found (a query of 1-character
  terms only is refused: it would read everything).

Sides never mix (core/memory.py `Scope`): a note, session or compaction is searched only
in its side; a task (tasks have no side) only when its project's sessions all live in the
side asked for; unclassified items only for a person asking for the inbox.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from typing import Any

from sqlalchemy import Connection, column, exists, literal_column, not_, select, table

from ondeck.core.errors import InvalidInput
from ondeck.core.humanize import span
from ondeck.core.memory import NoteKind, NoteStatus, Scope
from ondeck.db.tables import notes, session_compactions, sessions, tasks
from ondeck.services.notes import check_scope, in_scope, true_today

QUERY_MAX = 200
TERMS_MAX = 8
DEFAULT_LIMIT = 20
MAX_LIMIT = 200
SNIPPET = 160

# What can be searched, by the name `--kind` takes.
KINDS = ("note", "decision", "handoff", "compaction", "last_word", "task")
_NOTE_KINDS = frozenset({"note", "decision", "handoff"})


# --- the query -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Query:
    text: str  # as typed, white space collapsed
    terms: tuple[str, ...]

    @property
    def phrase(self) -> str | None:
        """The whole query, when it is more than one term: matching it ranks first."""
        return self.text if len(self.terms) > 1 and len(self.text) >= 2 else None


_TERM = re.compile(r'"([^"]*)"|(\S+)')


def parse_query(text: str | None) -> Query:
    raw = " ".join(str(text or "").split())
    if not raw:
        raise InvalidInput("give something to recall: one or more words")
    if len(raw) > QUERY_MAX:
        raise InvalidInput(f"the query is {len(raw)} characters long; at most {QUERY_MAX}")
    if "\x00" in raw:
        raise InvalidInput("the query must not contain NUL characters")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("the query is not valid text (lone surrogate characters)") from None
    terms: list[str] = []
    for quoted, bare in _TERM.findall(raw):
        term = (quoted if quoted else bare).strip()
        if term and term.casefold() not in (t.casefold() for t in terms):
            terms.append(term)
    if not terms:
        raise InvalidInput("give something to recall: one or more words")
    if len(terms) > TERMS_MAX:
        raise InvalidInput(f"the query has {len(terms)} terms; at most {TERMS_MAX}")
    if all(len(t) < 2 for t in terms):
        raise InvalidInput(
            "give at least one term of 2 characters or more: a single character would match "
            "nearly everything"
        )
    return Query(
        text=" ".join(quoted or bare for quoted, bare in _TERM.findall(raw)), terms=tuple(terms)
    )


def parse_kinds(values: Sequence[str] | str | None) -> tuple[str, ...]:
    if values is None:
        return ()
    items = values.split(",") if isinstance(values, str) else list(values)
    found: list[str] = []
    for item in items:
        name = str(item).strip().lower().replace("-", "_")
        if not name:
            continue
        if name not in KINDS:
            raise InvalidInput(f"kind {str(item)[:30]!r} is not one of {', '.join(KINDS)}")
        if name not in found:
            found.append(name)
    return tuple(found)


# --- results ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Hit:
    kind: str  # one of KINDS
    id: int  # the note's, compaction's, session's or task's id
    session_id: int | None
    at: datetime  # when it was written (for a note: last changed)
    text: str  # the whole text searched
    side: str | None
    project: str | None
    status: str  # a note's status as true today; a task's; a session's
    origin: str
    true: bool  # may be taken as true (false: superseded, wrong or expired, labelled)
    label: str | None  # why it is not true, in words
    whole: bool  # held the whole query as typed

    @property
    def ref(self) -> str:
        if self.kind in _NOTE_KINDS:
            return f"note {self.id}"
        if self.kind == "compaction":
            return f"session {self.session_id} compaction {self.id}"
        if self.kind == "last_word":
            return f"session {self.id}"
        return f"task {self.id}"

    def snippet(self, terms: Sequence[str]) -> str:
        return snippet(self.text, terms)

    def to_json(self, zone: tzinfo, now: datetime, terms: Sequence[str]) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "ref": self.ref,
            "session_id": self.session_id,
            "at": self.at.astimezone(zone).isoformat(),
            "age": age(self.at, now),
            "side": self.side,
            "project": self.project,
            "status": self.status,
            "true": self.true,
            "label": self.label,
            "origin": self.origin,
            "whole_query": self.whole,
            "snippet": self.snippet(terms),
        }


@dataclass(kw_only=True)
class Recall:
    query: Query
    scope: Scope
    kinds: tuple[str, ...]
    include_all: bool
    limit: int
    hits: list[Hit] = field(default_factory=list)
    more: bool = False  # more matches than shown (a bigger --limit shows them)

    def to_json(self, zone: tzinfo, now: datetime) -> dict[str, Any]:
        return {
            "query": self.query.text,
            "terms": list(self.query.terms),
            "scope": {
                "side": self.scope.side,
                "project": self.scope.project,
                "unclassified": self.scope.inbox,
            },
            "kinds": list(self.kinds) or list(KINDS),
            "all": self.include_all,
            "limit": self.limit,
            "more": self.more,
            "results": [h.to_json(zone, now, self.query.terms) for h in self.hits],
        }


def age(at: datetime, now: datetime) -> str:
    return "now" if abs((now - at).total_seconds()) < 5 else f"{span(now - at)} ago"


def snippet(text: str, terms: Sequence[str], width: int = SNIPPET) -> str:
    """One line around the first term found (case folded), `…` where it was cut."""
    flat = " ".join(text.split())
    folded = flat.casefold()
    where = min((i for i in (folded.find(t.casefold()) for t in terms) if i >= 0), default=0)
    start = max(0, where - width // 3)
    end = min(len(flat), start + width)
    start = max(0, end - width)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


# --- the machinery, per store ----------------------------------------------------------------

_PG_PAIRS = "regexp_replace({e}, '(.)', '\\1\\1', 'g')"


@dataclass(frozen=True, slots=True)
class _Source:
    name: str  # stem of the FTS tables / trigram indexes (db/fulltext.py)
    key: Any  # the searched row's id column
    pg_text: str  # exactly the indexed expression of migration 0004


_SOURCES = {
    "notes": _Source("notes", notes.c.id, "notes.text"),
    "tasks": _Source("tasks", tasks.c.id, "(tasks.title || chr(10) || tasks.body)"),
    "session_words": _Source("session_words", sessions.c.id, "sessions.last_word"),
    "compactions": _Source("compactions", session_compactions.c.id, "session_compactions.summary"),
}


def _like(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _fts_phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _pairs(term: str) -> str:
    return "".join(ch + ch for ch in term)


def _matching(dialect: str, source: _Source, terms: Sequence[str]) -> list[Any]:
    """WHERE clauses: the source's row holds every term."""
    clauses: list[Any] = []
    if dialect == "postgresql":
        plain = literal_column(source.pg_text)
        doubled = literal_column(_PG_PAIRS.format(e=source.pg_text))
        for term in terms:
            if len(term) == 2:
                clauses.append(doubled.ilike(_like(_pairs(term))))
            else:
                clauses.append(plain.ilike(_like(term)))
        return clauses
    long = [t for t in terms if len(t) >= 3]
    two = [t for t in terms if len(t) == 2]
    one = [t for t in terms if len(t) == 1]
    for name, group in ((f"fts_{source.name}", long), (f"fts_{source.name}_pairs", two)):
        if not group:
            continue
        fts = table(name, column("rowid"), column(name))
        doubled = name.endswith("_pairs")
        expression = " AND ".join(_fts_phrase(_pairs(t) if doubled else t) for t in group)
        clauses.append(
            source.key.in_(select(fts.c.rowid).where(fts.c[name].op("MATCH")(expression)))
        )
    if one:
        text = _sqlite_text(source)
        clauses += [text.like(_like(t), escape="\\") for t in one]
    return clauses


def _sqlite_text(source: _Source) -> Any:
    if source.name == "tasks":
        return tasks.c.title.concat("\n").concat(tasks.c.body)
    return {
        "notes": notes.c.text,
        "session_words": sessions.c.last_word,
        "compactions": session_compactions.c.summary,
    }[source.name]


# --- scope, per source -------------------------------------------------------------------------


def _session_scope(scope: Scope, s: Any = sessions) -> list[Any]:
    where: list[Any] = []
    if scope.sides_on:
        where.append(
            literal_column(f"{s.name}.unclassified") if scope.inbox else s.c.side == scope.side
        )
    if scope.project is not None:
        where.append(s.c.project == scope.project)
    return where


def _task_scope(scope: Scope) -> list[Any] | None:
    """Tasks have no side: a task is in a side when its project's sessions all live there
    (ix_sessions_project_side answers per task). None: no task is in this scope."""
    where: list[Any] = []
    if scope.sides_on:
        if scope.inbox:
            return None
        mine = exists().where(sessions.c.project == tasks.c.project, sessions.c.side == scope.side)
        other = exists().where(sessions.c.project == tasks.c.project, sessions.c.side != scope.side)
        where += [tasks.c.project.is_not(None), mine, not_(other)]
    if scope.project is not None:
        where.append(tasks.c.project == scope.project)
    return where


# --- searching ---------------------------------------------------------------------------------


def _note_hits(conn: Connection, query: Any, day: date, whole: bool) -> list[Hit]:
    hits = []
    for row in conn.execute(query):
        kind = NoteKind(row.kind)
        status = NoteStatus(row.status)
        if status is NoteStatus.ACTIVE and row.expires_on and row.expires_on < day:
            status = NoteStatus.EXPIRED
        label = None
        if status is NoteStatus.SUPERSEDED:
            by = f" by note {row.superseded_by}" if row.superseded_by else ""
            label = f"SUPERSEDED{by}: not true any more"
        elif status is NoteStatus.WRONG:
            label = f"WRONG: {row.status_reason}"
        elif status is NoteStatus.EXPIRED:
            label = f"EXPIRED (after {row.expires_on.isoformat()}): may no longer hold"
        hits.append(
            Hit(
                kind=kind.value,
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
                whole=whole,
            )
        )
    return hits


def _search_notes(
    conn: Connection,
    terms: Sequence[str],
    scope: Scope,
    day: date,
    kinds: Sequence[str],
    include_all: bool,
    limit: int,
    whole: bool,
    skip: Sequence[int],
) -> list[Hit]:
    wanted = [k for k in kinds if k in _NOTE_KINDS] if kinds else list(_NOTE_KINDS)
    if not wanted:
        return []
    where = [*in_scope(scope), *_matching(conn.dialect.name, _SOURCES["notes"], terms)]
    if len(wanted) < len(_NOTE_KINDS):
        where.append(notes.c.kind.in_(wanted))
    if not include_all:
        where += true_today(day)
    if skip:
        where.append(notes.c.id.not_in(skip))
    query = select(notes).where(*where).order_by(notes.c.id.desc()).limit(limit)
    return _note_hits(conn, query, day, whole)


def _search_sessions(
    conn: Connection,
    terms: Sequence[str],
    scope: Scope,
    limit: int,
    whole: bool,
    skip: Sequence[int],
) -> list[Hit]:
    where = [
        *_session_scope(scope),
        sessions.c.last_word.is_not(None),
        *_matching(conn.dialect.name, _SOURCES["session_words"], terms),
    ]
    if skip:
        where.append(sessions.c.id.not_in(skip))
    rows = conn.execute(
        select(
            sessions.c.id,
            sessions.c.external_id,
            sessions.c.last_word,
            sessions.c.last_word_at,
            sessions.c.last_seen_at,
            sessions.c.side,
            sessions.c.project,
            sessions.c.status,
        )
        .where(*where)
        .order_by(sessions.c.id.desc())
        .limit(limit)
    )
    return [
        Hit(
            kind="last_word",
            id=row.id,
            session_id=row.id,
            at=row.last_word_at or row.last_seen_at,
            text=row.last_word,
            side=row.side,
            project=row.project,
            status=row.status,
            origin=f"session {row.id}'s last word ({row.external_id[:12]})",
            true=True,
            label=None,
            whole=whole,
        )
        for row in rows
    ]


def _search_compactions(
    conn: Connection,
    terms: Sequence[str],
    scope: Scope,
    limit: int,
    whole: bool,
    skip: Sequence[int],
) -> list[Hit]:
    c = session_compactions
    where = [
        c.c.summary.is_not(None),
        *_session_scope(scope),
        *_matching(conn.dialect.name, _SOURCES["compactions"], terms),
    ]
    if skip:
        where.append(c.c.id.not_in(skip))
    rows = conn.execute(
        select(
            c.c.id,
            c.c.session_id,
            c.c.at,
            c.c.summary,
            sessions.c.external_id,
            sessions.c.side,
            sessions.c.project,
            sessions.c.status,
        )
        .select_from(c.join(sessions, sessions.c.id == c.c.session_id))
        .where(*where)
        .order_by(c.c.id.desc())
        .limit(limit)
    )
    return [
        Hit(
            kind="compaction",
            id=row.id,
            session_id=row.session_id,
            at=row.at,
            text=row.summary,
            side=row.side,
            project=row.project,
            status=row.status,
            origin=f"Claude's compaction summary in session {row.session_id}",
            true=True,
            label=None,
            whole=whole,
        )
        for row in rows
    ]


def _search_tasks(
    conn: Connection,
    terms: Sequence[str],
    scope: Scope,
    limit: int,
    whole: bool,
    skip: Sequence[int],
) -> list[Hit]:
    scoped = _task_scope(scope)
    if scoped is None:
        return []
    where = [*scoped, *_matching(conn.dialect.name, _SOURCES["tasks"], terms)]
    if skip:
        where.append(tasks.c.id.not_in(skip))
    rows = conn.execute(
        select(
            tasks.c.id,
            tasks.c.title,
            tasks.c.body,
            tasks.c.status,
            tasks.c.project,
            tasks.c.source,
            tasks.c.created_at,
        )
        .where(*where)
        .order_by(tasks.c.id.desc())
        .limit(limit)
    )
    return [
        Hit(
            kind="task",
            id=row.id,
            session_id=None,
            at=row.created_at,
            text=f"{row.title}\n{row.body}" if row.body else row.title,
            side=scope.side if scope.sides_on else None,
            project=row.project,
            status=row.status,
            origin=f"schedule {row.source.split(':')[1]}" if row.source else "backlog",
            true=True,
            label=None,
            whole=whole,
        )
        for row in rows
    ]


def recall(
    conn: Connection,
    text: str,
    scope: Scope,
    day: date,
    *,
    kinds: Sequence[str] = (),
    include_all: bool = False,
    limit: int = DEFAULT_LIMIT,
) -> Recall:
    """Search everything `scope` may see for `text`: ranked by match, then recency."""
    query = parse_query(text)
    scope = check_scope(scope)
    wanted = parse_kinds(list(kinds))
    limit = max(1, min(int(limit), MAX_LIMIT))
    result = Recall(query=query, scope=scope, kinds=wanted, include_all=include_all, limit=limit)
    # First the items holding the whole query as typed, then those holding every term.
    passes: list[tuple[tuple[str, ...], bool]] = []
    if query.phrase is not None:
        passes.append(((query.phrase,), True))
    passes.append((query.terms, query.phrase is None))
    seen: dict[str, list[int]] = {"notes": [], "sessions": [], "compactions": [], "tasks": []}
    found: list[Hit] = []
    full = False
    for terms, whole in passes:
        room = limit + 1  # one more than shown: tells whether there is more
        batch: list[Hit] = []
        batch += _search_notes(
            conn, terms, scope, day, wanted, include_all, room, whole, seen["notes"]
        )
        if not wanted or "last_word" in wanted:
            batch += _search_sessions(conn, terms, scope, room, whole, seen["sessions"])
        if not wanted or "compaction" in wanted:
            batch += _search_compactions(conn, terms, scope, room, whole, seen["compactions"])
        if not wanted or "task" in wanted:
            batch += _search_tasks(conn, terms, scope, room, whole, seen["tasks"])
        for hit in batch:
            bucket = (
                "notes"
                if hit.kind in _NOTE_KINDS
                else {"last_word": "sessions", "compaction": "compactions"}.get(hit.kind, "tasks")
            )
            seen[bucket].append(hit.id)
        batch.sort(key=lambda h: (h.at, h.id), reverse=True)
        found += batch
        full = full or len(batch) > limit
    result.hits = found[:limit]
    result.more = full or len(found) > limit
    return result


def to_lines(result: Recall, zone: tzinfo, now: datetime) -> list[str]:
    """For people and agents: one block per result, what it is, age, origin, status."""
    lines: list[str] = []
    for hit in result.hits:
        where = hit.project or ("(side-wide)" if hit.kind in _NOTE_KINDS else "-")
        head = f"[{hit.ref}] {hit.kind}, {age(hit.at, now)}, {where}, {hit.origin}"
        if hit.kind == "task":
            head += f", {hit.status}"
        if hit.label:
            head += f" — {hit.label}"
        lines.append(head)
        lines.append(f"    {hit.snippet(result.query.terms)}")
    return lines
