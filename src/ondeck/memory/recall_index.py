"""Recall's word index kept up to date: the items the triggers queued (db/recall_tables.py)
are read again, their terms counted (memory/recall_words.py) and their postings replaced.

Each posting carries its BM25 term weight (`impact`): how much the term says of this item
by how often it occurs and how long the item is. The length is taken against a fixed
typical length (`TYPICAL_LENGTH`) rather than the store's running average, so a weight
never changes after it is written and the best items of a common term are read from an
index in that order (and a weight says nothing of the other items of the store). How rare a
term is (its `docs` beside the corpus's) is counted per part, the item's side ('' for none,
the inbox), and read at each recall for the part the reader sees (memory/recall_rank.py):
what another side holds never moves a score. The corpus's length is counted per part too,
beside its items (an average for any reader, though no weight reads it).

An item's move to another side is queued like a change of its text (the triggers watch the
side: migration 0014; a session's move queues its compaction summaries too), so every door
that moves one (a note's side, `session move`, the inbox resolved, a `sqlite3` shell) moves
its counts: its old part's, kept in `recall_items`, go down, its new part's up.

Run before every recall (in its write transaction) and by the jobs tick; `ondeck db
upgrade` indexes the rows written before migrations 0012 and 0014 through the same queue.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, Table, bindparam, delete, select, tuple_, update
from sqlalchemy import text as sql_text

from ondeck.db.recall_tables import (
    recall_corpus,
    recall_items,
    recall_pending,
    recall_postings,
    recall_term_docs,
    recall_terms,
)
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


def _texts(conn: Connection, source: str, ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """The searched text of each item of `source` still there (a deleted one is absent), and
    its part: its side ('' for none; a compaction's is its session's)."""
    found: dict[int, tuple[str, str]] = {}
    for chunk in _chunks(ids):
        if source == "notes":
            query: Any = select(notes.c.id, notes.c.text, notes.c.side).where(notes.c.id.in_(chunk))
        elif source == "tasks":
            query = select(tasks.c.id, tasks.c.title + "\n" + tasks.c.body, tasks.c.side).where(
                tasks.c.id.in_(chunk)
            )
        elif source == "session_words":
            query = select(sessions.c.id, sessions.c.last_word, sessions.c.side).where(
                sessions.c.id.in_(chunk)
            )
        else:
            c = session_compactions
            query = (
                select(c.c.id, c.c.summary, sessions.c.side)
                .join_from(c, sessions, sessions.c.id == c.c.session_id)
                .where(c.c.id.in_(chunk))
            )
        for item_id, text, side in conn.execute(query):
            if text:
                found[int(item_id)] = (str(text), side or "")
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
            [{"term": t} for t in missing],
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
    # Per (term id, part): items holding the term, gained minus lost. Per part: items and
    # their terms, gained minus lost. An item that moved loses from its old part and gains
    # in its new one.
    delta: Counter[tuple[int, str]] = Counter()
    corpus: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    new: dict[tuple[str, int], tuple[str, Counter[str]]] = {}
    p, i = recall_postings, recall_items
    for source, ids in sorted(by_source.items()):
        ids.sort()
        before: dict[int, list[int]] = defaultdict(list)
        was: dict[int, tuple[str, int]] = {}
        for chunk in _chunks(ids):
            held = conn.execute(
                select(p.c.item_id, p.c.term_id).where(p.c.source == source, p.c.item_id.in_(chunk))
            )
            for item_id, term_id in held:
                before[int(item_id)].append(int(term_id))
            counted_as = conn.execute(
                select(i.c.item_id, i.c.part, i.c.length).where(
                    i.c.source == source, i.c.item_id.in_(chunk)
                )
            )
            for item_id, part, length in counted_as:
                was[int(item_id)] = (str(part), int(length))
            conn.execute(delete(p).where(p.c.source == source, p.c.item_id.in_(chunk)))
            conn.execute(delete(i).where(i.c.source == source, i.c.item_id.in_(chunk)))
        for item_id, (part, length) in was.items():
            delta.subtract((term_id, part) for term_id in before[item_id])
            corpus[part][0] -= 1
            corpus[part][1] -= length
        for item_id, (text, part) in _texts(conn, source, ids).items():
            found = counted(text)
            if found:
                new[(source, item_id)] = (part, found)
    ids_of = _term_ids(conn, {t for _part, found in new.values() for t in found})
    rows: list[tuple[int, str, int, int, int]] = []
    indexed: list[tuple[str, int, str, int]] = []
    for (source, item_id), (part, found) in new.items():
        length = sum(found.values())
        corpus[part][0] += 1
        corpus[part][1] += length
        indexed.append((source, item_id, part, length))
        for term, tf in found.items():
            term_id = ids_of[term]
            delta[(term_id, part)] += 1
            rows.append((term_id, source, item_id, tf, impact(tf, length)))
    if rows:
        _insert(conn, recall_postings, _POSTING_COLUMNS, rows)
    if indexed:
        _insert(conn, recall_items, _ITEM_COLUMNS, indexed)
    _count(
        conn,
        recall_term_docs,
        ("term_id", "part"),
        sorted((key, (d,)) for key, d in delta.items() if d),
    )
    _count(
        conn,
        recall_corpus,
        ("part",),
        sorted(((part,), (d, n)) for part, (d, n) in corpus.items() if d or n),
    )


_POSTING_COLUMNS = ("term_id", "source", "item_id", "tf", "impact")
_ITEM_COLUMNS = ("source", "item_id", "part", "length")


def _insert(
    conn: Connection, table: Table, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    if conn.dialect.name != "postgresql":
        conn.execute(table.insert(), [dict(zip(columns, r, strict=True)) for r in rows])
        return
    # PostgreSQL runs an INSERT per row (measured: about 75 µs each, three minutes for the
    # 2.6 million postings of 100,000 notes and their sessions); COPY takes them as one
    # stream, in this transaction.
    raw: Any = conn.connection.driver_connection
    copy_in = f"COPY {table.name} ({', '.join(columns)}) FROM STDIN"
    with raw.cursor() as cursor, cursor.copy(copy_in) as copy:
        for row in rows:
            copy.write_row(row)


# Each counted column's SQL type on PostgreSQL, for the arrays its changes are bound as.
_PG_TYPES = {"term_id": "bigint", "part": "varchar", "docs": "bigint", "length": "bigint"}


def _count(
    conn: Connection,
    table: Table,
    key: tuple[str, ...],
    changes: Sequence[tuple[tuple[Any, ...], tuple[int, ...]]],
) -> None:
    """Add each change to the counts of its key's row, in the order of their keys."""
    if not changes:
        return
    counts = tuple(c.name for c in table.columns if c.name not in key)
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
    # A row gained in is made first, at 0 (an upsert would not do: the row it would insert
    # is checked, counts >= 0, before its key is found taken); a row lost from was counted
    # by an earlier fold, so it is there.
    made = [
        dict(zip(key, k, strict=True)) | dict.fromkeys(counts, 0) for k, d in changes if max(d) > 0
    ]
    if made:
        conn.execute(insert(table).on_conflict_do_nothing(index_elements=list(key)), made)
    if conn.dialect.name != "postgresql":
        matches = [table.c[k] == bindparam(f"k_{k}") for k in key]
        conn.execute(
            update(table)
            .where(*matches)
            .values({c: table.c[c] + bindparam(f"d_{c}") for c in counts}),
            [
                {f"k_{n}": v for n, v in zip(key, k, strict=True)}
                | {f"d_{n}": v for n, v in zip(counts, d, strict=True)}
                for k, d in changes
            ],
        )
        return
    # Locked first in the order of their keys, so two folds at once lock them alike (and
    # neither waits for the other in a cycle: a row one of them made, the other waited for
    # when it came to make it too); then one statement for them all. The lock is the one an
    # UPDATE of the counts takes: a stronger one would wait for the key locks other folds'
    # rows hold on their terms (their foreign key), in no order.
    names = (*key, *counts)
    values = {n: [(*k, *d)[j] for k, d in changes] for j, n in enumerate(names)}
    arrays = ", ".join(f"CAST(:{n} AS {_PG_TYPES[n]}[])" for n in names)
    on = " AND ".join(f"t.{k} = c.{k}" for k in key)
    conn.execute(
        sql_text(
            f"SELECT 1 FROM {table.name} AS t JOIN unnest({arrays}) AS c({', '.join(names)})"
            f" ON {on} ORDER BY {', '.join(f't.{k}' for k in key)} FOR NO KEY UPDATE OF t"
        ),
        values,
    )
    sets = ", ".join(f"{c} = t.{c} + c.{c}" for c in counts)
    conn.execute(
        sql_text(
            f"UPDATE {table.name} AS t SET {sets}"
            f" FROM unnest({arrays}) AS c({', '.join(names)}) WHERE {on}"
        ),
        values,
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
