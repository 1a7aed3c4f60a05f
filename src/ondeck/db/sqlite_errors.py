"""What SQLite's error messages mean to ondeck: one list for the engines (db/engine.py) and
the hooks' bare connections (db/bare.py), which must not import SQLAlchemy."""

from __future__ import annotations

# "The store cannot be used now" rather than a bug: a lock, a file that cannot be opened or
# written, and a file that is not (or no longer) a database, which a restore mends. Never
# "no such table" (a bug, or a schema behind).
_UNAVAILABLE = (
    "locked",
    "busy",
    "unable to open",
    "disk i/o",
    "readonly database",
    "not a database",
    "malformed",
)


def unavailable(message: str) -> bool:
    lowered = message.lower()
    return any(word in lowered for word in _UNAVAILABLE)
