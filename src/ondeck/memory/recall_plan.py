"""Recall on PostgreSQL: which statement to run first. pg_trgm keeps no statistics, so
how common a term is is found out by reading: the newest rows first, the trigram indexes
for a rare term, and what the first source found guides the next ones. SQLite runs its one
statement (its FTS tables say how many rows match as they go)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import Connection

from ondeck.core.memory import Scope
from ondeck.memory import recall_sql
from ondeck.memory.recall_patterns import Shape, anchor, cased, length, match_values
from ondeck.memory.recall_sql import statement


def found_rows(
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
    guess: Guess | None = None,
) -> Any:
    guess = guess if guess is not None else Guess()
    shape = Shape(
        dialect=conn.dialect.name,
        source=source,
        lengths=tuple(length(t) for t in terms),
        cased=tuple(cased(t) for t in terms),
        ascii=tuple(t.isascii() for t in terms),
        anchored=tuple(anchor(t) is not None for t in terms),
        sides_on=scope.sides_on,
        inbox=scope.inbox,
        project=scope.project is not None,
        skip=bool(skip),
        include_all=include_all,
        kinds=kinds,
    )
    values = {**match_values(shape, terms), "limit": limit}
    if scope.sides_on and not scope.inbox:
        values["side"] = scope.side
    if scope.project is not None:
        values["project"] = scope.project
    if skip:
        values["skip"] = list(skip)
    if source == "notes" and not include_all:
        values["day"] = day
    if shape.dialect != "postgresql":
        return conn.execute(statement(shape), values).all()
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
        capped = conn.execute(statement(shape, "capped"), values).all()
        if capped[0].candidates <= recall_sql.CAP:
            return [row for row in capped if row.id is not None]
    window = statement(shape, "window")
    # A term the first source found in part of a page: the next sources read as many newest
    # rows as its rate says a page needs at once (the read stops when the page is full).
    first = guess.span or recall_sql.WINDOW
    rows = conn.execute(window, {**values, "near": 0, "far": first}).all()
    if guess.rare is None:
        # Rare: under a quarter of a page in the newest rows (a term that nearly fills it
        # there is common in the longer texts of the other sources: measured, 승인's 18 of
        # 21 in notes made the next three sources' index reads cost 6 ms each).
        guess.rare = len(rows) <= limit // 4
        if not guess.rare and len(rows) < limit:
            most = recall_sql.WINDOW + recall_sql.FURTHER
            guess.span = min(most, -(-limit * first * 3 // (2 * len(rows))))
    if len(rows) >= limit:
        return rows
    if rows:
        # Part of a page: at the rate found, how many older rows hold the rest (half as
        # many again, for chance). Up to WINDOW + FURTHER rows in all are read rather than
        # the index's every candidate, which for such a term (1 row in 100 to 1 in 400)
        # are hundreds, each checked where it lies (measured: 6-10 ms on 100,000 notes).
        wanted = limit - len(rows)
        span = -(-wanted * first * 3 // (2 * len(rows)))
        if first + span <= recall_sql.WINDOW + recall_sql.FURTHER:
            near = {"near": first, "far": first + span, "limit": wanted}
            older = conn.execute(window, {**values, **near}).all()
            if len(older) >= wanted:
                return [*rows, *older]
    _custom_plans(conn)
    return conn.execute(statement(shape, "rare"), values).all()


@dataclass(slots=True)
class Guess:
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
