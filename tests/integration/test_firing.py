"""Firing: due schedules become tasks and fires, exactly once per schedule and date."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, func, select, update

from ondeck.core.models import Schedule
from ondeck.db.tables import fires, tasks
from ondeck.db.tables import schedules as schedules_table
from ondeck.host.settings import Settings
from ondeck.system import events
from ondeck.work import firing, schedules

UTC_ZONE = ZoneInfo("UTC")
SEOUL = ZoneInfo("Asia/Seoul")
# Wednesday 2026-06-17, 09:00 UTC. The Mondays before it: 06-15, 06-08, 06-01, 05-25.
WED = datetime(2026, 6, 17, 9, 0, tzinfo=UTC)


def _at(day: date, hour: int = 9) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def _create(engine: Engine, now: datetime = WED, zone: Any = UTC_ZONE, **kw: Any) -> int:
    kw.setdefault("title", "weekly check")
    kw.setdefault("rule", "daily")
    with engine.begin() as conn:
        return schedules.create_schedule(conn, now, zone, **kw).id


def _get(engine: Engine, schedule_id: int) -> Schedule:
    with engine.connect() as conn:
        return schedules.get_schedule(conn, schedule_id)


def _tasks(engine: Engine, schedule_id: int | None = None) -> list[Any]:
    query = select(tasks).order_by(tasks.c.due_on)
    if schedule_id is not None:
        query = query.where(tasks.c.source.startswith(f"sch:{schedule_id}:"))
    with engine.connect() as conn:
        return list(conn.execute(query))


def _fires(engine: Engine, schedule_id: int) -> list[Any]:
    with engine.connect() as conn:
        return list(
            conn.execute(
                select(fires).where(fires.c.schedule_id == schedule_id).order_by(fires.c.fire_date)
            )
        )


def _events(engine: Engine, schedule_id: int, kind: str) -> list[events.Event]:
    with engine.connect() as conn:
        return events.list_events(conn, subject=f"schedule:{schedule_id}", kind=kind)


def test_a_due_task_schedule_makes_one_task_and_one_fire(engine: Engine) -> None:
    sid = _create(engine, title="water the plants", body="all of them", priority=1, project="home")
    result = firing.fire_due(engine, WED, UTC_ZONE)
    assert (result.fired, result.tasks, result.coalesced) == (1, 1, 0)
    [task] = _tasks(engine, sid)
    assert task.source == f"sch:{sid}:2026-06-17"
    assert (task.title, task.body, task.priority, task.project) == (
        "water the plants",
        "all of them",
        1,
        "home",
    )
    assert task.due_on == date(2026, 6, 17)
    assert task.status == "READY"
    [fire] = _fires(engine, sid)
    assert (fire.fire_date, fire.fired_at, fire.task_id, fire.skipped) == (
        date(2026, 6, 17),
        WED,
        task.id,
        0,
    )
    schedule = _get(engine, sid)
    assert schedule.next_due == date(2026, 6, 18)
    assert (schedule.last_fired_on, schedule.last_fired_at) == (date(2026, 6, 17), WED)
    [event] = _events(engine, sid, "schedule.fired")
    assert event.actor == "jobs"
    assert event.details == {"fire_date": "2026-06-17", "skipped": 0, "task_id": task.id}


def test_running_the_tick_again_creates_nothing_more(engine: Engine) -> None:
    sid = _create(engine)
    firing.fire_due(engine, WED, UTC_ZONE)
    again = firing.fire_due(engine, WED + timedelta(minutes=1), UTC_ZONE)
    assert (again.fired, again.tasks, again.schedules) == (0, 0, 0)
    assert len(_tasks(engine, sid)) == 1
    assert len(_fires(engine, sid)) == 1


def test_a_remind_schedule_fires_without_a_task(engine: Engine) -> None:
    sid = _create(engine, kind="remind")
    result = firing.fire_due(engine, WED, UTC_ZONE)
    assert (result.fired, result.tasks) == (1, 0)
    assert _tasks(engine) == []
    [fire] = _fires(engine, sid)
    assert fire.task_id is None


def test_a_schedule_not_yet_due_does_not_fire(engine: Engine) -> None:
    sid = _create(engine, rule="weekly:MON")
    assert _get(engine, sid).next_due == date(2026, 6, 22)
    assert firing.fire_due(engine, WED, UTC_ZONE).fired == 0
    assert _fires(engine, sid) == []


def test_paused_and_removed_schedules_do_not_fire(engine: Engine) -> None:
    paused, removed = _create(engine), _create(engine)
    with engine.begin() as conn:
        schedules.pause_schedule(conn, WED, paused)
        schedules.delete_schedule(conn, WED, removed)
    assert firing.fire_due(engine, WED, UTC_ZONE).fired == 0
    assert _tasks(engine) == []


def test_now_on_a_wednesday_fires_once_at_the_tick_and_never_twice(engine: Engine) -> None:
    sid = _create(engine, rule="weekly:MON")
    with engine.begin() as conn:
        pulled = schedules.pull_now(conn, WED, UTC_ZONE, sid)
    assert pulled.next_due == date(2026, 6, 17)
    assert _tasks(engine) == [], "now creates nothing: the tick does"
    assert len(_events(engine, sid, "schedule.pulled_now")) == 1

    firing.fire_due(engine, WED + timedelta(minutes=1), UTC_ZONE)
    [task] = _tasks(engine, sid)
    assert task.source == f"sch:{sid}:2026-06-17"
    after = _get(engine, sid)
    assert after.next_due == date(2026, 6, 22)

    later = WED + timedelta(hours=3)
    with engine.begin() as conn:
        schedules.pull_now(conn, later, UTC_ZONE, sid)
    result = firing.fire_due(engine, later + timedelta(minutes=1), UTC_ZONE)
    assert (result.fired, result.tasks) == (0, 0)
    assert len(_tasks(engine, sid)) == 1
    assert len(_fires(engine, sid)) == 1
    final = _get(engine, sid)
    assert final.next_due == date(2026, 6, 22)
    # Nothing fired the second time, so the record still says when it did.
    assert final.last_fired_at == WED + timedelta(minutes=1)
    assert len(_events(engine, sid, "schedule.fired")) == 1


def _fired_three_weeks_ago(engine: Engine, **kw: Any) -> int:
    """A weekly:MON schedule that fired on Monday 05-25, then the jobs process was down."""
    monday = date(2026, 5, 25)
    sid = _create(engine, now=_at(monday), rule="weekly:MON", **kw)
    firing.fire_due(engine, _at(monday), UTC_ZONE)
    assert _get(engine, sid).next_due == date(2026, 6, 1)
    return sid


def test_downtime_coalesces_into_one_fire_for_the_latest_monday(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    sid = _fired_three_weeks_ago(engine)
    result = firing.fire_due(engine, WED, UTC_ZONE)
    assert (result.fired, result.coalesced) == (1, 2)
    assert [f.fire_date for f in _fires(engine, sid)] == [date(2026, 5, 25), date(2026, 6, 15)]
    assert _fires(engine, sid)[-1].skipped == 2
    assert [t.source for t in _tasks(engine, sid)] == [
        f"sch:{sid}:2026-05-25",
        f"sch:{sid}:2026-06-15",
    ]
    assert _get(engine, sid).next_due == date(2026, 6, 22)


def test_every_3_after_ten_days_down_fires_once_with_two_skipped(engine: Engine) -> None:
    start = date(2026, 6, 1)
    sid = _create(engine, now=_at(start), rule="every:3", start_on=start)
    firing.fire_due(engine, _at(start), UTC_ZONE)
    assert _get(engine, sid).next_due == date(2026, 6, 4)
    result = firing.fire_due(engine, _at(date(2026, 6, 11)), UTC_ZONE)
    assert (result.fired, result.coalesced) == (1, 2)
    last = _fires(engine, sid)[-1]
    assert (last.fire_date, last.skipped) == (date(2026, 6, 10), 2)
    assert _get(engine, sid).next_due == date(2026, 6, 13)


def test_missed_all_makes_one_task_per_missed_monday(engine: Engine) -> None:
    sid = _fired_three_weeks_ago(engine, missed="all")
    result = firing.fire_due(engine, WED, UTC_ZONE)
    assert (result.fired, result.tasks, result.coalesced) == (3, 3, 0)
    assert [t.due_on for t in _tasks(engine, sid)][1:] == [
        date(2026, 6, 1),
        date(2026, 6, 8),
        date(2026, 6, 15),
    ]
    assert all(f.skipped == 0 for f in _fires(engine, sid))
    schedule = _get(engine, sid)
    assert (schedule.next_due, schedule.last_fired_on) == (date(2026, 6, 22), date(2026, 6, 15))


def test_missed_all_backfills_at_most_31_dates(engine: Engine) -> None:
    start = date(2026, 1, 1)
    sid = _create(engine, now=_at(start), rule="daily", missed="all")
    result = firing.fire_due(engine, _at(date(2026, 3, 1)), UTC_ZONE)
    assert result.fired == 31
    made = _fires(engine, sid)
    assert made[0].fire_date == date(2026, 1, 30)
    assert made[-1].fire_date == date(2026, 3, 1)
    # January 1 to 29 were not fired: the first kept fire counts them.
    assert made[0].skipped == 29


def test_missed_skip_fires_nothing_for_the_past(engine: Engine) -> None:
    sid = _fired_three_weeks_ago(engine, missed="skip")
    result = firing.fire_due(engine, WED, UTC_ZONE)
    assert (result.fired, result.tasks, result.skipped) == (0, 0, 3)
    assert len(_tasks(engine, sid)) == 1
    schedule = _get(engine, sid)
    assert schedule.next_due == date(2026, 6, 22)
    assert schedule.last_fired_on == date(2026, 5, 25), "nothing fired, so nothing claims it did"
    [event] = _events(engine, sid, "schedule.skipped")
    assert event.details["dates"] == 3
    assert (event.details["first"], event.details["last"]) == ("2026-06-01", "2026-06-15")


def test_missed_skip_still_fires_today(engine: Engine) -> None:
    monday = date(2026, 6, 15)
    sid = _create(engine, now=_at(date(2026, 6, 1)), rule="weekly:MON", missed="skip")
    result = firing.fire_due(engine, _at(monday), UTC_ZONE)
    assert (result.fired, result.skipped) == (1, 2)
    assert [t.due_on for t in _tasks(engine, sid)] == [monday]


def test_midnight_is_the_configured_zones_midnight(engine: Engine) -> None:
    """With Asia/Seoul, the 1st begins at 15:00 UTC on the day before, not at 00:00 UTC."""
    sid = _create(engine, now=datetime(2026, 6, 20, 3, tzinfo=UTC), zone=SEOUL, rule="monthly:1")
    assert _get(engine, sid).next_due == date(2026, 7, 1)
    before = datetime(2026, 6, 30, 14, 59, 59, tzinfo=UTC)  # 23:59:59 in Seoul
    assert firing.fire_due(engine, before, SEOUL).fired == 0
    midnight = datetime(2026, 6, 30, 15, 0, tzinfo=UTC)  # 00:00 on July 1st in Seoul
    assert firing.fire_due(engine, midnight, SEOUL).fired == 1
    [task] = _tasks(engine, sid)
    assert task.due_on == date(2026, 7, 1)
    assert task.source == f"sch:{sid}:2026-07-01"


def test_the_same_instant_in_utc_is_still_june_30(engine: Engine) -> None:
    sid = _create(engine, now=datetime(2026, 6, 20, 3, tzinfo=UTC), rule="monthly:1")
    assert firing.fire_due(engine, datetime(2026, 6, 30, 15, 0, tzinfo=UTC), UTC_ZONE).fired == 0
    assert _fires(engine, sid) == []


def test_many_due_schedules_are_fired_in_batches(engine: Engine) -> None:
    ids = [_create(engine, title=f"s{i}") for i in range(23)]
    result = firing.fire_due(engine, WED, UTC_ZONE, batch=5)
    assert (result.fired, result.tasks, result.batches) == (23, 23, 5)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(fires)).scalar() == 23
    assert {t.source for t in _tasks(engine)} == {f"sch:{i}:2026-06-17" for i in ids}


def test_an_unreadable_stored_rule_does_not_stop_the_others(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    broken, fine = _create(engine), _create(engine)
    with engine.begin() as conn:
        conn.execute(
            update(schedules_table).where(schedules_table.c.id == broken).values(rule="fortnightly")
        )
    with caplog.at_level(logging.ERROR, logger="ondeck.firing"):
        result = firing.fire_due(engine, WED, UTC_ZONE, batch=1)
    assert (result.fired, result.errors) == (1, 1)
    assert len(_tasks(engine, fine)) == 1
    assert "fortnightly" in caplog.text


def test_fire_due_inside_a_callers_transaction(engine: Engine) -> None:
    sid = _create(engine)
    with engine.begin() as conn:
        result = firing.fire_due(conn, WED, UTC_ZONE)
    assert result.fired == 1
    assert len(_fires(engine, sid)) == 1


def test_the_fire_step_logs_what_it_fired_and_coalesced(
    engine: Engine, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    _fired_three_weeks_ago(engine)
    _create(engine, kind="remind")
    with caplog.at_level(logging.INFO, logger="ondeck"):
        summary = firing.fire_step(engine, WED, settings)
    assert summary["fired"] == 2
    assert summary["coalesced"] == 2
    assert summary["tasks"] == 1
    assert "fired 2 schedule dates" in caplog.text
    assert "coalesced 2 missed days" in caplog.text


def test_due_dates_include_a_pulled_day_that_is_not_an_occurrence() -> None:
    rule = schedules.parse_rule("weekly:MON")
    found = firing.due_dates(rule, date(2026, 1, 1), date(2026, 6, 3), date(2026, 6, 17), limit=9)
    assert found == [date(2026, 6, 3), date(2026, 6, 8), date(2026, 6, 15)]


def test_a_schedule_gives_its_side_to_the_tasks_it_fires(engine: Engine) -> None:
    """What a schedule fires is of its side (or, without one, of none:
    the inbox), so a session of another side never claims it."""
    from ondeck.core.errors import NothingClaimable
    from ondeck.core.sides import SideView
    from ondeck.work import backlog_leases

    made = {
        side: _create(engine, title=f"매일 {side}", side=side)
        for side in ("work", "personal", None)
    }
    result = firing.fire_due(engine, WED, UTC_ZONE)
    assert result.tasks == 3
    for side, sid in made.items():
        [task] = _tasks(engine, sid)
        assert task.side == side, side
    with engine.begin() as conn:
        taken = backlog_leases.claim_next(
            conn, WED, owner="w", actor="w", view=SideView(sides_on=True, side="work")
        )
        assert taken.source == f"sch:{made['work']}:2026-06-17" and taken.side == "work"
        with pytest.raises(NothingClaimable):
            backlog_leases.claim_next(
                conn, WED, owner="w", actor="w", view=SideView(sides_on=True, side="work")
            )
