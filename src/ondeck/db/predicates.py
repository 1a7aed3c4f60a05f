"""Predicates written once as SQL text, for the Core statements (wrapped in `text()`) and for
the plain statements run without SQLAlchemy (db/plain.py) alike.

Each is the predicate of a partial index, written as the index has it: the planners match
an index to a query only when the query says the same thing the same way.
"""

from __future__ import annotations

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
