"""The plain SQL that applies hook records to `sessions`, and the values as its columns
store them: the same text and the same values on a SQLAlchemy connection and on the hook's
bare driver (db/plain.py), so either side reads what the other wrote.

The column lists below are typed out because the hook may not import SQLAlchemy to read
db/tables.py; tests/unit/test_plain_columns.py holds them to the tables.
"""

from __future__ import annotations

from typing import Any

from ondeck.db.plain import Db, instant_in, instant_out, json_in, json_out
from ondeck.db.plain import render as _for

INSTANTS = frozenset(
    {
        "started_at",
        "last_seen_at",
        "last_start_at",
        "ended_at",
        "last_word_at",
        "created_at",
        "updated_at",
    }
)
JSONS = frozenset({"classification", "disagreements", "commits", "files", "redaction_kinds"})
BOOLS = frozenset({"capture", "unclassified", "imported"})


# --- statements -----------------------------------------------------------------------------

INSERTED = (  # what a new row is given; the others keep their defaults
    "agent",
    "external_id",
    "status",
    "started_at",
    "last_seen_at",
    "start_source",
    "last_start_at",
    "resumes",
    "cwd",
    "git_root",
    "branch",
    "start_head",
    "capture",
    "side",
    "project",
    "side_rule",
    "project_rule",
    "unclassified",
    "classification",
    "disagreements",
    "compactions",
    "redactions",
    "redaction_kinds",
    "created_at",
    "updated_at",
    "transcript_path",
)
# Every column but the key, the session's identity and when its row was made: what the
# inserted ones become, and what only later records set.
_LATER = ("ended_at", "end_reason", "end_head", "last_word", "last_word_at", "commits", "files")
# What `session import` sets (sessions/session_import.py); no hook record changes them.
_IMPORTED = ("imported", "imported_from", "agent_version")
UPDATABLE = frozenset((*INSERTED, *_LATER, *_IMPORTED, "git_note")) - {
    "agent",
    "external_id",
    "created_at",
}

SQL = {
    "session": "SELECT * FROM sessions WHERE agent = :agent AND external_id = :external_id",
    "insert_session": (
        f"INSERT INTO sessions ({', '.join(INSERTED)}) VALUES ("
        + ", ".join(f"JSON(:{c})" if c in JSONS else f":{c}" for c in INSERTED)
        + ") ON CONFLICT (agent, external_id) DO NOTHING RETURNING id"
    ),
    "receipt": (
        "INSERT INTO hook_receipts (fingerprint, session_id, kind, at)"
        " VALUES (:fingerprint, :session_id, :kind, :at)"
        " ON CONFLICT (fingerprint) DO NOTHING RETURNING fingerprint"
    ),
    # The same row events.record writes through SQLAlchemy.
    "event": (
        "INSERT INTO events (at, actor, kind, subject, details)"
        " VALUES (:at, :actor, :kind, :subject, JSON(:details))"
    ),
    "compaction": (
        "INSERT INTO session_compactions (session_id, at, trigger, summary, chars, redactions)"
        " VALUES (:session_id, :at, :trigger, :summary, :chars, :redactions) RETURNING id"
    ),
    "held": ("SELECT id FROM tasks WHERE status = 'RUNNING' AND lease_owner = :owner ORDER BY id"),
}


def sql(db: Db, name: str) -> str:
    return _for(db.dialect, SQL[name])


# --- values as the columns store them -----------------------------------------------------


def row_out(row: dict[str, Any]) -> dict[str, Any]:
    """A `sessions` row as Python values, whichever driver read it."""
    out = dict(row)
    for key in INSTANTS & out.keys():
        out[key] = instant_out(out[key])
    for key in JSONS & out.keys():
        out[key] = json_out(out[key])
    for key in BOOLS & out.keys():
        out[key] = bool(out[key])
    return out


def params(db: Db, values: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in values.items():
        if key in INSTANTS or key == "at":
            out[key] = instant_in(db, value)
        elif key in JSONS or key == "details":
            out[key] = json_in(value)
        else:
            out[key] = value
    return out
