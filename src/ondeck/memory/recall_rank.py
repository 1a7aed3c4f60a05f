"""Recall's ranking: BM25 over the word index, the best first, read no deeper than needed.

An item's score is, over the query's words that it holds, how rare each word's terms are
(`idf`: from how many items hold the term, of all the items of the reader's side: the
counts of another side never reach a score) times how much the
term says of this item (its posting's `impact`, memory/recall_index.py). A word of several
terms (a Korean word's two-syllable pieces, an identifier's parts) shares its weight among
them, so it counts as one word. An identifier or a quoted phrase counts only where the item
holds it as typed; an item without a quoted phrase is no match.

Reading, exact either way: a query of several terms has its items' scores bounded in SQL
(per word its best choice, each term's impact times its share, in integers: the score
itself but for identifiers and phrases, so ties at the page's edge are few), the best
first; a query of
one term, or of terms too common to sum, reads each term's postings best first (`impact`
descending, from an index), deep enough that no unread item could rank in the page. Items
are then offered to the scope best first, and scored exactly, until the next could not rank
above the page. Weights are integers (thousandths) and the scores that order the items are
summed here in Python, so both stores rank alike to the last digit.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, bindparam, func, select
from sqlalchemy import text as sql_text

from ondeck.db.recall_tables import (
    SOURCES,
    recall_corpus,
    recall_postings,
    recall_term_docs,
    recall_terms,
)
from ondeck.memory.recall_query import Query

# A term held by at most this many items is read whole.
WHOLE = 512
# Several terms held by at most this many items in all are summed in SQL (measured on
# SQLite: about 1 µs a posting, grouping and all; reading best first cannot bound two
# common words together without reading both whole, which costs more).
SUMMED = 10_000
# How many of a common term's best postings are read first, and how much deeper each time
# that was not enough.
FIRST = 128
DEEPER = 8
_CHUNK = 500

Item = tuple[str, int]  # (source, id)
# Of the items given (ids by source), those in scope: {item: (when written, its text if
# asked)}.
Accept = Callable[[Mapping[str, Sequence[int]], bool], dict[Item, tuple[datetime, str | None]]]

# Scores are summed in millionths: weights (idf) and impacts are thousandths each.
SCALE = 1_000_000


@dataclass(slots=True)
class Ranked:
    item: Item
    at: datetime  # when it was written: recency breaks ties
    raw: float  # the score in millionths (what orders the items)
    # Per query word (by its index in Query.words): the terms it matched and its share.
    matched: dict[int, tuple[list[str], float]] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return self.raw / SCALE


def idf(docs: int, corpus: int) -> float:
    """BM25's weight of a term held by `docs` of `corpus` items (never negative)."""
    return math.log(1 + (corpus - docs + 0.5) / (docs + 0.5))


def weight_of(docs: int, corpus: int) -> int:
    """`idf` in thousandths: what a term weighs in a score (at least 1: a word every item
    holds still matches, last)."""
    return max(1, round(1000 * idf(docs, corpus)))


_TERMS: Any = bindparam("terms", expanding=True)
_T, _D, _C = recall_terms, recall_term_docs, recall_corpus
# A reader of one side (or the inbox): its part's counts, each term's one row. Made once (a
# statement built at each recall costs more than it runs on SQLite).
_IN_PART = (
    select(
        _T.c.id,
        _T.c.term,
        _D.c.docs,
        select(_C.c.docs).where(_C.c.part == bindparam("part")).scalar_subquery(),
    )
    .join_from(_T, _D, _D.c.term_id == _T.c.id)
    .where(_T.c.term.in_(_TERMS), _D.c.part == bindparam("part"), _D.c.docs > 0)
)


def _in_parts(every: bool) -> Any:
    """The counts summed over the parts bound as `parts`, or over every part."""
    docs = func.sum(_D.c.docs)
    corpus = select(func.sum(_C.c.docs))
    where = [_T.c.term.in_(_TERMS)]
    if not every:
        parts: Any = bindparam("parts", expanding=True)
        corpus = corpus.where(_C.c.part.in_(parts))
        where.append(_D.c.part.in_(parts))
    return (
        select(_T.c.id, _T.c.term, docs, corpus.scalar_subquery())
        .join_from(_T, _D, _D.c.term_id == _T.c.id)
        .where(*where)
        .group_by(_T.c.id, _T.c.term)
        .having(docs > 0)
    )


