"""Recall's counts checked against the postings they count (db/recall_tables.py): per part
(an item's side, '' for none), each term's items and the corpus's items and length."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import Connection, func, select

from ondeck.db.recall_tables import (
    recall_corpus,
    recall_items,
    recall_postings,
    recall_term_docs,
    recall_terms,
)
from ondeck.db.tables import notes, session_compactions, sessions, tasks


def assert_counts_true(conn: Connection) -> None:
    """Each term's `docs` in a part is how many of the part's items hold it; each part's
    corpus how many items it has and their terms in all; each item counted in its side's
    part ('' for none) as it is now."""
    p, i, d, c = recall_postings, recall_items, recall_term_docs, recall_corpus
    held = {
        (int(t), str(part)): int(n)
        for t, part, n in conn.execute(
            select(p.c.term_id, i.c.part, func.count())
            .join(i, (i.c.source == p.c.source) & (i.c.item_id == p.c.item_id))
            .group_by(p.c.term_id, i.c.part)
        )
    }
    docs = {(int(t), str(part)): int(n) for t, part, n in conn.execute(select(d))}
    assert {k: n for k, n in docs.items() if n} == held
    items = {tuple(r) for r in conn.execute(select(p.c.source, p.c.item_id).distinct())}
    assert {tuple(r) for r in conn.execute(select(i.c.source, i.c.item_id))} == items
    lengths = {
        (str(s), int(n)): int(tf)
        for s, n, tf in conn.execute(
            select(p.c.source, p.c.item_id, func.sum(p.c.tf)).group_by(p.c.source, p.c.item_id)
        )
    }
    per_part: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for source, item_id, part, length in conn.execute(select(i)):
        assert lengths[(source, item_id)] == length
        assert part == (_side_of(conn, source, item_id) or "")
        per_part[part][0] += 1
        per_part[part][1] += length
    corpus = {str(part): [int(n), int(length)] for part, n, length in conn.execute(select(c))}
    assert {k: v for k, v in corpus.items() if v != [0, 0]} == dict(per_part)


def _side_of(conn: Connection, source: str, item_id: int) -> str | None:
    if source == "notes":
        return conn.execute(select(notes.c.side).where(notes.c.id == item_id)).scalar_one()
    if source == "tasks":
        return conn.execute(select(tasks.c.side).where(tasks.c.id == item_id)).scalar_one()
    if source == "session_words":
        return conn.execute(select(sessions.c.side).where(sessions.c.id == item_id)).scalar_one()
    sc = session_compactions
    return conn.execute(
        select(sessions.c.side).join(sc, sc.c.session_id == sessions.c.id).where(sc.c.id == item_id)
    ).scalar_one()


def term_docs(conn: Connection, term: str, parts: tuple[str, ...] | None = None) -> int:
    """How many items of `parts` (None: all) hold `term`."""
    t, d = recall_terms, recall_term_docs
    query = select(func.coalesce(func.sum(d.c.docs), 0)).join(t, t.c.id == d.c.term_id)
    query = query.where(t.c.term == term)
    if parts is not None:
        query = query.where(d.c.part.in_(parts))
    return int(conn.execute(query).scalar_one())
