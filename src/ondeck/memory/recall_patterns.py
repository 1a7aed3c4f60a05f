"""Recall's patterns: what each source searches, the shape of a search (its terms' lengths
and case, its scope), and the values bound for it on each store.

A statement is built once per shape (recall_sql.py) and its values bound at each call: the
shape says what the statement looks like, `match_values` what it is asked with.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ondeck.db.tables import notes, session_compactions, sessions, tasks
from ondeck.db.textpairs import doubled


@dataclass(frozen=True, slots=True)
class Source:
    name: str  # stem of the FTS tables / trigram indexes (db/fulltext.py)
    key: Any  # the searched row's id column
    pg_text: str  # the text searched: migration 0006 indexes lower(<it> COLLATE "C")


SOURCES = {
    "notes": Source("notes", notes.c.id, "notes.text"),
    "tasks": Source("tasks", tasks.c.id, "(tasks.title || chr(10) || tasks.body)"),
    "session_words": Source("session_words", sessions.c.id, "sessions.last_word"),
    "compactions": Source("compactions", session_compactions.c.id, "session_compactions.summary"),
}


def _escaped(text: str) -> str:
    """`text` matched as it is by LIKE (its `\\`, `%` and `_` escaped)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def like(term: str) -> str:
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


@dataclass(frozen=True, slots=True)
class Shape:
    """What a search statement looks like; its values are bound at each call. Statements
    are built once per shape (`statement`): a recall runs up to eight, and building them
    cost more than running them."""

    dialect: str
    source: str  # a key of SOURCES
    lengths: tuple[int, ...]  # each term's length, 3 for 3 or more
    cased: tuple[bool, ...]  # each term: has upper or lower case letters
    ascii: tuple[bool, ...]  # each term: ASCII only
    sides_on: bool
    inbox: bool
    project: bool
    skip: bool
    anchored: tuple[bool, ...] = ()  # PostgreSQL, each term: has an `anchor`
    include_all: bool = False  # notes only
    kinds: tuple[str, ...] = ()  # notes only: the kinds asked for (empty: all)


def length(term: str) -> int:
    return min(len(term), 3)


def cased(term: str) -> bool:
    return term.lower() != term or term.upper() != term


_UNCASED_RUN = re.compile(r"[^A-Za-z\s]+")


def anchor(term: str) -> str | None:
    """An ASCII term's longest run of characters without case (digits, signs; not white
    space): every text holding the term, in any case, holds it as it is."""
    if not (term.isascii() and cased(term)):
        return None
    return max(_UNCASED_RUN.findall(term), key=len, default=None)


def match_values(shape: Shape, terms: Sequence[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if shape.dialect == "postgresql":
        for i, term in enumerate(terms):
            values[f"t{i}"] = like(term)
            values[f"s{i}"] = term.lower() if term.isascii() else term
            values[f"f{i}"] = _folded_like(term)
            uncased = anchor(term)
            if uncased is not None:
                values[f"a{i}"] = uncased
            if len(term) == 2:
                values[f"d{i}"] = like(doubled(term))
        return values
    driven = 2 if 3 not in shape.lengths else 3
    values["m"] = " AND ".join(
        _fts_phrase(doubled(t) if driven == 2 else t) for t in terms if length(t) == driven
    )
    for i, term in enumerate(terms):
        if length(term) != driven:
            values[f"t{i}"] = like(term)
    return values
