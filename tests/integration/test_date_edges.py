"""Dates at the edge of the range: what is accepted can be carried by
every computation after it, and what cannot is refused as invalid input, never a 500.

Every rule form from a start at DATE_MIN and at DATE_MAX: the schedule is created, shown,
checked for its next 100 dates, put in the calendar feed, and fired on its first date with
the clock there. 9999-12-31 is refused for every rule form, on create and
on edit, writing nothing. A schedule stored before the bound existed still gets a clear
refusal (RuleError is invalid input), not an internal error.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, update

from ondeck.core.clock import start_of_day
from ondeck.core.errors import InvalidInput
from ondeck.core.rulecheck import MAX_COUNT, check_rule
from ondeck.core.rules import RuleError
from ondeck.core.validation import DATE_MAX, DATE_MIN
from ondeck.db.tables import events, schedules, tasks
from ondeck.entrypoints.api.app import create_app
from ondeck.entrypoints.cli import run
from ondeck.host.settings import Settings
from ondeck.work import calendar_feed, firing
from ondeck.work import schedules as schedule_service
from support.bad_inputs import OUT_OF_RANGE

SEOUL = ZoneInfo("Asia/Seoul")
NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
RULES = [
    "daily",
    "weekly:MON",
    "weekly:SUN",
    "monthly:1",
    "monthly:28",
    "monthly:last",
    "monthly:1,last",
    "every:1",
    "every:3650",
]


def _count(engine: Engine, table: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("start", [DATE_MIN, DATE_MAX], ids=["DATE_MIN", "DATE_MAX"])
def test_a_schedule_at_either_edge_is_carried_by_every_computation(
    engine: Engine, rule: str, start: date
) -> None:
    with engine.begin() as conn:
        created = schedule_service.create_schedule(
            conn, NOW, SEOUL, title="edge", rule=rule, start_on=start
        )
        shown = schedule_service.show_schedule(conn, NOW, SEOUL, created.id)
    assert created.next_due is not None and created.next_due >= start
    assert len(shown["next"]) == 5
    checked = check_rule(rule, today=NOW.date(), start=start, count=MAX_COUNT)
    assert checked.next and checked.next[0] >= start
    feed = calendar_feed.build_calendar([created], NOW, SEOUL).decode()
    assert f"UID:{calendar_feed.uid(created.id)}" in feed

    # The clock on its first date (in Seoul): it fires once and moves on.
    due = created.next_due
    firing_at = start_of_day(due, SEOUL) + timedelta(hours=10)
    assert firing.fire_due(engine, firing_at, SEOUL).fired == 1
    after = _schedule(engine, created.id)
    assert after.last_fired_on == due and after.next_due is not None and after.next_due > due


def _schedule(engine: Engine, schedule_id: int) -> schedule_service.Schedule:
    with engine.connect() as conn:
        return schedule_service.get_schedule(conn, schedule_id)


@pytest.mark.parametrize("rule", RULES)
def test_the_issues_date_is_refused_for_every_rule_on_create_and_edit(
    engine: Engine, rule: str
) -> None:
    with engine.begin() as conn:
        kept = schedule_service.create_schedule(conn, NOW, SEOUL, title="kept", rule="daily")
    before = (_count(engine, schedules), _count(engine, events))
    for day in (date(9999, 12, 31), DATE_MAX + timedelta(days=1), DATE_MIN - timedelta(days=1)):
        with pytest.raises(InvalidInput, match=OUT_OF_RANGE), engine.begin() as conn:
            schedule_service.create_schedule(
                conn, NOW, SEOUL, title="edge", rule=rule, start_on=day
            )
        with pytest.raises(InvalidInput, match=OUT_OF_RANGE), engine.begin() as conn:
            schedule_service.edit_schedule(conn, NOW, SEOUL, kept.id, rule=rule, start_on=day)
    assert (_count(engine, schedules), _count(engine, events)) == before
    assert _schedule(engine, kept.id) == kept


@pytest.mark.parametrize("rule", ["weekly:MON", "monthly:1"])
@pytest.mark.parametrize("command", ["add", "edit"])
def test_a_start_past_the_range_is_exit_2_naming_the_range(
    db_url: str, rule: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["--db", db_url, "schedule", "add", "kept", "--rule", "daily"]) == 0
    capsys.readouterr()
    target = ["add", "x"] if command == "add" else ["edit", "1"]
    args = ["--db", db_url, "schedule", *target, "--rule", rule, "--start", "9999-12-31"]
    assert run(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and OUT_OF_RANGE in err and "internal error" not in err


def test_a_start_past_the_range_is_422_naming_the_range(engine: Engine, settings: Settings) -> None:
    body = {"title": "x", "rule": "weekly:MON", "start_on": "9999-12-31"}
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        response = c.post("/api/v1/schedules", json=body)
    assert response.status_code == 422
    assert OUT_OF_RANGE in response.json()["error"]["message"]
    assert _count(engine, schedules) == 0


def test_a_schedule_stored_before_the_bound_gets_a_clear_refusal_not_an_internal_error(
    engine: Engine, db_url: str, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows written by an earlier version may start on 9999-12-31: changing their rule hits
    the end of the calendar, a RuleError, which is invalid input (exit 2, HTTP 422)."""
    with engine.begin() as conn:
        legacy = schedule_service.create_schedule(conn, NOW, SEOUL, title="old", rule="daily")
        conn.execute(
            update(schedules)
            .where(schedules.c.id == legacy.id)
            .values(start_on=date.max, next_due=date.max)
        )
    capsys.readouterr()
    assert run(["--db", db_url, "schedule", "edit", "1", "--rule", "weekly:MON"]) == 2
    err = capsys.readouterr().err
    assert "date out of range" in err and "internal error" not in err
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        patched = c.patch("/api/v1/schedules/1", json={"rule": "weekly:MON"})
        feed = c.get("/calendar.ics")
    assert patched.status_code == 422
    assert patched.json()["error"]["code"] == "invalid_rule"
    # The feed leaves out what it cannot show (the day after date.max) and still answers.
    assert feed.status_code == 200 and "schedule-1@ondeck" not in feed.text
    assert _schedule(engine, legacy.id).rule == "daily"


def test_tasks_due_at_either_edge_are_shown_everywhere(engine: Engine, settings: Settings) -> None:
    """Due dates at the edges go through the API, the dashboard and the context."""
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        for day in (DATE_MIN, DATE_MAX):
            assert c.post("/api/v1/tasks", json={"title": "t", "due_on": str(day)}).is_success
        pages = [c.get(path) for path in ("/", "/tasks", "/tasks/1", "/tasks/2")]
        context = c.get("/api/v1/context")
    assert all(page.status_code == 200 for page in pages)
    assert context.status_code == 200
    assert _count(engine, tasks) == 2


def test_rule_error_is_invalid_input() -> None:
    error = RuleError("date out of range")
    assert isinstance(error, InvalidInput) and isinstance(error, ValueError)
    assert (error.code, error.exit_code, error.http_status) == ("invalid_rule", 2, 422)