_IN_EVERY_PART = _in_parts(True)
_IN_PARTS = _in_parts(False)


def _stats(
    conn: Connection, terms: Sequence[str], parts: tuple[str, ...] | None
) -> tuple[dict[str, tuple[int, int]], int]:
    """({term: (id, docs)} of the terms the reader's `parts` hold, their corpus's size), in one
    statement (a round trip counts on PostgreSQL). `parts` None: every part (no sides)."""
    values: dict[str, Any] = {"terms": list(terms)}
    if parts is None:
        statement = _IN_EVERY_PART
    elif len(parts) == 1:
        statement, values["part"] = _IN_PART, parts[0]
    else:
        statement, values["parts"] = _IN_PARTS, list(parts)
    rows = conn.execute(statement, values).all()
    found = {str(term): (int(tid), int(n)) for tid, term, n, _corpus in rows}
    return found, int(rows[0][3] or 0) if rows else 0


_P = recall_postings
_SOURCES_BOUND: Any = bindparam("sources", expanding=True)


def _filtered(query: Any, sources: tuple[str, ...]) -> Any:
    return query if sources == SOURCES else query.where(_P.c.source.in_(_SOURCES_BOUND))


def _read_whole(conn: Connection, ids: Sequence[int], sources: tuple[str, ...]) -> list[Any]:
    query = _filtered(
        select(_P.c.term_id, _P.c.source, _P.c.item_id, _P.c.impact).where(
            _P.c.term_id.in_(bindparam("terms", expanding=True))
        ),
        sources,
    )
    return list(conn.execute(query, {"terms": list(ids), "sources": list(sources)}))


def _read_best(
    conn: Connection, term_id: int, depth: int, sources: tuple[str, ...]
) -> tuple[list[Any], bool]:
    """A term's `depth` best postings and every other of the last one's weight (so an unread
    posting weighs strictly less); and whether that was all of them."""
    cut = _filtered(
        select(_P.c.impact)
        .where(_P.c.term_id == bindparam("term"))
        .order_by(_P.c.impact.desc())
        .limit(1)
        .offset(bindparam("skip")),
        sources,
    ).scalar_subquery()
    query = _filtered(
        select(_P.c.term_id, _P.c.source, _P.c.item_id, _P.c.impact).where(
            _P.c.term_id == bindparam("term"), _P.c.impact >= func.coalesce(cut, 0)
        ),
        sources,
    )
    rows = list(conn.execute(query, {"term": term_id, "skip": depth - 1, "sources": list(sources)}))
    return rows, len(rows) < depth


def _read_for(conn: Connection, wanted: Sequence[tuple[int, str, int]]) -> list[Any]:
    """The postings there are of the (term id, source, item id) given: the terms read in part
    of the items found through others."""
    if conn.dialect.name == "postgresql":
        # One key lookup each, whatever the plan kept for the statement: read by the terms,
        # a plan made for a term of average size reads all of a common term's postings.
        pairs = {
            "terms": [t for t, _s, _i in wanted],
            "sources": [s for _t, s, _i in wanted],
            "items": [i for _t, _s, i in wanted],
        }
        return list(conn.execute(_PAIRS, pairs))
    query = select(_P.c.term_id, _P.c.source, _P.c.item_id, _P.c.impact).where(
        _P.c.term_id.in_(bindparam("terms", expanding=True)),
        _P.c.source == bindparam("source"),
        _P.c.item_id.in_(bindparam("items", expanding=True)),
    )
    by_source: dict[str, list[int]] = defaultdict(list)
    for _t, source, item_id in wanted:
        by_source[source].append(item_id)
    terms = sorted({t for t, _s, _i in wanted})
    rows: list[Any] = []
    for source, ids in by_source.items():
        ids = sorted(set(ids))
        for start in range(0, len(ids), _CHUNK):
            values = {"terms": terms, "source": source, "items": ids[start : start + _CHUNK]}
            rows += conn.execute(query, values).all()
    return rows


