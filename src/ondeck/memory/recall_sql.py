"""Recall's statements, one per shape and strategy: the match clauses per store (SQLite's
FTS5 tables drive; PostgreSQL checks every term on the text, its trigram indexes giving
candidates), each source's scope, the columns it reads, and the four strategies
(`statement`) that recall_plan.py chooses between on PostgreSQL."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    String,
    bindparam,
    column,
    func,
    literal_column,
    select,
    table,
)

from ondeck.db.tables import notes, session_compactions, sessions, tasks
from ondeck.memory.notes_read import scope_clauses, true_today
from ondeck.memory.recall_patterns import SOURCES, Shape, Source


def _match(shape: Shape) -> tuple[Any | None, list[Any], Any]:
    """(the FTS table to read matches from, or None; WHERE clauses; the newest-first order)
    for a source's rows holding every term (bound as t0, t1, … and `m`)."""
    source = SOURCES[shape.source]
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
    text = sqlite_text(source)
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


def _candidates(shape: Shape) -> Any:
    """PostgreSQL, a rare term: the ids the trigram indexes give for every term at once. Terms
    of 3 characters or more: the index on the text; else the doubled texts of `fts_pairs`
    (d<i>)."""
    source = SOURCES[shape.source]
    long = [i for i, n in enumerate(shape.lengths) if n == 3]
    if long:
        # The indexes are over the text with its ASCII letters lowered (migration 0006), so
        # each term is asked with LIKE as `_folded_like` lowers it (`f<i>`); the match
        # clauses of `statement` then check every candidate exactly.
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


def _joined(driver: Any | None, source: Any, key: Any) -> Any:
    """FROM: the matches (SQLite's FTS table, PostgreSQL's candidates) joined to their
    rows, or the table itself."""
    if driver is None:
        return source
    return driver.join(source, key == (driver.c.rowid if "rowid" in driver.c else driver.c.id))


def sqlite_text(source: Source) -> Any:
    if source.name == "tasks":
        return tasks.c.title.concat("\n").concat(tasks.c.body)
    return {
        "notes": notes.c.text,
        "session_words": sessions.c.last_word,
        "compactions": session_compactions.c.summary,
    }[source.name]


_LIMIT = bindparam("limit", type_=Integer, literal_execute=True)


# --- scope, per source -------------------------------------------------------------------------


def _note_scope(shape: Shape) -> list[Any]:
    project: Any = bindparam("project") if shape.project else None
    return scope_clauses(shape.sides_on, shape.inbox, bindparam("side"), project)


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


def _task_scope(shape: Shape) -> list[Any]:
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


# PostgreSQL: how many of a table's newest rows are read first (see recall_plan.found_rows).
# Fewer makes every rare term dearer (measured: 500 and 1,000 worse at the 95th percentile,
# 4,000 no better on the common ones).
WINDOW = 2_000
# PostgreSQL: how many candidates a term the search's first source found rare may give the
# next sources' indexes before they read their newest rows instead (recall_plan.found_rows):
# bounds what a wrong guess costs (a term rare in notes, common in compactions) to ~1-2 ms.
CAP = 500
# PostgreSQL: how many older rows a term that filled part of a page in the newest WINDOW
# may have read for the rest before the indexes are asked (see recall_plan.found_rows).
FURTHER = 3 * WINDOW


@lru_cache(maxsize=512)
def statement(shape: Shape, strategy: str = "plain") -> Any:
    """`plain`: as the planner likes it (SQLite: the FTS table drives). PostgreSQL: `window`,
    the newest WINDOW rows only (read newest first, the terms checked on each); `rare`, the
    rows the trigram indexes give, then sorted (a MATERIALIZED CTE keeps the planner from
    reading the table newest first on a guess); `capped`, the same from CAP + 1 candidates
    at most, each row with the column `candidates` (how many there were: over CAP, the
    page may miss newer rows), and one row of None when the page is empty."""
    driver, where, order = _match(shape)
    source = SOURCES[shape.source]
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
            where += true_today(bindparam("day"))
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
