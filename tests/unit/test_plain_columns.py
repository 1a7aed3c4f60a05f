"""The plain-SQL readers (db/plain.py, the hooks' path: no SQLAlchemy) say by hand which of
the columns they read are instants, dates, JSON and booleans, and some list the columns
themselves. These tests hold each such list to db/tables.py, so a column added, retyped or
renamed there fails here instead of coming back as raw text on one of the two drivers."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Boolean, Date, Table

from ondeck.context import reads as context_reads
from ondeck.db import tables
from ondeck.db.plain import Columns
from ondeck.db.types import Instant, Json
from ondeck.memory import brief
from ondeck.sessions import rows_sql as session_rows_sql
from ondeck.system import heartbeat


def kinds(table: Table, names: set[str] | None = None) -> dict[str, frozenset[str]]:
    """The table's columns (or those of `names`) by how db/plain.py converts them."""
    found: dict[str, set[str]] = {"instants": set(), "dates": set(), "jsons": set(), "bools": set()}
    for column in table.columns:
        if names is not None and column.name not in names:
            continue
        kind = column.type
        if isinstance(kind, Instant):
            found["instants"].add(column.name)
        elif isinstance(kind, Json):
            found["jsons"].add(column.name)
        elif isinstance(kind, Boolean):
            found["bools"].add(column.name)
        elif isinstance(kind, Date):
            found["dates"].add(column.name)
    return {key: frozenset(value) for key, value in found.items()}


def declared(columns: Columns) -> dict[str, frozenset[str]]:
    return {
        "instants": columns.instants,
        "dates": columns.dates,
        "jsons": columns.jsons,
        "bools": columns.bools,
    }


def listed(text: str, table: str) -> set[str]:
    """The `table.column` names a hand-written column list holds."""
    return set(re.findall(rf"\b{table}\.(\w+)", text))


def existing(table: Table, names: set[str]) -> set[str]:
    return names - {column.name for column in table.columns}


def test_the_session_store_types_every_column_of_sessions() -> None:
    """Hook records are applied with `SELECT *` and UPDATEs of any column."""
    found = kinds(tables.sessions)
    assert found["instants"] == session_rows_sql.INSTANTS
    assert found["jsons"] == session_rows_sql.JSONS
    assert found["bools"] == session_rows_sql.BOOLS
    assert not found["dates"]
    names = {column.name for column in tables.sessions.columns}
    assert set(session_rows_sql.INSERTED) <= names
    assert names - {"id", "agent", "external_id", "created_at"} == session_rows_sql.UPDATABLE


def test_the_context_reads_typed_as_the_tables() -> None:
    # `SELECT * FROM tasks` and `SELECT * FROM backups`: every typed column of the table.
    assert declared(context_reads.TASKS) == kinds(tables.tasks)
    backups = declared(context_reads.BACKUPS)
    computed = {"last_ok", "ahead"}  # LAST_OK's own instants, not columns
    assert backups == {
        **kinds(tables.backups),
        "instants": kinds(tables.backups)["instants"] | computed,
    }
    shown = listed(context_reads._SHOWN, "schedules")
    assert not existing(tables.schedules, shown)
    assert declared(context_reads.REMINDERS) == kinds(tables.schedules, shown)
    fired = listed(context_reads.FIRED.split(" FROM ")[0], "fires")
    assert not existing(tables.fires, fired)
    assert declared(context_reads.FIRES) == kinds(tables.fires, fired)


def test_the_brief_reads_notes_and_sessions_typed_as_the_tables() -> None:
    notes = listed(brief._NOTE_COLUMNS, "notes")
    assert not existing(tables.notes, notes)
    assert declared(brief.NOTES) == kinds(tables.notes, notes)
    sessions = listed(brief._SESSION_COLUMNS, "sessions") - {"status"}  # shown, a CASE
    assert not existing(tables.sessions, sessions)
    assert declared(brief.SESSIONS) == kinds(tables.sessions, sessions)


def test_the_jobs_heartbeat_reads_typed_as_its_table() -> None:
    text: Any = heartbeat._NEWEST
    names = {n.strip() for n in text.split("AS ahead,")[1].split(" FROM workers")[0].split(",")}
    assert not existing(tables.workers, names)
    assert declared(heartbeat._WORKER) == kinds(tables.workers, names)