_PAIRS = sql_text(
    "SELECT p.term_id, p.source, p.item_id, p.impact FROM recall_postings AS p"
    " JOIN unnest(CAST(:terms AS bigint[]), CAST(:sources AS varchar[]),"
    " CAST(:items AS bigint[])) AS k(term_id, source, item_id)"
    " ON p.term_id = k.term_id AND p.source = k.source AND p.item_id = k.item_id"
)


def rank(
    conn: Connection,
    query: Query,
    sources: tuple[str, ...],
    accept: Accept,
    room: int,
    parts: tuple[str, ...] | None = None,
) -> list[Ranked]:
    """The best `room` items of `sources` for `query` among those `accept` lets through
    (fewer: every match), best first, recency breaking ties. Terms weigh by how rare they
    are in `parts` (the sides `accept` lets through; None: every part), never elsewhere."""
    words = query.words
    wanted = list(dict.fromkeys(t for w in words for c in w.choices for t in c))
    stats, corpus = _stats(conn, wanted, parts) if parts != () else ({}, 0)
    if not stats:
        return []
    # An identifier or a phrase with a part no item holds is held by none.
    if any(w.required and not all(t in stats for t in w.terms) for w in words):
        return []
    whole_words = [w for w in words if w.exact is None or all(t in stats for t in w.terms)]
    if not whole_words:
        return []
    if len(whole_words) < len(words):
        query = replace(query, words=tuple(whole_words))
        words = query.words
        stats = {t: v for t, v in stats.items() if any(t in c for w in words for c in w.choices)}
    weight = {t: weight_of(docs, corpus) for t, (_tid, docs) in stats.items()}
    if len(stats) > 1 and sum(docs for _tid, docs in stats.values()) <= SUMMED:
        return _rank_summed(conn, query, stats, weight, sources, accept, room)
    return _rank_best_first(conn, query, stats, weight, sources, accept, room)


Shape = tuple[tuple[tuple[int, ...], ...], ...]  # per word, per choice: numbers of terms


@lru_cache(maxsize=64)
def _summed_statement(shape: Shape, terms: int, filtered: bool, dialect: str) -> Any:
    """The items holding any of `terms` terms, each with every term's impact and its score's
    bound: per word, its best choice, each term's impact times its share of the word's
    weight rounded up (what the score is, unless an identifier or phrase is not held as
    typed); highest first."""
    ids = ", ".join(f":t{k}" for k in range(terms))
    each = ", ".join(
        f"MAX(CASE WHEN term_id = :t{k} THEN impact ELSE 0 END) AS i{k}" for k in range(terms)
    )
    best = "GREATEST" if dialect == "postgresql" else "MAX"
    words = []
    for w, choices in enumerate(shape):
        parts = [
            " + ".join(f":u{w}_{c}_{j} * i{k}" for j, k in enumerate(choice))
            for c, choice in enumerate(choices)
            if choice
        ]
        if parts:  # a word none of whose terms the store holds adds nothing
            words.append(parts[0] if len(parts) == 1 else f"{best}({', '.join(parts)})")
    where = " AND source IN :sources" if filtered else ""
    items = ", ".join(f"i{k}" for k in range(terms))
    sql = (
        f"SELECT source, item_id, {' + '.join(words)} AS bound, {items} FROM ("
        f"SELECT source, item_id, {each} FROM recall_postings "
        f"WHERE term_id IN ({ids}){where} GROUP BY source, item_id"
        ") AS held ORDER BY bound DESC LIMIT :most"
    )
    statement = sql_text(sql)
    if filtered:
        statement = statement.bindparams(bindparam("sources", expanding=True))
    return statement


