"""The lengths of the text columns hook records are stored in, as db/tables.py declares them,
for the hooks to read without importing SQLAlchemy: what a hook accepts follows from the
schema, so the store never refuses a record for a length the hook let through.

Generated from db/tables.py; tests/unit/test_column_limits.py holds it to the tables (and
prints this dictionary anew when a migration changes a length).
"""

from __future__ import annotations

COLUMN_LIMITS = {
    "sessions.agent": 32,
    "sessions.external_id": 200,
    "sessions.status": 16,
    "sessions.end_reason": 64,
    "sessions.start_source": 16,
    "sessions.branch": 255,
    "sessions.start_head": 64,
    "sessions.end_head": 64,
    "sessions.side": 64,
    "sessions.project": 64,
    "sessions.side_rule": 16,
    "sessions.project_rule": 16,
    "sessions.agent_version": 32,
    "session_compactions.trigger": 16,
    "hook_receipts.fingerprint": 64,
    "hook_receipts.kind": 16,
}
