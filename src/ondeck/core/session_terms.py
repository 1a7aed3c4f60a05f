"""A session's words: the statuses its record can have, the lease owner it claims tasks as,
and the actor its hooks write events as.

Every path takes them from here (the hook's bare driver, the brief's plain SQL, the server's
SQLAlchemy services), so a session's leases are found and released under the very name it
took them with, and a status is spelt as the schema's CHECK has it. Only `enum`, which the
hooks load anyway: they import this at every turn, where `core.models` (dataclasses) would
cost them more than their own work. `core.models` shows `SessionStatus` beside the others.
"""

from __future__ import annotations

from enum import StrEnum


class SessionStatus(StrEnum):
    """`open` (heard from within ONDECK_SESSION_GRACE), `ended` (SessionEnd came), `lost`
    (silent past the grace: the record never claims a session still runs when nothing was
    heard from it)."""

    OPEN = "open"
    ENDED = "ended"
    LOST = "lost"


# The end an import gives a session: its transcript's last entry, a guess (the transcript
# does not say whether the session ended, or runs still). A resume reopens it, whenever the
# resume began; the session's own end, heard later, replaces it.
IMPORTED_END = "imported"


def end_guessed(status: str | None, end_reason: str | None) -> bool:
    """Whether a session's end is an import's guess (see IMPORTED_END)."""
    return status == SessionStatus.ENDED and end_reason == IMPORTED_END


OWNER_PREFIX = "claude:"
# tasks.lease_owner holds 200 characters: the prefix and the id fit, whatever the id.
OWNER_ID_MAX = 190
ACTOR_PREFIX = "hook:"
# Events already written carry this cut, and a session's page finds its tasks by it: fixed.
ACTOR_ID_MAX = 60


def session_owner(external_id: str) -> str:
    """The lease owner a session claims tasks as: `claude:<session id>`."""
    return f"{OWNER_PREFIX}{external_id[:OWNER_ID_MAX]}"


def hook_actor(external_id: str) -> str:
    """The actor of the events a session's hooks write: `hook:<session id>`."""
    return f"{ACTOR_PREFIX}{external_id[:ACTOR_ID_MAX]}"
