"""Recall: one ranked search over notes (and decisions and handoffs), compaction summaries,
sessions' last words and tasks' titles and bodies, within one side.

An item matches when it holds some of the query's words in any of their forms (deploy,
deploying, deployed; 배포, 배포는, 배포했다), and ranks by how much it matches: rarer words
weigh more, more words rank higher (BM25), and recency breaks ties. Words of no meaning
(the, how, 언제) neither make nor break a match; a "quoted phrase" must be held as typed,
and so must an identifier (`src/ondeck/db`, `v2.1.332`) for it to count. Each hit says
which words it matched, in which form, and its score.

The parts, each in its module: the words (recall_words.py, recall_korean.py), the query
and the records it gives (recall_query.py), the index kept up to date (recall_index.py),
the ranking (recall_rank.py), each source's scope (recall_sources.py). Here: bringing the
index up to date, then ranking, then saying why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection

from ondeck.core.memory import Scope
from ondeck.memory import recall_index
from ondeck.memory.notes_read import check_scope
from ondeck.memory.recall_query import (
    DEFAULT_LIMIT,
    KINDS,
    MAX_LIMIT,
    Hit,
    Match,
    Query,
    Recall,
    parse_kinds,
    parse_query,
)
from ondeck.memory.recall_rank import Ranked, rank
from ondeck.memory.recall_sources import Reader
from ondeck.memory.recall_words import forms
from ondeck.system.caller import Caller

__all__ = [
    "DEFAULT_LIMIT",
    "KINDS",
    "MAX_LIMIT",
    "Hit",
    "Query",
    "Recall",
    "parse_kinds",
    "parse_query",
    "recall",
    "recall_json",
]


def recall_json(
    conn: Connection,
    at: Caller,
    text: str,
    scope: Scope,
    *,
    kinds: Sequence[str] | str | None = None,
    include_all: bool = False,
    limit: int = DEFAULT_LIMIT,
) -> dict[str, Any]:
    """What the API's route, the CLI and the MCP tool call: `recall` for the caller, as the
    API shows it (a session silent past the grace shown lost). `conn` is a write
    transaction: the index is brought up to date first."""
    from ondeck.sessions.records import lost_before

    now = at.now()
    found = recall(
        conn,
        text,
        scope,
        at.today(),
        kinds=parse_kinds(kinds),
        include_all=include_all,
        limit=limit,
        lost_before=lost_before(now, at.settings),
    )
    return found.to_json(at.settings.zone, now)


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
    """Search everything `scope` may see for `text`: best match first, then recency. A hit's
    session silent since before `lost_before` is shown lost (sessions.lost_before). `conn`
    is a write transaction: what was written since the last recall is indexed first."""
    query = parse_query(text)
    scope = check_scope(scope)
    wanted = parse_kinds(list(kinds))
    limit = max(1, min(int(limit), MAX_LIMIT))
    result = Recall(query=query, scope=scope, kinds=wanted, include_all=include_all, limit=limit)
    if recall_index.waiting(conn):
        recall_index.fold(conn)
    reader = Reader(
        scope=scope, day=day, kinds=wanted, include_all=include_all, lost_before=lost_before
    )
    sources = reader.sources()
    if not sources:
        return result
    # One more than shown: tells whether there is more.
    ranked = rank(
        conn,
        query,
        sources,
        lambda wanted, text: reader.seen(conn, wanted, text),
        limit + 1,
        reader.parts(),
    )
    shown = ranked[:limit]
    by_source: dict[str, list[int]] = {}
    for r in shown:
        by_source.setdefault(r.item[0], []).append(r.item[1])
    hits = reader.hits(conn, by_source) if by_source else {}
    result.hits = [_explained(query, hits[r.item], r) for r in shown if r.item in hits]
    result.more = len(ranked) > limit
    return result


def _explained(query: Query, hit: Hit, ranked: Ranked) -> Hit:
    matched = tuple(
        Match(
            word=query.words[i].typed,
            terms=tuple(terms),
            forms=forms(hit.text, set(terms)),
            weight=weight,
        )
        for i, (terms, weight) in sorted(ranked.matched.items())
    )
    phrase = query.phrase
    whole = phrase is not None and phrase.casefold() in " ".join(hit.text.split()).casefold()
    return replace(hit, score=ranked.score, matched=matched, whole=whole)
