"""Schedule services: next_due on create/edit/resume, "now", pause, soft delete, refusals."""

from __future__ import annotations

import threading
import time
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, func, select

from ondeck.core.errors import Conflict, InvalidInput, NotFound
from ondeck.db.tables import events as events_table
from ondeck.db.tables import schedules as schedules_table
from ondeck.entrypoints.jobs.loop import Jobs
from ondeck.host.settings import Settings
from ondeck.system import events
from ondeck.work import firing, schedules

UTC_ZONE = ZoneInfo("UTC")
WED = datetime(2026, 6, 17, 9, 0, tzinfo=UTC)  # a Wednesday


def _create(engine: Engine, now: datetime = WED, **kw: Any) -> schedules.Schedule:
    kw.setdefault("title", "weekly check")
    kw.setdefault("rule", "weekly:MON")
    with engine.begin() as conn:
        return schedules.create_schedule(conn, now, UTC_ZONE, **kw)


def _count(engine: Engine, table: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_create_sets_next_due_to_the_first_occurrence_from_today(engine: Engine) -> None:
    schedule = _create(engine, rule="  Weekly: mon ", project="ondeck", priority=1)
    assert schedule.rule == "weekly:MON"
    assert schedule.start_on == date(2026, 6, 17)
    assert schedule.next_due == date(2026, 6, 22)
    data = schedule.to_json(WED, ZoneInfo("Asia/Seoul"))
    assert set(data) == {
        "id", "title", "body", "kind", "rule", "rule_text", "project", "side", "start_on",
        "next_due", "missed", "last_fired_on", "last_fired_at", "enabled", "priority", "created_at",
        "updated_at",
    }  # fmt: skip
    assert data["rule_text"] == "every Monday"
    assert data["created_at"] == "2026-06-17T18:00:00+09:00"
    assert data["missed"] == "latest"


def test_create_counts_from_a_later_start(engine: Engine) -> None:
    schedule = _create(engine, rule="every:3", start_on=date(2026, 7, 1))
    assert schedule.next_due == date(2026, 7, 1)
    assert schedule.upcoming(date(2026, 6, 17), 3) == [
        date(2026, 7, 1),
        date(2026, 7, 4),
        date(2026, 7, 7),
    ]


def test_create_today_when_today_matches(engine: Engine) -> None:
    assert _create(engine, rule="daily").next_due == date(2026, 6, 17)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"rule": "monthly:31"}, "not every month has a day 31"),
        ({"rule": "0 9 * * 1"}, "cron"),
        ({"title": "  "}, "title must not be empty"),
        ({"priority": 10}, "priority 10 is out of range"),
        ({"project": "no spaces"}, "project"),
        ({"kind": "email"}, "kind 'email'"),
        ({"missed": "some"}, "missed 'some'"),
    ],
)
def test_invalid_input_is_refused_and_nothing_is_written(
    engine: Engine, kw: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        _create(engine, **kw)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert _count(engine, schedules_table) == 0
    assert _count(engine, events_table) == 0


def test_an_invalid_rule_says_invalid_rule(engine: Engine) -> None:
    with pytest.raises(InvalidInput) as caught:
        _create(engine, rule="fortnightly")
    assert caught.value.code == "invalid_rule"


def test_edit_a_rule_recomputes_next_due_and_records_it(engine: Engine) -> None:
    created = _create(engine)
    with engine.begin() as conn:
        edited = schedules.edit_schedule(conn, WED, UTC_ZONE, created.id, rule="weekly:THU")
    assert edited.next_due == date(2026, 6, 18)
    with engine.connect() as conn:
        [event] = events.list_events(conn, subject=f"schedule:{created.id}", kind="schedule.edited")
    assert event.details == {"rule": "weekly:THU", "next_due": "2026-06-18"}


def test_edit_of_other_fields_keeps_an_overdue_next_due(engine: Engine) -> None:
    """Renaming a schedule the jobs process has not fired yet must not lose that fire."""
    created = _create(engine, now=datetime(2026, 6, 10, tzinfo=UTC))
    assert created.next_due == date(2026, 6, 15)
    with engine.begin() as conn:
        edited = schedules.edit_schedule(
            conn, WED, UTC_ZONE, created.id, title="renamed", priority=0, project=None
        )
    assert (edited.title, edited.priority, edited.next_due) == ("renamed", 0, date(2026, 6, 15))


def test_edit_refuses_an_invalid_rule_and_changes_nothing(engine: Engine) -> None:
    created = _create(engine)
    with pytest.raises(InvalidInput), engine.begin() as conn:
        schedules.edit_schedule(conn, WED, UTC_ZONE, created.id, title="x", rule="monthly:30")
    with engine.connect() as conn:
        assert schedules.get_schedule(conn, created.id) == created


def test_edit_does_not_point_next_due_at_a_date_that_already_fired(engine: Engine) -> None:
    created = _create(engine, rule="daily")
    firing.fire_due(engine, WED, UTC_ZONE)
    with engine.begin() as conn:
        edited = schedules.edit_schedule(conn, WED, UTC_ZONE, created.id, rule="weekly:WED,FRI")
    assert edited.next_due == date(2026, 6, 19)


def test_pause_stops_and_resume_does_not_backfill(engine: Engine) -> None:
    created = _create(engine, rule="daily")
    with engine.begin() as conn:
        paused = schedules.pause_schedule(conn, WED, created.id)
        assert schedules.pause_schedule(conn, WED, created.id) == paused  # no second change
    assert paused.enabled is False
    assert firing.fire_due(engine, WED + timedelta(days=5), UTC_ZONE).fired == 0
    later = WED + timedelta(days=10)
    with engine.begin() as conn:
        resumed = schedules.resume_schedule(conn, later, UTC_ZONE, created.id)
    assert resumed.enabled is True
    assert resumed.next_due == date(2026, 6, 27)
    firing.fire_due(engine, later, UTC_ZONE)
    with engine.connect() as conn:
        [fire] = schedules.list_fires(conn, created.id)
        kinds = [e.kind for e in events.list_events(conn, subject=f"schedule:{created.id}")]
    assert (fire.fire_date, fire.skipped) == (date(2026, 6, 27), 0)
    assert kinds.count("schedule.paused") == 1
    assert "schedule.resumed" in kinds


def test_now_on_a_paused_schedule_is_a_conflict(engine: Engine) -> None:
    created = _create(engine)
    with engine.begin() as conn:
        schedules.pause_schedule(conn, WED, created.id)
    with pytest.raises(Conflict, match="paused"), engine.begin() as conn:
        schedules.pull_now(conn, WED, UTC_ZONE, created.id)


def test_delete_hides_the_schedule_but_keeps_its_history(engine: Engine) -> None:
    created = _create(engine, rule="daily")
    firing.fire_due(engine, WED, UTC_ZONE)
    with engine.begin() as conn:
        schedules.delete_schedule(conn, WED, created.id)
    with engine.connect() as conn:
        with pytest.raises(NotFound):
            schedules.get_schedule(conn, created.id)
        assert schedules.list_schedules(conn) == []
        assert len(schedules.list_fires(conn, created.id)) == 1
        kinds = [e.kind for e in events.list_events(conn, subject=f"schedule:{created.id}")]
    assert kinds[0] == "schedule.deleted"
    for change in (
        lambda c: schedules.pull_now(c, WED, UTC_ZONE, created.id),
        lambda c: schedules.edit_schedule(c, WED, UTC_ZONE, created.id, title="x"),
        lambda c: schedules.delete_schedule(c, WED, created.id),
    ):
        with pytest.raises(NotFound), engine.begin() as conn:
            change(conn)


def test_show_gives_the_last_fires_and_the_next_five_dates(engine: Engine) -> None:
    created = _create(engine, rule="daily")
    firing.fire_due(engine, WED, UTC_ZONE)
    with engine.connect() as conn:
        shown = schedules.show_schedule(conn, WED, UTC_ZONE, created.id)
    assert shown["schedule"]["next_due"] == "2026-06-18"
    assert [f["fire_date"] for f in shown["fires"]] == ["2026-06-17"]
    assert shown["next"] == [f"2026-06-{d}" for d in range(18, 23)]


def test_list_orders_by_next_due_and_filters(engine: Engine) -> None:
    a = _create(engine, rule="weekly:FRI", kind="remind")
    b = _create(engine, rule="daily", project="p")
    with engine.connect() as conn:
        assert [s.id for s in schedules.list_schedules(conn)] == [b.id, a.id]
        assert [s.id for s in schedules.list_schedules(conn, kind="remind")] == [a.id]
        assert [s.id for s in schedules.list_schedules(conn, project="p")] == [b.id]


def test_now_wakes_a_listening_jobs_loop_on_postgresql(engine: Engine, settings: Settings) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("NOTIFY is PostgreSQL's; SQLite waits for the next tick")
    created = _create(engine, rule="weekly:MON")
    ticks: list[float] = []

    def count(engine: Engine, now: datetime, settings: Settings) -> dict[str, Any]:
        ticks.append(time.monotonic())
        return {}

    slow = settings.model_copy(update={"tick_seconds": 3600.0})
    jobs = Jobs(engine=engine, settings=slow, steps=[("count", count)], name="jobs@test:1")
    thread = threading.Thread(target=jobs.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not ticks and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(ticks) == 1
        time.sleep(1.0)  # the listener connects and LISTENs
        pressed = time.monotonic()
        with engine.begin() as conn:
            schedules.pull_now(conn, WED, UTC_ZONE, created.id)
        while len(ticks) < 2 and time.monotonic() < pressed + 5:
            time.sleep(0.02)
        assert len(ticks) == 2, "NOTIFY did not wake the loop"
        assert ticks[1] - pressed < 1.0
    finally:
        jobs.stop()
        thread.join(timeout=10)