def _rank_summed(
    conn: Connection,
    query: Query,
    stats: dict[str, tuple[int, int]],
    weight: dict[str, int],
    sources: tuple[str, ...],
    accept: Accept,
    room: int,
) -> list[Ranked]:
    terms = list(stats)
    values: dict[str, Any] = {"sources": list(sources)}
    for k, t in enumerate(terms):
        values[f"t{k}"] = stats[t][0]
    shape = tuple(
        tuple(tuple(terms.index(t) for t in choice if t in stats) for choice in word.choices)
        for word in query.words
    )
    for w, choices in enumerate(shape):
        for c, choice in enumerate(choices):
            for j, k in enumerate(choice):
                values[f"u{w}_{c}_{j}"] = -(-weight[terms[k]] // len(query.words[w].choices[c]))
    statement = _summed_statement(shape, len(terms), sources != SOURCES, conn.dialect.name)
    most = max(4 * room, 256)
    while True:
        found = conn.execute(statement, {**values, "most": most}).all()
        offered: list[tuple[float, Item]] = [
            (int(row[2]), (str(row[0]), int(row[1]))) for row in found
        ]
        held = {
            (str(row[0]), int(row[1])): {
                t: int(i) for t, i in zip(terms, row[3:], strict=True) if i
            }
            for row in found
        }
        ranked = _offer(query, offered, held, weight, accept, room)
        if len(found) < most or _full(ranked, room, offered):
            ranked.sort(key=_order)
            return ranked[:room]
        most *= DEEPER


def _full(ranked: list[Ranked], room: int, offered: list[tuple[float, Item]]) -> bool:
    """Whether the page is settled: `room` items ranked, and the last offered could not rank
    above them (offering stopped before the end)."""
    return len(ranked) >= room and offered[-1][0] < ranked[room - 1].raw


def _offer(
    query: Query,
    offered: list[tuple[float, Item]],
    held: dict[Item, dict[str, int]],
    weight: dict[str, int],
    accept: Accept,
    room: int,
) -> list[Ranked]:
    """Offer the items (with a bound of their score, highest first; `held`: each one's
    impacts) to `accept` a batch at a time, scoring each exactly, until the next bound is
    below the page's last score."""
    ranked: list[Ranked] = []
    batch = max(4 * room, 128)
    for start in range(0, len(offered), batch):
        if len(ranked) >= room:
            ranked.sort(key=_order)
            if offered[start][0] < ranked[room - 1].raw:
                break
        by_source: dict[str, list[int]] = defaultdict(list)
        for _bound, (source, item_id) in offered[start : start + batch]:
            by_source[source].append(item_id)
        for item, (at, text) in accept(by_source, _texts(query)).items():
            scored = _score(query, held[item], weight, text)
            if scored is not None:
                ranked.append(Ranked(item, at, scored[0], scored[1]))
    return ranked


def _texts(query: Query) -> bool:
    """Whether ranking needs the items' texts: an identifier or phrase is checked on them."""
    return any(w.exact is not None for w in query.words)


def _rank_best_first(
    conn: Connection,
    query: Query,
    stats: dict[str, tuple[int, int]],
    weight: dict[str, int],
    sources: tuple[str, ...],
    accept: Accept,
    room: int,
) -> list[Ranked]:
    term_of = {tid: t for t, (tid, _docs) in stats.items()}
    depth = {t: FIRST for t in stats}
    whole = [tid for t, (tid, docs) in stats.items() if docs <= WHOLE]
    while True:
        impacts: dict[Item, dict[str, int]] = defaultdict(dict)
        cut: dict[str, int] = {}  # a common term read in part: the weight it was read down to
        for row in _read_whole(conn, whole, sources) if whole else []:
            impacts[(row.source, int(row.item_id))][term_of[row.term_id]] = int(row.impact)
        for t, (tid, docs) in stats.items():
            if docs <= WHOLE:
                continue
            rows, complete = _read_best(conn, tid, depth[t], sources)
            for row in rows:
                impacts[(row.source, int(row.item_id))][t] = int(row.impact)
            if not complete:
                cut[t] = min(int(row.impact) for row in rows)
        if cut:
            # Items found through some terms: their postings of the terms read in part.
            wanted = [
                (stats[t][0], source, item_id)
                for (source, item_id), held in impacts.items()
                if _could_change(query, held, weight, cut)
                for t in cut
                if t not in held
            ]
            for row in _read_for(conn, wanted) if wanted else []:
                impacts[(row.source, int(row.item_id))][term_of[row.term_id]] = int(row.impact)
        ranked = _scored(query, impacts, weight, accept, room)
        unread = _unread(query, weight, cut)
        if not cut or unread <= 0 or (len(ranked) >= room and ranked[room - 1].raw >= unread):
            return ranked[:room]
        for t in cut:
            depth[t] *= DEEPER


def _could_change(
    query: Query, held: dict[str, int], weight: dict[str, int], cut: dict[str, int]
) -> bool:
    """Whether an item's postings of the terms read in part that it was not found with could
    change its score. Each such posting weighs less than its term's cut, so one that only
    makes another choice of a word (its other language) no better than the best choice
    known cannot: the word counts its best choice."""
    for word in query.words:
        known = 0.0
        could = 0.0
        for choice in word.choices:
            here = sum(weight[t] * held[t] for t in choice if t in held and t in weight)
            unread = sum(weight[t] * cut[t] for t in choice if t in cut and t not in held)
            if unread and (word.exact is not None or word.required):
                return True  # whether all of an identifier's or a phrase's parts are there
            if unread:
                could = max(could, (here + unread) / len(choice))
            else:
                known = max(known, here / len(choice))
        if could > known:
            return True
    return False


def _unread(query: Query, weight: dict[str, int], cut: dict[str, int]) -> float:
    """The most an item not read yet could score: it holds none of the terms read whole, and
    each term read in part at most at the weight it was read down to; a word counts its
    best choice. An identifier or phrase with a part read whole is not in such an item, and
    a required phrase then rules every unread item out."""
    most = 0.0
    for word in query.words:
        if word.exact is not None and not all(t in cut for t in word.terms):
            if word.required:
                return 0.0
            continue
        most += max(
            sum(weight[t] * cut[t] for t in choice if t in cut) / len(choice)
            for choice in word.choices
        )
    return most


def _scored(
    query: Query,
    impacts: dict[Item, dict[str, int]],
    weight: dict[str, int],
    accept: Accept,
    room: int,
) -> list[Ranked]:
    """The best `room` of the items read that `accept` lets through (and any tied with the
    last), best first."""
    # The score of each item if every identifier and phrase it holds the parts of is held as
    # typed: never below its real score, so an order to offer them in.
    upper = [(_score(query, held, weight, None), item) for item, held in impacts.items()]
    offered = sorted(
        ((s[0], item) for s, item in upper if s is not None), key=lambda pair: -pair[0]
    )
    ranked = _offer(query, offered, impacts, weight, accept, room)
    ranked.sort(key=_order)
    return ranked


def _order(r: Ranked) -> tuple[float, float, str, int]:
    return (-r.raw, -r.at.timestamp(), r.item[0], -r.item[1])


def _score(
    query: Query, held: dict[str, int], weight: dict[str, int], text: str | None
) -> tuple[float, dict[int, tuple[list[str], float]]] | None:
    """An item's score (in millionths) and what each word gave (its score's share), or None
    when it is no match. Without its `text`, every identifier and phrase whose parts it
    holds counts as held as typed."""
    folded: str | None = None
    total = 0.0
    matched: dict[int, tuple[list[str], float]] = {}
    for i, word in enumerate(query.words):
        found: list[str] = []
        share = 0.0
        for choice in word.choices:
            held_here = [t for t in choice if t in held and t in weight]
            if held_here:
                here = sum(weight[t] * held[t] for t in held_here) / len(choice)
                if here > share:
                    found, share = held_here, here
        if word.exact is not None and len(found) < len(word.terms):
            found = []  # an identifier or phrase: all its parts, or it is not there
        if word.exact is not None and found and text is not None:
            if folded is None:
                folded = " ".join(text.split()).casefold()
            if word.exact not in folded:
                found = []
        if not found:
            if word.required:
                return None
            continue
        matched[i] = (found, share / SCALE)
        total += share
    if not matched:
        return None
    return total, matched
