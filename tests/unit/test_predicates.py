"""Rules the context's plain SQL (context/reads.py, memory/brief.py) shares with
Core statements elsewhere have one meaning: each plain form is the text its Core form
compiles to, on both dialects."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect

from ondeck.context import reads as context_reads
from ondeck.core.memory import TRUE_TODAY, NoteStatus, shown_status
from ondeck.core.models import TaskStatus
from ondeck.db import predicates
from ondeck.db.tables import SCHEDULES_LIVE, notes, tasks
from ondeck.memory import brief
from ondeck.memory.notes import true_today
from ondeck.work.task_statements import READY_ORDER, status_is

DIALECTS = [sqlite.dialect(), postgresql.dialect()]


def _where(dialect: Dialect, *clauses: Any) -> str:
    statement = select(tasks.c.id).where(*clauses)
    compiled = str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    return " ".join(compiled.split()).split(" WHERE ", 1)[1]


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
@pytest.mark.parametrize("status", list(TaskStatus))
def test_status_is_is_the_same_text(dialect: Dialect, status: TaskStatus) -> None:
    assert _where(dialect, status_is(status)) == predicates.status_is("tasks", status.value)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_ready_order_is_the_same_order(dialect: Dialect) -> None:
    statement = select(tasks.c.id).order_by(*READY_ORDER)
    compiled = str(statement.compile(dialect=dialect))
    assert compiled.split("ORDER BY ", 1)[1].strip() == context_reads.READY_ORDER


def test_schedules_live_is_the_text_of_the_table_module() -> None:
    assert SCHEDULES_LIVE.text == predicates.SCHEDULES_LIVE


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_true_today_is_the_same_text(dialect: Dialect) -> None:
    day = date(2026, 3, 14)
    statement = select(notes.c.id).where(*true_today(day))
    compiled = str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    where = " ".join(compiled.split()).split(" WHERE ", 1)[1]
    assert where == brief.TRUE_TODAY.replace(":day", "'2026-03-14'")


@pytest.mark.parametrize("status", list(NoteStatus))
@pytest.mark.parametrize("expires_in", [None, -1, 0, 1])  # days from today
def test_a_note_true_today_is_one_rule_in_sql_and_python(
    status: NoteStatus, expires_in: int | None
) -> None:
    """core/memory.py TRUE_TODAY (the reads in SQL) and shown_status (one note in Python, as
    the record and recall's results use it) say the same for every status and date."""
    import sqlite3
    from datetime import timedelta

    day = date(2026, 3, 14)
    expires = None if expires_in is None else day + timedelta(days=expires_in)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE notes (status TEXT, expires_on TEXT)")
    db.execute("INSERT INTO notes VALUES (?, ?)", (status.value, expires and expires.isoformat()))
    [(shown,)] = db.execute(
        f"SELECT count(*) FROM notes WHERE {TRUE_TODAY}", {"day": day.isoformat()}
    ).fetchall()
    assert bool(shown) == (shown_status(status, expires, day) is NoteStatus.ACTIVE)


@pytest.mark.parametrize("status", ["open", "ended", "lost"])
@pytest.mark.parametrize("heard", [-2, 0, 2])  # hours from the cutoff
def test_a_session_presumed_lost_is_one_rule_in_sql_and_python(status: str, heard: int) -> None:
    """db/predicates.SESSION_STATUS (every read) and presumed_lost (one row in Python, as
    session_store and recall use it) say the same for every status and silence."""
    import sqlite3
    from datetime import UTC, datetime, timedelta

    cutoff = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
    seen = cutoff + timedelta(hours=heard)

    def as_stored(at: datetime) -> str:  # db/types.Instant on SQLite
        return at.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")

    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE sessions (status TEXT, last_seen_at TEXT)")
    db.execute("INSERT INTO sessions VALUES (?, ?)", (status, as_stored(seen)))
    [(shown,)] = db.execute(
        f"SELECT {predicates.SESSION_STATUS} FROM sessions", {"lost_before": as_stored(cutoff)}
    ).fetchall()
    python = "lost" if predicates.presumed_lost(status, seen, cutoff) else status
    assert shown == python
    [(is_open, is_lost)] = db.execute(
        f"SELECT {predicates.SESSION_SHOWN_OPEN}, {predicates.SESSION_SHOWN_LOST} FROM sessions",
        {"lost_before": as_stored(cutoff)},
    ).fetchall()
    assert (bool(is_open), bool(is_lost)) == (shown == "open", shown == "lost")
