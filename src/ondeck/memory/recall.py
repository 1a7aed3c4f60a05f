"""Recall: one full-text search over notes (and decisions and handoffs), compaction
summaries, sessions' last words and tasks' titles and bodies, within one side.

The query is split into terms at white space (a "quoted phrase" is one term); an item
matches when it holds every term as a substring, case folded: `배포` finds 배포했다 and
배포 일정, `ploy` finds deploy, `ondeck/db` finds src/ondeck/db/engine.py. Results are
ranked by match (items holding the whole query as typed first), then recency.

Each store's own machinery, kept in step with the rows in the same transaction (migration
0004; the names in db/fulltext.py):

- terms of 3+ characters: SQLite FTS5 `trigram` tables (`fts_<source>`), PostgreSQL
  `pg_trgm` GIN indexes (`ix_<source>_trgm`) over the text with its ASCII letters lowered
  (migration 0006), under LIKE with the term lowered the same way (ILIKE for a term with
  other cased letters);
- terms of 2 characters (a two-syllable Korean word): the same over the text with every
  character doubled (SQLite `fts_<source>_pairs`, PostgreSQL the table `fts_pairs`), where
  the pair `ab` is the 4-character `aabb` (db/textpairs.py says why that is exact);
- a 1-character term is checked on the rows the other terms found (a query of 1-character
  terms only is refused: it would read everything).

Sides never mix (core/memory.py `Scope`): a note, session or compaction is searched only
in its side, and so is a task (its `side`, issue 21: a task still in the inbox is found by
nobody's recall); unclassified items only for a person asking for the inbox.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Integer,
    String,
    bindparam,
    column,
    func,
    literal_column,
    or_,
    select,
    table,
)

from ondeck.core.errors import InvalidInput
from ondeck.core.humanize import span
from ondeck.core.memory import NoteKind, NoteStatus, Scope
from ondeck.db.predicates import presumed_lost
from ondeck.db.tables import notes, session_compactions, sessions, tasks
from ondeck.memory.notes import check_scope

QUERY_MAX = 200
TERMS_MAX = 8
DEFAULT_LIMIT = 20
MAX_LIMIT = 200
SNIPPET = 160

# What can be searched, by the name `--kind` takes.
KINDS = ("note", "decision", "handoff", "compaction", "last_word", "task")
_NOTE_KINDS = frozenset({"note", "decision", "handoff"})
_NOTE_ORDER = ("note", "decision", "handoff")


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


@dataclass(frozen=True, slots=True)
class _Source:
    name: str  # stem of the FTS tables / trigram indexes (db/fulltext.py)
    key: Any  # the searched row's id column
    pg_text: str  # the text searched: migration 0006 indexes lower(<it> COLLATE "C")


_SOURCES = {
    "notes": _Source("notes", notes.c.id, "notes.text"),
    "tasks": _Source("tasks", tasks.c.id, "(tasks.title || chr(10) || tasks.body)"),
    "session_words": _Source("session_words", sessions.c.id, "sessions.last_word"),
    "compactions": _Source("compactions", session_compactions.c.id, "session_compactions.summary"),
}


def _escaped(text: str) -> str:
    """`text` matched as it is by LIKE (its `\\`, `%` and `_` escaped)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _like(term: str) -> str:
    return "%" + _escaped(term) + "%"


def _folded_like(term: str) -> str:
    """The LIKE pattern of `term` over migration 0006's indexed text (its ASCII letters
    lowered, nothing else): ASCII lowered as there; any other letter with case is any one
    character (`_`), since the index cannot fold it; it is checked by ILIKE afterwards. So
    `Émile` is asked as `_mile`, and `σύστημα` finds its candidates in any case."""
    out = []
    for ch in term:
        if not ch.isascii() and (ch.lower() != ch or ch.upper() != ch):
            out.append("_")
        else:
            out.append(_escaped(ch.lower()))
    return "%" + "".join(out) + "%"


def _fts_phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _pairs(term: str) -> str:
    return "".join(ch + ch for ch in term)


