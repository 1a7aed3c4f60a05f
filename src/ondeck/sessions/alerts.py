"""What the session context warns about session records: the inbox, and hook events stuck
in the spool. Counts only: nothing of an unclassified session is shown to another session.

Plain SQL (db/plain.py), so the session hook builds its context without SQLAlchemy.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from ondeck.core.clock import local
from ondeck.core.humanize import counted
from ondeck.db.plain import Db, run
from ondeck.db.predicates import SESSIONS_INBOX

# ix_sessions_inbox: its predicate, so the count is read from the index alone.
INBOX_COUNT = f"SELECT count(*) AS n FROM sessions WHERE {SESSIONS_INBOX}"


def context_warnings(db: Db, now: datetime, settings: Any) -> list[tuple[str, str]]:
    """(code, message) for the session context: the inbox and a stuck spool."""
    from ondeck.sessions.capture import spool

    found: list[tuple[str, str]] = []
    inbox = int(run(db, INBOX_COUNT)[0]["n"])
    if inbox:
        found.append(
            (
                "sessions_unclassified",
                f"{counted(inbox, 'session record')} unclassified, waiting in the inbox for a "
                "person "
                "(`ondeck session list --status unclassified`, then `ondeck session move`)",
            )
        )
    found += spool_warnings(spool.status(settings.spool_dir), now, settings.zone)
    return found


def spool_warnings(status: Any, now: datetime, zone: tzinfo) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if status.stuck(now):
        since = local(status.oldest_at, zone).isoformat(timespec="seconds")
        found.append(
            (
                "spool_stuck",
                f"{counted(status.waiting, 'hook event')} waiting in the spool ({status.path}) "
                "since "
                f"{since}: the database could not be reached; the next hook or jobs tick that "
                "reaches it drains them",
            )
        )
    if status.rejected:
        found.append(
            (
                "spool_rejected",
                f"{counted(status.rejected, 'spooled hook event')} could not be applied; they "
                "are kept "
                f"with the reason in {status.path}/rejected.jsonl",
            )
        )
    return found
