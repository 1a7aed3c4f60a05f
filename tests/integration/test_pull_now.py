""" "now" keeps the dates a schedule owes and promises only a fire that will come, and
dates dropped without a fire are counted where they are dropped and
shown by `schedule show` (pause/resume, `missed=skip`).
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from mcp import Client
from ondeck.core.models import Schedule
from ondeck.db.tables import events as events_table
from ondeck.db.tables import fires, tasks
from ondeck.db.tables import schedules as schedules_table
from ondeck.entrypoints.api.app import create_app
from ondeck.entrypoints.mcp.tools import build_server
from ondeck.host.settings import Settings, load_settings
from ondeck.system import heartbeat
from ondeck.work import backlog_leases, firing, schedules
from support.surfaces import cli

SEOUL = ZoneInfo("Asia/Seoul")
# Monday 2026-06-15 09:00 in Seoul; the schedules are made then, "now" comes 5 days later.
MADE = datetime(2026, 6, 15, 0, 0, tzinfo=UTC)
LATER = MADE + timedelta(days=5)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONDECK_TZ", "Asia/Seoul")
    monkeypatch.setenv("COLUMNS", "400")


@pytest.fixture
def settings(db_url: str, tmp_path: Any) -> Settings:
    """The suite's settings in Seoul, a zone far from UTC."""
    return load_settings(
        database_url=db_url,
        tz="Asia/Seoul",
        data_dir=tmp_path / "data",
        backup_dir=tmp_path / "backups",
    )


def _make(engine: Engine, rule: str = "daily", missed: str = "latest", **kw: Any) -> int:
    with engine.begin() as conn:
        made = schedules.create_schedule(
            conn, MADE, SEOUL, title=f"{missed} report", rule=rule, missed=missed, **kw
        )
    return made.id


def _now(engine: Engine, schedule_id: int, at: datetime = LATER) -> Schedule:
    with engine.begin() as conn:
        return schedules.pull_now(conn, at, SEOUL, schedule_id)


def _outcome(engine: Engine, schedule_id: int) -> tuple[int, list[tuple[date, int]]]:
    with engine.connect() as conn:
        made = conn.execute(
            select(func.count())
            .select_from(tasks)
            .where(tasks.c.source.like(f"sch:{schedule_id}:%"))
        ).scalar_one()
        fired = conn.execute(
            select(fires.c.fire_date, fires.c.skipped)
            .where(fires.c.schedule_id == schedule_id)
            .order_by(fires.c.fire_date)
        ).all()
    return int(made), [tuple(f) for f in fired]


@pytest.mark.parametrize(
    ("missed", "tasks_made", "skipped"),
    [("all", 6, 0), ("latest", 1, 5)],
)
def test_now_on_an_overdue_schedule_keeps_the_dates_it_owes(
    engine: Engine, missed: str, tasks_made: int, skipped: int
) -> None:
    """A "now" then a tick gives what the tick alone gives (6 tasks for `all`,
    one with `skipped 5` for `latest`), not one task with `skipped 0`."""
    pulled, alone = _make(engine, missed=missed), _make(engine, missed=missed)
    assert _now(engine, pulled).next_due == date(2026, 6, 15), "it only ever moves earlier"
    firing.fire_due(engine, LATER, SEOUL)
    with_now, without = _outcome(engine, pulled), _outcome(engine, alone)
    assert with_now[0] == without[0] == tasks_made
    assert [s for _, s in with_now[1]] == [s for _, s in without[1]]
    assert sum(s for _, s in with_now[1]) == skipped
    assert with_now[1][-1][0] == date(2026, 6, 20)


@pytest.mark.parametrize("missed", ["latest", "all", "skip"])
@pytest.mark.parametrize("offset", [-3, -1, 0, 1, 4])
def test_now_never_moves_a_date_later_than_it_fires(
    engine: Engine, missed: str, offset: int
) -> None:
    """Whatever the state: after "now" the schedule is due today or earlier, never later,
    and the tick that follows fires today's date."""
    schedule_id = _make(engine, missed=missed)
    day = date(2026, 6, 20)
    with engine.begin() as conn:  # put next_due `offset` days from today
        conn.execute(
            schedules_table.update()
            .where(schedules_table.c.id == schedule_id)
            .values(next_due=day + timedelta(days=offset))
        )
    pulled = _now(engine, schedule_id)
    assert pulled.next_due is not None and pulled.next_due <= day
    if missed != "skip":
        assert pulled.next_due == min(day + timedelta(days=offset), day)
    firing.fire_due(engine, LATER, SEOUL)
    assert _outcome(engine, schedule_id)[1][-1][0] == day