@dataclass(frozen=True, slots=True)
class _Shape:
    """What a search statement looks like; its values are bound at each call. Statements
    are built once per shape (`_statement`): a recall runs up to eight, and building them
    cost more than running them."""

    dialect: str
    source: str  # a key of _SOURCES
    lengths: tuple[int, ...]  # each term's length, 3 for 3 or more
    cased: tuple[bool, ...]  # each term: has upper or lower case letters
    ascii: tuple[bool, ...]  # each term: ASCII only
    sides_on: bool
    inbox: bool
    project: bool
    skip: bool
    anchored: tuple[bool, ...] = ()  # PostgreSQL, each term: has an `_anchor`
    include_all: bool = False  # notes only
    kinds: tuple[str, ...] = ()  # notes only: the kinds asked for (empty: all)


def _length(term: str) -> int:
    return min(len(term), 3)


def _cased(term: str) -> bool:
    return term.lower() != term or term.upper() != term


_UNCASED_RUN = re.compile(r"[^A-Za-z\s]+")


def _anchor(term: str) -> str | None:
    """An ASCII term's longest run of characters without case (digits, signs; not white
    space): every text holding the term, in any case, holds it as it is."""
    if not (term.isascii() and _cased(term)):
        return None
    return max(_UNCASED_RUN.findall(term), key=len, default=None)


def _match(shape: _Shape) -> tuple[Any | None, list[Any], Any]:
    """(the FTS table to read matches from, or None; WHERE clauses; the newest-first order)
    for a source's rows holding every term (bound as t0, t1, … and `m`)."""
    source = _SOURCES[shape.source]
    if shape.dialect == "postgresql":
        # Every term on the text itself: exact (the indexes only find candidates).
        plain: Any = literal_column(source.pg_text)
        # Forms no index can answer: a plan made once for any pattern (psycopg prepares a
        # statement run five times) then reads the newest rows, never the trigram index
        # on a pattern it cannot see (a two-character one reads the whole index).
        clauses = []
        for i, cased in enumerate(shape.cased):
            value = bindparam(f"s{i}", type_=String)
            if not cased:
                # No upper and lower case (Korean, digits, signs): the term as it is.
                clauses.append(func.strpos(plain, value) > 0)
            elif shape.ascii[i]:
                # ASCII letters: the text's ASCII letters lowered (the C collation's lower,
                # byte by byte; ILIKE lowers all of a non-ASCII text by the locale first,
                # at 4 times the cost) against the term lowered. A term with signs or
                # digits (a path, a reference) first needs them as they are, which most
                # texts lack: checked without lowering a copy of each (measured: a path's
                # newest 2,000 notes read in 0.6 of the time).
                if i < len(shape.anchored) and shape.anchored[i]:
                    clauses.append(func.strpos(plain, bindparam(f"a{i}", type_=String)) > 0)
                clauses.append(func.strpos(func.lower(plain.collate("C")), value) > 0)
            else:
                clauses.append(plain.concat("").ilike(bindparam(f"t{i}", type_=String)))
        return None, clauses, source.key.desc()
    # SQLite: one FTS table drives (FTS5 gives its matches in rowid order, so LIMIT stops
    # early); the other terms are checked on the rows it gives, which are few by then.
    pairs = 3 not in shape.lengths
    name = f"fts_{source.name}_pairs" if pairs else f"fts_{source.name}"
    fts = table(name, column("rowid"), column(name))
    text = _sqlite_text(source)
    driven = 2 if pairs else 3
    where = [
        fts.c[name].op("MATCH")(bindparam("m", type_=String)),
        *(
            text.like(bindparam(f"t{i}", type_=String), escape="\\")
            for i, n in enumerate(shape.lengths)
            if n != driven
        ),
    ]
    return fts, where, fts.c.rowid.desc()


def _like_op(column_: Any, name: str, cased: bool) -> Any:
    """A term without upper and lower case (Korean, digits, signs) is matched with LIKE: the
    same answer, and PostgreSQL's ILIKE costs 4 times as much per row on text that is not
    ASCII (it lowers every row first)."""
    bound = bindparam(name, type_=String)
    return column_.ilike(bound) if cased else column_.like(bound)


