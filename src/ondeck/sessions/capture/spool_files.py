"""The spool's files, and whether anything waits in them: what every hook asks before it
stores, so it is kept apart from the spool's machinery (locks, JSON, the drain), which a
hook imports only when something does wait.

    spool/events.jsonl     appended to by hooks (each append under an exclusive lock)
    spool/draining.jsonl   taken by the one drainer; a drain that died leaves it for the next
    spool/rejected.jsonl   records the store refused as malformed: kept, with the reason
    spool/.drain.lock      held by whoever drains
"""

from __future__ import annotations

import os

EVENTS = "events.jsonl"
DRAINING = "draining.jsonl"
REJECTED = "rejected.jsonl"
LOCK = ".drain.lock"


def has_waiting(spool_dir: str | os.PathLike[str]) -> bool:
    """Whether anything waits (two stats)."""
    for name in (DRAINING, EVENTS):
        try:
            if os.stat(os.path.join(spool_dir, name)).st_size > 0:
                return True
        except OSError:
            continue
    return False