def test_now_under_missed_skip_fires_today_and_counts_what_it_dropped(engine: Engine) -> None:
    """A weekly (Monday) schedule owed since Monday, "now" on Saturday: under `skip` the
    Monday would be dropped by the tick and Saturday is no occurrence, so "now" means today
    and the dropped date is recorded and shown."""
    schedule_id = _make(engine, rule="weekly:MON", missed="skip")
    pulled = _now(engine, schedule_id)
    assert pulled.next_due == date(2026, 6, 20)
    firing.fire_due(engine, LATER, SEOUL)
    assert _outcome(engine, schedule_id) == (1, [(date(2026, 6, 20), 0)])
    with engine.connect() as conn:
        [shown] = schedules.list_skipped(conn, SEOUL, schedule_id)
    assert (shown["reason"], shown["dates"], shown["first"], shown["last"]) == (
        "now, missed=skip",
        1,
        "2026-06-15",
        "2026-06-15",
    )


def test_after_todays_fire_now_changes_nothing_and_says_so(engine: Engine) -> None:
    """The fire of today done, "now" promises no fire that will never come."""
    schedule_id = _make(engine)
    firing.fire_due(engine, LATER, SEOUL)
    with engine.begin() as conn:
        [task_id] = conn.execute(select(tasks.c.id)).scalars().all()
        backlog_leases.complete_task(conn, LATER, task_id, token=None, actor="cli")
        before = conn.execute(select(func.count()).select_from(events_table)).scalar_one()
    pulled = _now(engine, schedule_id, LATER + timedelta(hours=1))
    assert pulled.next_due == date(2026, 6, 21)
    with engine.connect() as conn:
        after = conn.execute(select(func.count()).select_from(events_table)).scalar_one()
        jobs = heartbeat.jobs_health(conn, LATER, tick_seconds=60)
    assert after == before, "nothing changed, nothing recorded"
    said = schedules.pulled_state(pulled, date(2026, 6, 20), jobs, SEOUL)
    assert "today (2026-06-20) was already processed and cannot fire twice" in said
    assert "next due 2026-06-21" in said
    firing.fire_due(engine, LATER + timedelta(hours=2), SEOUL)
    assert _outcome(engine, schedule_id)[0] == 1, "and indeed nothing more fired"


def _mcp_now(settings: Settings, engine: Engine, schedule_id: int) -> str:
    async def main() -> Any:
        async with Client(build_server(settings, engine)) as client:
            return await client.call_tool("pull_schedule_now", {"schedule_id": schedule_id})

    result = asyncio.run(main())
    assert not result.is_error, result.content
    return str(result.structured_content["note"])


def _surfaces_of_now(
    engine: Engine, settings: Settings, db_url: str, schedule_id: int, at: datetime
) -> dict[str, str]:
    """What `schedule now` answers on the CLI (text and --json), the dashboard (flash and
    the htmx row) and MCP."""
    found: dict[str, str] = {}
    with time_machine.travel(at, tick=False):
        found["cli"] = cli(db_url, "schedule", "now", str(schedule_id))
        found["cli --json"] = json.loads(
            cli(db_url, "schedule", "now", str(schedule_id), "--json")
        )["note"]
        with TestClient(create_app(settings, engine)) as client:
            page = client.get("/schedules").text
            token = page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
            form = {"csrf_token": token, "next": "/schedules"}
            row = client.post(
                f"/schedules/{schedule_id}/now", data=form, headers={"hx-request": "true"}
            )
            assert row.status_code == 200, row.text
            found["web row"] = row.text
        found["mcp"] = _mcp_now(settings, engine, schedule_id)
    return found


def test_every_now_says_the_fire_will_not_come_after_todays(
    engine: Engine, settings: Settings, db_url: str
) -> None:
    schedule_id = _make(engine)
    firing.fire_due(engine, LATER, SEOUL)
    found = _surfaces_of_now(engine, settings, db_url, schedule_id, LATER + timedelta(hours=1))
    for where, said in found.items():
        assert "was already processed and cannot fire twice" in said, where
        assert "next jobs tick fires it" not in said and "will be created" not in said, where


