"""Predicates written once as SQL text, for the Core statements (wrapped in `text()`) and for
the plain statements run without SQLAlchemy (db/plain.py) alike.

Each is the predicate of a partial index, written as the index has it: the planners match
an index to a query only when the query says the same thing the same way.
"""

from __future__ import annotations

from datetime import datetime, timedelta

# A live schedule that fires: ix_schedules_due's predicate. Every reader of due or live
# schedules (the jobs tick, the backup step, the context, the calendar feed) uses this text
# rather than `schedules.c.enabled`, which SQLite renders as `enabled = 1` and its planner
# then does not match to the partial index.
SCHEDULES_LIVE = "enabled AND deleted_at IS NULL"

# A session waiting in the inbox: ix_sessions_inbox's predicate (SQLite renders a bound
# boolean as `unclassified = 1`, which its planner does not match to the index).
SESSIONS_INBOX = "sessions.unclassified"


def status_is(table: str, status: str) -> str:
    """`<table>.status = 'READY'` with the value in the text rather than bound: the planner
    then knows the rows of a partial index on that status all qualify (task_statements.
    status_is says why; tests/unit/test_predicates.py holds the two forms together)."""
    return f"{table}.status = '{status}'"


# A session presumed lost when it is read: still `open` in its row, but silent (no hook
# event) since before :lost_before, which is now minus ONDECK_SESSION_GRACE. Whether a
# session is lost is decided here, at every read, on every surface (the brief, lists, a
# session's page, the API, MCP): the jobs tick only records what this already says
# (sessions/records.mark_lost), so a store with hooks and no jobs loop never shows a session
# silent for days as still open. `presumed_lost` below is the same rule for one row in
# Python (tests/unit/test_predicates.py holds the two together).
SESSION_PRESUMED_LOST = "(sessions.status = 'open' AND sessions.last_seen_at < :lost_before)"
# The status a session is shown with.
SESSION_STATUS = f"CASE WHEN {SESSION_PRESUMED_LOST} THEN 'lost' ELSE sessions.status END"
# A session shown as open, shown as lost (its row's status, or presumed).
SESSION_SHOWN_OPEN = "(sessions.status = 'open' AND sessions.last_seen_at >= :lost_before)"
SESSION_SHOWN_LOST = f"(sessions.status = 'lost' OR {SESSION_PRESUMED_LOST})"


def presumed_lost(status: str, last_seen_at: datetime, lost_before: datetime) -> bool:
    """SESSION_PRESUMED_LOST for one row already read."""
    return status == "open" and last_seen_at < lost_before


def lost_before(now: datetime, grace: timedelta) -> datetime:
    """The instant before which an open session's silence makes it lost."""
    return now - grace
