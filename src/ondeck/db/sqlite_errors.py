"""What SQLite's error messages mean to ondeck: one list for the engines (db/engine.py) and
the hooks' bare connections (db/bare.py), which must not import SQLAlchemy."""

from __future__ import annotations

# "The store cannot be used now" rather than a bug. Never "no such table" (a bug, or a
# schema behind).
_UNREACHABLE = ("locked", "busy", "unable to open", "disk i/o", "readonly database", "disk is full")
# A file that is not (or no longer) a database: unusable until it is restored or moved away.
_BROKEN = ("not a database", "malformed")


def unavailable(message: str) -> bool:
    """Unreachable or broken: no command can use the store now (exit 5, HTTP 503; a hook
    keeps its event in the spool)."""
    lowered = message.lower()
    return any(word in lowered for word in _UNREACHABLE + _BROKEN)


def locked(message: str) -> bool:
    """Another connection holds the write lock: waiting may help."""
    lowered = message.lower()
    return "locked" in lowered or "busy" in lowered


def broken(message: str) -> bool:
    """The file itself is not a database any more: waiting will not help (a restore says
    to move it away rather than to try again)."""
    lowered = message.lower()
    return any(word in lowered for word in _BROKEN)