def test_every_now_says_the_jobs_loop_never_ticked(
    engine: Engine, settings: Settings, db_url: str
) -> None:
    schedule_id = _make(engine)
    found = _surfaces_of_now(engine, settings, db_url, schedule_id, LATER)
    for where, said in found.items():
        assert "waiting for the jobs loop, which has never ticked" in said, where
        assert "within a minute" not in said, where


def test_every_now_promises_the_fire_while_the_loop_ticks(
    engine: Engine, settings: Settings, db_url: str
) -> None:
    schedule_id = _make(engine)
    with engine.begin() as conn:
        heartbeat.beat(
            conn,
            LATER - timedelta(seconds=20),
            name="jobs@t:1",
            started_at=LATER,
            tick_ms=1.0,
            summary={},
        )
    found = _surfaces_of_now(engine, settings, db_url, schedule_id, LATER)
    for where, said in found.items():
        assert (
            "overdue since 2026-06-15 — will be created by the jobs loop within a minute" in said
        ), where


def test_pause_and_resume_count_the_dates_skipped_while_paused(engine: Engine, db_url: str) -> None:
    schedule_id = _make(engine)
    with engine.begin() as conn:
        schedules.pause_schedule(conn, MADE + timedelta(hours=1), schedule_id)
        resumed = schedules.resume_schedule(conn, LATER, SEOUL, schedule_id)
    assert resumed.next_due == date(2026, 6, 20)
    with engine.connect() as conn:
        paused, back = (
            conn.execute(
                select(events_table.c.details)
                .where(events_table.c.kind.in_(["schedule.paused", "schedule.resumed"]))
                .order_by(events_table.c.id)
            )
            .scalars()
            .all()
        )
    assert paused == {"next_due": "2026-06-15"}
    assert back == {
        "next_due": "2026-06-20",
        "skipped": 5,
        "first": "2026-06-15",
        "last": "2026-06-19",
    }
    with time_machine.travel(LATER, tick=False):
        shown = cli(db_url, "schedule", "show", str(schedule_id))
        as_json = json.loads(cli(db_url, "schedule", "show", str(schedule_id), "--json"))
    assert "dates skipped (never fired)" in shown and "paused" in shown
    assert as_json["skipped"][0]["dates"] == 5


def test_a_short_pause_skips_nothing_and_says_zero(engine: Engine) -> None:
    schedule_id = _make(engine)
    with engine.begin() as conn:
        schedules.pause_schedule(conn, MADE, schedule_id)
        schedules.resume_schedule(conn, MADE + timedelta(hours=2), SEOUL, schedule_id)
        assert schedules.list_skipped(conn, SEOUL, schedule_id) == []
        details = conn.execute(
            select(events_table.c.details).where(events_table.c.kind == "schedule.resumed")
        ).scalar_one()
    assert details["skipped"] == 0


def test_a_paused_century_is_counted_within_bounds(engine: Engine) -> None:
    schedule_id = _make(engine)
    with engine.begin() as conn:
        schedules.pause_schedule(conn, MADE, schedule_id)
        schedules.resume_schedule(conn, MADE + timedelta(days=36600), SEOUL, schedule_id)
        [shown] = schedules.list_skipped(conn, SEOUL, schedule_id)
    assert shown["dates"] == 36600 and shown["first"] == "2026-06-15"


def test_dates_dropped_under_missed_skip_are_in_schedule_show(
    engine: Engine, settings: Settings, db_url: str
) -> None:
    schedule_id = _make(engine, missed="skip")
    firing.fire_due(engine, LATER, SEOUL)
    with time_machine.travel(LATER, tick=False):
        shown = cli(db_url, "schedule", "show", str(schedule_id))
        with TestClient(create_app(settings, engine)) as c:
            detail = c.get(f"/api/v1/schedules/{schedule_id}").json()
            page = c.get(f"/schedules/{schedule_id}").text
    assert "missed=skip" in shown and "2026-06-15" in shown and "2026-06-19" in shown
    assert detail["skipped"] == [
        {
            "at": detail["skipped"][0]["at"],
            "reason": "missed=skip",
            "dates": 5,
            "first": "2026-06-15",
            "last": "2026-06-19",
        }
    ]
    assert "Dates skipped" in page and "missed=skip" in page
