"""`ondeck_pairs(text)`: every character written twice, for the SQLite triggers of
migrations 0004 to 0011.

Recall's substring search of those revisions indexed two-character Korean words through
the text with every character doubled (`ab` becomes the trigrams `aab`, `abb` of `aabb`),
written by triggers that call this function. Migration 0012 replaced that search by a word
index and dropped the triggers; a database still at one of those revisions runs them
until it is upgraded (and its data migrations write rows), so every connection ondeck opens
on SQLite still registers the function (db/engine.py, db/bare.py). Standard library only
(the session hooks write through the bare driver).
"""

from __future__ import annotations

from typing import Any

NAME = "ondeck_pairs"


def doubled(text: str) -> str:
    """Every character written twice: what the pairs indexes hold, and how a two-character
    term is asked of them."""
    return "".join(ch + ch for ch in text)


def pairs(text: str | None) -> str | None:
    return None if text is None else doubled(str(text))


def install(dbapi_connection: Any) -> None:
    """Register the function on a `sqlite3` connection (deterministic: usable in triggers)."""
    dbapi_connection.create_function(NAME, 1, pairs, deterministic=True)
