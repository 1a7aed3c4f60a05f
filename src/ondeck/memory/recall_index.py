"""Recall's word index kept up to date: the items the triggers queued (db/recall_tables.py)
are read again, their terms counted (memory/recall_words.py) and their postings replaced.

Each posting carries its BM25 term weight (`impact`): how much the term says of this item
by how often it occurs and how long the item is. The length is taken against a fixed
typical length (`TYPICAL_LENGTH`) rather than the store's running average, so a weight
never changes after it is written and the best items of a common term are read from an
index in that order. How rare a term is (its `docs` beside the corpus's) is the store's own
statistic, read at each recall (memory/recall_rank.py).

Run before every recall (in its write transaction) and by the jobs tick; `ondeck db
upgrade` indexes the rows written before migration 0012 through the same queue.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, delete, select, tuple_, update
from sqlalchemy import text as sql_text

from ondeck.db.recall_tables import recall_corpus, recall_pending, recall_postings, recall_terms
from ondeck.db.tables import notes, session_compactions, sessions, tasks
from ondeck.memory.recall_words import counted

# BM25's usual constants: how soon repeating a term stops adding weight, and how much an
# item's length discounts it.
K1 = 1.2
B = 0.75
# Index terms of a typical item, a little above the notes of bench/recall_quality.py
# (measured: 24 on average, 13 to 42), since sessions' last words and summaries run longer.
TYPICAL_LENGTH = 32
# Items folded per statement batch.
BATCH = 1_000
# Values bound in one IN list: well under SQLite's and psycopg's limits.
_CHUNK = 500


def impact(tf: int, length: int) -> int:
    """BM25's weight of a term occurring `tf` times in an item of `length` terms, in
    thousandths (an integer: the same on both stores, and ties are exact)."""
    norm = 1 - B + B * length / TYPICAL_LENGTH
    return max(1, round(1000 * tf * (K1 + 1) / (tf + K1 * norm)))


def _texts(conn: Connection, source: str, ids: Sequence[int]) -> dict[int, str]:
    """The searched text of each item of `source` still there (a deleted one is absent)."""
    found: dict[int, str] = {}
    for chunk in _chunks(ids):
        if source == "notes":
            query: Any = select(notes.c.id, notes.c.text).where(notes.c.id.in_(chunk))
        elif source == "tasks":
            query = select(tasks.c.id, tasks.c.title + "\n" + tasks.c.body).where(
                tasks.c.id.in_(chunk)
            )
        elif source == "session_words":
            query = select(sessions.c.id, sessions.c.last_word).where(sessions.c.id.in_(chunk))
        else:
            c = session_compactions
            query = select(c.c.id, c.c.summary).where(c.c.id.in_(chunk))
        for item_id, text in conn.execute(query):
            if text:
                found[int(item_id)] = str(text)
    return found


def _chunks(values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


def _claim(conn: Connection, most: int) -> list[tuple[str, int]]:
    """Take up to `most` queued items off the queue. On PostgreSQL a concurrent fold that
    took the same rows first is waited for, and they are not taken twice."""
    p = recall_pending
    batch = select(p.c.source, p.c.item_id).limit(most)
    taken = conn.execute(
        delete(p)
        .where(tuple_(p.c.source, p.c.item_id).in_(batch))
        .returning(p.c.source, p.c.item_id)
    ).all()
    return [(str(source), int(item_id)) for source, item_id in taken]


def _term_ids(conn: Connection, words: set[str]) -> dict[str, int]:
    """Each term's id, adding the terms never seen."""
    wanted = sorted(words)
    ids: dict[str, int] = {}
    for chunk in _chunks(wanted):
        ids.update(
            (str(t), int(i))
            for i, t in conn.execute(
                select(recall_terms.c.id, recall_terms.c.term).where(recall_terms.c.term.in_(chunk))
            )
        )
    missing = [t for t in wanted if t not in ids]
    if missing:
        if conn.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
        conn.execute(
            insert(recall_terms).on_conflict_do_nothing(index_elements=["term"]),
            [{"term": t, "docs": 0} for t in missing],
        )
        for chunk in _chunks(missing):
            ids.update(
                (str(t), int(i))
                for i, t in conn.execute(
                    select(recall_terms.c.id, recall_terms.c.term).where(
                        recall_terms.c.term.in_(chunk)
                    )
                )
            )
    return ids


