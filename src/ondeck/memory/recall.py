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
in its side, and so is a task (its `side`: a task still in the inbox is found by nobody's
recall); unclassified items only for a person asking for the inbox.

The parts, each in its module: the query and the records it gives (recall_query.py), the
patterns and shapes (recall_patterns.py), the statements (recall_sql.py), which statement
PostgreSQL runs first (recall_plan.py); here, searching each source, merging and ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection

from ondeck.core.memory import NoteKind, NoteStatus, Scope, shown_status
from ondeck.db.predicates import presumed_lost
from ondeck.memory.notes_read import check_scope
from ondeck.memory.recall_plan import Guess, found_rows
from ondeck.memory.recall_query import (
    DEFAULT_LIMIT,
    KINDS,
    MAX_LIMIT,
    Hit,
    Query,
    Recall,
    parse_kinds,
    parse_query,
)
from ondeck.sessions.hook_agents import CLAUDE_CODE
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

_NOTE_ORDER = ("note", "decision", "handoff")


def _note_hits(rows: Any, day: date, whole: bool) -> list[Hit]:
    hits = []
    for row in rows:
        kind = NoteKind(row.kind)
        status = shown_status(NoteStatus(row.status), row.expires_on, day)
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
    guess: Guess,
) -> list[Hit]:
    wanted = tuple(k for k in _NOTE_ORDER if k in kinds) if kinds else _NOTE_ORDER
    if not wanted:
        return []
    rows = found_rows(
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
    guess: Guess,
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
            origin=f"session {row.id}'s last word ({_whose(row.agent)}{row.external_id[:12]})",
            true=True,
            label=None,
            whole=whole,
        )
        for row in found_rows(conn, "session_words", terms, scope, limit, skip, guess=guess)
    ]


def _whose(agent: str) -> str:
    """Another agent's session says whose it is; Claude Code's, as the brief, goes unlabelled."""
    return "" if agent == CLAUDE_CODE else f"{agent}, "


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
    guess: Guess,
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
        for row in found_rows(conn, "compactions", terms, scope, limit, skip, guess=guess)
    ]


def _search_tasks(
    conn: Connection,
    terms: Sequence[str],
    scope: Scope,
    limit: int,
    whole: bool,
    skip: Sequence[int],
    guess: Guess,
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
        for row in found_rows(conn, "tasks", terms, scope, limit, skip, guess=guess)
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
    API shows it (a session silent past the grace shown lost)."""
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
        guess = Guess()
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