def _candidates(shape: _Shape) -> Any:
    """PostgreSQL, a rare term: the ids the trigram indexes give for every term at once. Terms
    of 3 characters or more: the index on the text; else the doubled texts of `fts_pairs`
    (d<i>)."""
    source = _SOURCES[shape.source]
    long = [i for i, n in enumerate(shape.lengths) if n == 3]
    if long:
        # The indexes are over the text with its ASCII letters lowered (migration 0006), so
        # each term is asked with LIKE as `_folded_like` lowers it (`f<i>`); the match
        # clauses of `_statement` then check every candidate exactly.
        folded: ColumnElement[str] = func.lower(literal_column(source.pg_text).collate("C"))
        return select(source.key.label("id")).where(
            *(folded.like(bindparam(f"f{i}", type_=String)) for i in long)
        )
    two = [i for i, n in enumerate(shape.lengths) if n == 2]
    pairs = table("fts_pairs", column("source"), column("id"), column("pairs"))
    return select(pairs.c.id).where(
        pairs.c.source == literal_column(f"'{source.name}'"),
        *(_like_op(pairs.c.pairs, f"d{i}", shape.cased[i]) for i in two),
    )


def _match_values(shape: _Shape, terms: Sequence[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if shape.dialect == "postgresql":
        for i, term in enumerate(terms):
            values[f"t{i}"] = _like(term)
            values[f"s{i}"] = term.lower() if term.isascii() else term
            values[f"f{i}"] = _folded_like(term)
            anchor = _anchor(term)
            if anchor is not None:
                values[f"a{i}"] = anchor
            if len(term) == 2:
                values[f"d{i}"] = _like(_pairs(term))
        return values
    driven = 2 if 3 not in shape.lengths else 3
    values["m"] = " AND ".join(
        _fts_phrase(_pairs(t) if driven == 2 else t) for t in terms if _length(t) == driven
    )
    for i, term in enumerate(terms):
        if _length(term) != driven:
            values[f"t{i}"] = _like(term)
    return values


def _joined(driver: Any | None, source: Any, key: Any) -> Any:
    """FROM: the matches (SQLite's FTS table, PostgreSQL's candidates) joined to their
    rows, or the table itself."""
    if driver is None:
        return source
    return driver.join(source, key == (driver.c.rowid if "rowid" in driver.c else driver.c.id))


def _sqlite_text(source: _Source) -> Any:
    if source.name == "tasks":
        return tasks.c.title.concat("\n").concat(tasks.c.body)
    return {
        "notes": notes.c.text,
        "session_words": sessions.c.last_word,
        "compactions": session_compactions.c.summary,
    }[source.name]


_LIMIT = bindparam("limit", type_=Integer, literal_execute=True)


# --- scope, per source -------------------------------------------------------------------------


def _note_scope(shape: _Shape) -> list[Any]:
    where: list[Any] = []
    if shape.sides_on:
        where.append(notes.c.side.is_(None) if shape.inbox else notes.c.side == bindparam("side"))
    if shape.project:
        where.append(or_(notes.c.project == bindparam("project"), notes.c.project.is_(None)))
    return where


def _session_scope(shape: _Shape) -> list[Any]:
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


def _task_scope(shape: _Shape) -> list[Any]:
    """A task is in the side it was given (an inbox task, with no side, in none)."""
    where: list[Any] = []
    if shape.sides_on:
        where.append(tasks.c.side == bindparam("side"))
    if shape.project:
        where.append(tasks.c.project == bindparam("project"))
    return where


# --- the statements ----------------------------------------------------------------------------

_COLUMNS = {
    "notes": tuple(notes.c),
    "session_words": (
        sessions.c.id,
        sessions.c.external_id,
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


# PostgreSQL: how many of a table's newest rows are read first (see `_rows`). Fewer makes
# every rare term dearer (measured: 500 and 1,000 worse at the 95th percentile, 4,000 no
# better on the common ones).
WINDOW = 2_000
# PostgreSQL: how many candidates a term the search's first source found rare may give the
# next sources' indexes before they read their newest rows instead (see `_rows`): bounds
# what a wrong guess costs (a term rare in notes, common in compactions) to ~1-2 ms.
CAP = 500
# PostgreSQL: how many older rows a term that filled part of a page in the newest WINDOW
# may have read for the rest before the indexes are asked (see `_rows`).
FURTHER = 3 * WINDOW


@lru_cache(maxsize=512)
def _statement(shape: _Shape, strategy: str = "plain") -> Any:
    """`plain`: as the planner likes it (SQLite: the FTS table drives). PostgreSQL: `window`,
    the newest WINDOW rows only (read newest first, the terms checked on each); `rare`, the
    rows the trigram indexes give, then sorted (a MATERIALIZED CTE keeps the planner from
    reading the table newest first on a guess); `capped`, the same from CAP + 1 candidates
    at most, each row with the column `candidates` (how many there were: over CAP, the
    page may miss newer rows), and one row of None when the page is empty."""
    driver, where, order = _match(shape)
    source = _SOURCES[shape.source]
    key = source.key
    if strategy == "window":
        # The rows from `near` to `far` ids below the newest (one seek; a gap left by
        # deleted rows makes the window smaller, never the answer different: it holds
        # every row between its ends, so a page filled there and above is the newest page).
        newest = func.coalesce(select(func.max(key)).scalar_subquery(), 0)
        where = [
            key > newest - bindparam("far", type_=Integer),
            key <= newest - bindparam("near", type_=Integer),
            *where,
        ]
    matching: Any = None
    if strategy in ("rare", "capped"):
        # The candidates drive: sorted newest first, each row read by its key until the
        # page is full (never the table read newest first until enough are found, which
        # for a term with fewer matches than a page is the whole table).
        candidates = _candidates(shape)
        if strategy == "capped":
            candidates = candidates.limit(CAP + 1)
        matching = candidates.cte("matching").prefix_with("MATERIALIZED")
        driver = matching
        order = matching.c.id.desc()
    if shape.source == "notes":
        frm = _joined(driver, notes, key)
        where = [*_note_scope(shape), *where]
        if shape.kinds:
            where.append(notes.c.kind.in_(shape.kinds))
        if not shape.include_all:
            where += [
                notes.c.status == literal_column("'active'"),
                or_(notes.c.expires_on.is_(None), notes.c.expires_on >= bindparam("day")),
            ]
    elif shape.source == "session_words":
        frm = _joined(driver, sessions, key)
        where = [*_session_scope(shape), sessions.c.last_word.is_not(None), *where]
    elif shape.source == "compactions":
        c = session_compactions
        frm = _joined(driver, c, key).join(sessions, sessions.c.id == c.c.session_id)
        where = [c.c.summary.is_not(None), *_session_scope(shape), *where]
    else:
        frm = _joined(driver, tasks, key)
        where = [*_task_scope(shape), *where]
    if shape.skip:
        where.append(key.not_in(bindparam("skip", expanding=True)))
    found = (
        select(*_COLUMNS[shape.source]).select_from(frm).where(*where).order_by(order).limit(_LIMIT)
    )
    if strategy != "capped":
        return found
    # One row at least, whatever was found: the count of candidates, then the page's rows
    # (all None when the page is empty).
    page = found.lateral("page")
    counted = select(func.count().label("candidates")).select_from(matching).subquery("counted")
    return select(counted.c.candidates, *page.c).select_from(
        counted.outerjoin(page, literal_column("true"))
    )


def _rows(
    conn: Connection,
    source: str,
    terms: Sequence[str],
    scope: Scope,
    limit: int,
    skip: Sequence[int],
    *,
    day: date | None = None,
    include_all: bool = False,
    kinds: tuple[str, ...] = (),
    guess: _Guess | None = None,
) -> Any:
    guess = guess if guess is not None else _Guess()
    shape = _Shape(
        dialect=conn.dialect.name,
        source=source,
        lengths=tuple(_length(t) for t in terms),
        cased=tuple(_cased(t) for t in terms),
        ascii=tuple(t.isascii() for t in terms),
        anchored=tuple(_anchor(t) is not None for t in terms),
        sides_on=scope.sides_on,
        inbox=scope.inbox,
        project=scope.project is not None,
        skip=bool(skip),
        include_all=include_all,
        kinds=kinds,
    )
    values = {**_match_values(shape, terms), "limit": limit}
    if scope.sides_on and not scope.inbox:
        values["side"] = scope.side
    if scope.project is not None:
        values["project"] = scope.project
    if skip:
        values["skip"] = list(skip)
    if source == "notes" and not include_all:
        values["day"] = day
    if shape.dialect != "postgresql":
        return conn.execute(_statement(shape), values).all()
    # PostgreSQL cannot tell how common a term is (pg_trgm keeps no statistics), and a wrong
    # guess costs 100 ms either way: reading the table newest first for a rare term, or
    # the index's every candidate for a common one. So first the newest WINDOW rows: a
    # common term fills the page there; else the term is rare (under limit/WINDOW of the
    # rows), and the indexes give its few rows.
    if guess.rare:
        # The search's first source found these terms rare: the same words are likely rare
        # here too, and the indexes are asked first, for CAP candidates at most (else, a
        # term common here after all, the newest rows as for any term).
        _custom_plans(conn)
        capped = conn.execute(_statement(shape, "capped"), values).all()
        if capped[0].candidates <= CAP:
            return [row for row in capped if row.id is not None]
    window = _statement(shape, "window")
    # A term the first source found in part of a page: the next sources read as many newest
    # rows as its rate says a page needs at once (the read stops when the page is full).
    first = guess.span or WINDOW
    rows = conn.execute(window, {**values, "near": 0, "far": first}).all()
    if guess.rare is None:
        # Rare: under a quarter of a page in the newest rows (a term that nearly fills it
        # there is common in the longer texts of the other sources: measured, 승인's 18 of
        # 21 in notes made the next three sources' index reads cost 6 ms each).
        guess.rare = len(rows) <= limit // 4
        if not guess.rare and len(rows) < limit:
            guess.span = min(WINDOW + FURTHER, -(-limit * first * 3 // (2 * len(rows))))
    if len(rows) >= limit:
        return rows
    if rows:
        # Part of a page: at the rate found, how many older rows hold the rest (half as
        # many again, for chance). Up to WINDOW + FURTHER rows in all are read rather than
        # the index's every candidate, which for such a term (1 row in 100 to 1 in 400)
        # are hundreds, each checked where it lies (measured: 6-10 ms on 100,000 notes).
        wanted = limit - len(rows)
        span = -(-wanted * first * 3 // (2 * len(rows)))
        if first + span <= WINDOW + FURTHER:
            near = {"near": first, "far": first + span, "limit": wanted}
            older = conn.execute(window, {**values, **near}).all()
            if len(older) >= wanted:
                return [*rows, *older]
    _custom_plans(conn)
    return conn.execute(_statement(shape, "rare"), values).all()


@dataclass(slots=True)
class _Guess:
    """PostgreSQL, one search: whether its terms were rare in the first source searched
    (None: not known yet). Words rare in notes are rare in sessions' last words, compaction
    summaries and tasks alike (they are written from the same work): the next sources ask
    their indexes first, and skip reading newest rows that would hold nothing. Only what
    is read first changes, never the answer."""

    rare: bool | None = None
    span: int | None = None  # how many newest rows the next sources read first


def _custom_plans(conn: Connection) -> None:
    """A rare term's statement is planned for its own pattern, not once for any: psycopg
    prepares a statement run five times, and PostgreSQL may then keep a generic plan
    (default selectivity, the trigram index left aside): 20 ms became 600. The reads of the
    newest rows keep their generic plans (the same for any pattern, and planning them
    again each time costs more than running them). Set once per transaction."""
    transaction = conn.get_transaction()
    if conn.info.get("custom_plans") is not transaction:
        conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_custom_plan")
        conn.info["custom_plans"] = transaction


# --- searching ---------------------------------------------------------------------------------


def _note_hits(rows: Any, day: date, whole: bool) -> list[Hit]:
    hits = []
    for row in rows:
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
    guess: _Guess,
) -> list[Hit]:
    wanted = tuple(k for k in _NOTE_ORDER if k in kinds) if kinds else _NOTE_ORDER
    if not wanted:
        return []
    rows = _rows(
        conn,
        "notes",
        terms,
        scope,
        limit,
        skip,
        day=day,
        include_all=include_all,
        kinds=() if wanted == _NOTE_ORDER else wanted,
        guess=guess,
    )
    return _note_hits(rows, day, whole)


def _search_sessions(
    conn: Connection,
    terms: Sequence[str],
    scope: Scope,
    limit: int,
    whole: bool,
    skip: Sequence[int],
    guess: _Guess,
    lost_before: datetime | None = None,
) -> list[Hit]:
    return [
        Hit(
            kind="last_word",
            id=row.id,
            session_id=row.id,
            at=row.last_word_at or row.last_seen_at,
            text=row.last_word,
            side=row.side,
            project=row.project,
            status=_session_status(row, lost_before),
            origin=f"session {row.id}'s last word ({row.external_id[:12]})",
            true=True,
            label=None,
            whole=whole,
        )
        for row in _rows(conn, "session_words", terms, scope, limit, skip, guess=guess)
    ]


def _session_status(row: Any, lost_before: datetime | None) -> str:
    """The session's status as it is shown (db/predicates.SESSION_PRESUMED_LOST)."""
    if lost_before is not None and presumed_lost(row.status, row.last_seen_at, lost_before):
        return "lost"
    return str(row.status)


def _search_compactions(
    conn: Connection,
    terms: Sequence[str],
    scope: Scope,
    limit: int,
    whole: bool,
    skip: Sequence[int],
    guess: _Guess,
    lost_before: datetime | None = None,
) -> list[Hit]:
    return [
        Hit(
            kind="compaction",
            id=row.id,
            session_id=row.session_id,
            at=row.at,
            text=row.summary,
            side=row.side,
            project=row.project,
            status=_session_status(row, lost_before),
            origin=f"Claude's compaction summary in session {row.session_id}",
            true=True,
            label=None,
            whole=whole,
        )
        for row in _rows(conn, "compactions", terms, scope, limit, skip, guess=guess)
    ]


def _search_tasks(
    conn: Connection,
    terms: Sequence[str],
    scope: Scope,
    limit: int,
    whole: bool,
    skip: Sequence[int],
    guess: _Guess,
) -> list[Hit]:
    if scope.sides_on and scope.inbox:
        return []  # an inbox task waits for its side on the Backlog, not in recall
    return [
        Hit(
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
            whole=whole,
        )
        for row in _rows(conn, "tasks", terms, scope, limit, skip, guess=guess)
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
    lost_before: datetime | None = None,
) -> Recall:
    """Search everything `scope` may see for `text`: ranked by match, then recency. A hit's
    session silent since before `lost_before` is shown lost (sessions.lost_before)."""
    query = parse_query(text)
    scope = check_scope(scope)
    wanted = parse_kinds(list(kinds))
    limit = max(1, min(int(limit), MAX_LIMIT))
    result = Recall(query=query, scope=scope, kinds=wanted, include_all=include_all, limit=limit)
    room = limit + 1  # one more than shown per source: tells whether there is more
    seen: dict[str, list[int]] = {name: [] for name in _BUCKETS.values()}

    def search(terms: tuple[str, ...], whole: bool) -> list[Hit]:
        batch: list[Hit] = []
        guess = _Guess()
        batch += _search_notes(
            conn, terms, scope, day, wanted, include_all, room, whole, seen["notes"], guess
        )
        if not wanted or "last_word" in wanted:
            batch += _search_sessions(
                conn, terms, scope, room, whole, seen["sessions"], guess, lost_before
            )
        if not wanted or "compaction" in wanted:
            batch += _search_compactions(
                conn, terms, scope, room, whole, seen["compactions"], guess, lost_before
            )
        if not wanted or "task" in wanted:
            batch += _search_tasks(conn, terms, scope, room, whole, seen["tasks"], guess)
        return batch

    def newest(hits: list[Hit]) -> list[Hit]:
        return sorted(hits, key=lambda h: (h.at, h.id), reverse=True)

    phrase = query.phrase
    every = search(query.terms, phrase is None)
    complete = all(sum(1 for h in every if _BUCKETS[h.kind] == bucket) <= limit for bucket in seen)
    if phrase is None or complete:
        # Every match is in hand (or there is no phrase): rank them here, the whole query
        # as typed first, then recency.
        folded = phrase.casefold() if phrase else None
        ranked = [
            Hit(**{**_fields(h), "whole": folded in " ".join(h.text.split()).casefold()})
            if folded
            else h
            for h in every
        ]
        ordered = sorted(ranked, key=lambda h: (h.whole, h.at, h.id), reverse=True)
        result.hits = ordered[:limit]
        result.more = not complete or len(ordered) > limit
        return result
    # More matches than one page: the items holding the whole query are asked for first,
    # then the page is filled with the newest of the others.
    first = search((phrase,), True)
    for hit in first:
        seen[_BUCKETS[hit.kind]].append(hit.id)
    rest = [h for h in every if h.id not in seen[_BUCKETS[h.kind]]]
    if len(first) < limit and len(rest) < limit:
        rest = search(query.terms, False)
    found = newest(first) + newest(rest)
    result.hits = found[:limit]
    result.more = True
    return result


_BUCKETS = {
    "note": "notes",
    "decision": "notes",
    "handoff": "notes",
    "last_word": "sessions",
    "compaction": "compactions",
    "task": "tasks",
}


def _fields(hit: Hit) -> dict[str, Any]:
    return {name: getattr(hit, name) for name in Hit.__dataclass_fields__}