def _fold(conn: Connection, items: Sequence[tuple[str, int]]) -> None:
    by_source: dict[str, list[int]] = defaultdict(list)
    for source, item_id in items:
        by_source[source].append(item_id)
    delta: Counter[int] = Counter()  # items holding each term, gained minus lost
    corpus = 0
    new: dict[tuple[str, int], Counter[str]] = {}
    p = recall_postings
    for source, ids in sorted(by_source.items()):
        ids.sort()
        before: dict[int, list[int]] = defaultdict(list)
        for chunk in _chunks(ids):
            held = conn.execute(
                select(p.c.item_id, p.c.term_id).where(p.c.source == source, p.c.item_id.in_(chunk))
            )
            for item_id, term_id in held:
                before[int(item_id)].append(int(term_id))
            conn.execute(delete(p).where(p.c.source == source, p.c.item_id.in_(chunk)))
        for term_ids in before.values():
            delta.subtract(term_ids)
        corpus -= len(before)
        for item_id, text in _texts(conn, source, ids).items():
            found = counted(text)
            if found:
                new[(source, item_id)] = found
    ids_of = _term_ids(conn, {t for found in new.values() for t in found})
    rows: list[tuple[int, str, int, int, int]] = []
    for (source, item_id), found in new.items():
        length = sum(found.values())
        corpus += 1
        for term, tf in found.items():
            term_id = ids_of[term]
            delta[term_id] += 1
            rows.append((term_id, source, item_id, tf, impact(tf, length)))
    if rows:
        _insert_postings(conn, rows)
    _count_docs(conn, sorted((t, d) for t, d in delta.items() if d))
    if corpus:
        c = recall_corpus
        conn.execute(update(c).where(c.c.id == 1).values(docs=c.c.docs + corpus))


_POSTING_COLUMNS = ("term_id", "source", "item_id", "tf", "impact")


def _insert_postings(conn: Connection, rows: Sequence[tuple[int, str, int, int, int]]) -> None:
    if conn.dialect.name != "postgresql":
        conn.execute(
            recall_postings.insert(), [dict(zip(_POSTING_COLUMNS, r, strict=True)) for r in rows]
        )
        return
    # PostgreSQL runs an INSERT per row (measured: about 75 µs each, three minutes for the
    # 2.6 million postings of 100,000 notes and their sessions); COPY takes them as one
    # stream, in this transaction.
    raw: Any = conn.connection.driver_connection
    copy_in = f"COPY recall_postings ({', '.join(_POSTING_COLUMNS)}) FROM STDIN"
    with raw.cursor() as cursor, cursor.copy(copy_in) as copy:
        for row in rows:
            copy.write_row(row)


def _count_docs(conn: Connection, changes: Sequence[tuple[int, int]]) -> None:
    """Add each (term id, change) to the term's `docs`, the terms in the order of their ids."""
    if not changes:
        return
    t = recall_terms
    if conn.dialect.name != "postgresql":
        conn.execute(
            update(t).where(t.c.id == bindparam("tid")).values(docs=t.c.docs + bindparam("d")),
            [{"tid": tid, "d": d} for tid, d in changes],
        )
        return
    # Locked first in the order of their ids, so two folds at once lock them alike (and
    # neither waits for the other in a cycle); then one statement for them all. The lock is
    # the one an UPDATE of `docs` takes: a stronger one would wait for the key locks other
    # folds' postings hold on their terms (their foreign key), in no order.
    ids = [tid for tid, _d in changes]
    conn.execute(
        sql_text("SELECT id FROM recall_terms WHERE id = ANY(:ids) ORDER BY id FOR NO KEY UPDATE"),
        {"ids": ids},
    )
    conn.execute(
        sql_text(
            "UPDATE recall_terms AS t SET docs = t.docs + c.d"
            " FROM unnest(CAST(:ids AS bigint[]), CAST(:ds AS integer[])) AS c(id, d)"
            " WHERE t.id = c.id"
        ),
        {"ids": ids, "ds": [d for _tid, d in changes]},
    )


def fold(conn: Connection, most: int | None = None) -> int:
    """Index what the queue holds (at most `most` items; None: all of it), in `conn`'s write
    transaction. Returns how many items were folded."""
    done = 0
    planned = False
    while most is None or done < most:
        room = BATCH if most is None else min(BATCH, most - done)
        items = _claim(conn, room)
        if not items:
            break
        if not planned and conn.dialect.name == "postgresql":
            # The postings grow under the fold's statements: a plan kept from when they were
            # few (psycopg prepares a statement run five times) would scan them all for each
            # batch (measured: 30,000 notes folded in 390 s, not 57). Undone by the end of
            # the transaction, or here.
            conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_custom_plan")
            planned = True
        _fold(conn, items)
        done += len(items)
    if planned:
        conn.exec_driver_sql("SET LOCAL plan_cache_mode = DEFAULT")
    return done


def waiting(conn: Connection) -> bool:
    """Whether the queue holds anything (a cheap look before taking a write lock)."""
    return conn.execute(select(recall_pending.c.source).limit(1)).first() is not None


def recall_step(engine: Engine, now: datetime, settings: Any) -> dict[str, Any]:
    """The jobs tick's recall step: index what was written since, a batch per transaction
    (a recall would do it first anyway; this keeps that first recall quick)."""
    from ondeck.db.engine import writing

    indexed = 0
    while True:
        with writing(engine) as conn:
            done = fold(conn, BATCH) if waiting(conn) else 0
        indexed += done
        if done < BATCH:
            return {"indexed": indexed}
