"""`ondeck_pairs(text)`: every character written twice, for SQLite's full-text triggers.

Why: the trigram index (FTS5's `trigram` tokenizer, PostgreSQL's `pg_trgm`) finds any
substring of three characters or more, and nothing shorter; yet a two-syllable Korean word
(배포) is two characters. With every character doubled, each pair of neighbouring
characters `ab` of the text becomes the trigrams `aab` and `abb` of the doubled text, so a
two-character query `ab` is the three-or-more-character query `aabb` there: found through
an index like any other, on both stores (PostgreSQL's triggers need no function: its
indexes are on `regexp_replace(text, '(.)', '\\1\\1', 'g')`, memory/recall.py).

SQLite has no built-in that doubles characters in linear time, so every connection ondeck
opens on SQLite registers this function (db/engine.py, db/bare.py) before the triggers of
migration 0004 can run. A program that writes ondeck's tables without it (the `sqlite3`
shell) is refused with "no such function: ondeck_pairs": nothing is written that the index
would miss. Standard library only (the session hooks write through the bare driver).
"""

from __future__ import annotations

from typing import Any

NAME = "ondeck_pairs"


def pairs(text: str | None) -> str | None:
    if text is None:
        return None
    return "".join(ch + ch for ch in str(text))


def install(dbapi_connection: Any) -> None:
    """Register the function on a `sqlite3` connection (deterministic: usable in triggers)."""
    dbapi_connection.create_function(NAME, 1, pairs, deterministic=True)
