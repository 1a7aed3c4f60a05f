"""The invariants live in the schema: the database itself refuses rows that would lie."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine, insert, select, text, update
from sqlalchemy.exc import IntegrityError

from ondeck.db.tables import fires, schedules, tasks

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


def _task(**values: object) -> dict[str, object]:
    return {"title": "t", "created_at": NOW, "updated_at": NOW, **values}


def _schedule(engine: Engine) -> int:
    with engine.begin() as conn:
        return conn.execute(
            insert(schedules)
            .values(
                title="s", rule="daily", start_on=date(2026, 1, 1), created_at=NOW, updated_at=NOW
            )
            .returning(schedules.c.id)
        ).scalar_one()


def test_it_refuses_a_running_task_without_a_lease_end(engine: Engine) -> None:
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(insert(tasks).values(_task(status="RUNNING", lease_owner="cli:a")))


def test_it_refuses_a_running_task_without_an_owner(engine: Engine) -> None:
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(insert(tasks).values(_task(status="RUNNING", lease_until=NOW)))


def test_it_refuses_a_lease_on_a_task_that_is_not_running(engine: Engine) -> None:
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(insert(tasks).values(_task(status="READY", lease_owner="x", lease_until=NOW)))


def test_it_refuses_clearing_the_lease_end_of_a_running_task_by_hand(engine: Engine) -> None:
    with engine.begin() as conn:
        task_id = conn.execute(
            insert(tasks)
            .values(_task(status="RUNNING", lease_owner="cli:a", lease_until=NOW, lease_token=1))
            .returning(tasks.c.id)
        ).scalar_one()
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(text("UPDATE tasks SET lease_until = NULL WHERE id = :id"), {"id": task_id})
    with engine.connect() as conn:
        assert (
            conn.execute(select(tasks.c.lease_until).where(tasks.c.id == task_id)).scalar() == NOW
        )


def test_it_refuses_an_unknown_status(engine: Engine) -> None:
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(insert(tasks).values(_task(status="PAUSED")))


def test_it_refuses_an_unknown_schedule_kind(engine: Engine) -> None:
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(
            insert(schedules).values(
                title="s",
                kind="cron",
                rule="daily",
                start_on=date(2026, 1, 1),
                created_at=NOW,
                updated_at=NOW,
            )
        )


def test_it_refuses_two_tasks_with_the_same_source(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(insert(tasks).values(_task(source="sch:1:2026-06-15")))
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(insert(tasks).values(_task(source="sch:1:2026-06-15")))
    with engine.begin() as conn:  # tasks made by hand carry no source: any number of them
        conn.execute(insert(tasks).values(_task()))
        conn.execute(insert(tasks).values(_task()))


def test_it_refuses_two_fires_for_the_same_schedule_and_date(engine: Engine) -> None:
    schedule_id = _schedule(engine)
    row = {"schedule_id": schedule_id, "fire_date": date(2026, 6, 15), "fired_at": NOW}
    with engine.begin() as conn:
        conn.execute(insert(fires).values(row))
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(insert(fires).values(row))
    with engine.begin() as conn:
        conn.execute(insert(fires).values({**row, "fire_date": date(2026, 6, 16)}))


def test_instants_come_back_aware_utc_whatever_zone_went_in(engine: Engine) -> None:
    seoul = timezone(timedelta(hours=9))
    written = datetime(2026, 6, 16, 0, 30, tzinfo=seoul)
    with engine.begin() as conn:
        task_id = conn.execute(
            insert(tasks).values(_task(created_at=written)).returning(tasks.c.id)
        ).scalar_one()
    with engine.connect() as conn:
        read = conn.execute(select(tasks.c.created_at).where(tasks.c.id == task_id)).scalar_one()
    assert read == written
    assert read.utcoffset() == timedelta(0)
    assert read.isoformat() == "2026-06-15T15:30:00+00:00"


def test_instants_compare_in_sql_by_time_not_by_text(engine: Engine) -> None:
    """Stored UTC on SQLite, so a later local time with a larger offset still sorts right."""
    early = datetime(2026, 6, 15, 23, 0, tzinfo=UTC)
    later_in_seoul = datetime(2026, 6, 16, 9, 0, tzinfo=timezone(timedelta(hours=9)))  # 00:00 UTC
    with engine.begin() as conn:
        for at in (early, later_in_seoul):
            conn.execute(insert(tasks).values(_task(created_at=at)))
    with engine.connect() as conn:
        rows = (
            conn.execute(
                select(tasks.c.created_at).where(tasks.c.created_at > early).order_by(tasks.c.id)
            )
            .scalars()
            .all()
        )
    assert rows == [later_in_seoul]


def test_naive_datetimes_are_refused_before_they_reach_the_database(engine: Engine) -> None:
    with pytest.raises(Exception, match="naive"), engine.begin() as conn:
        conn.execute(insert(tasks).values(_task(created_at=datetime(2026, 6, 15, 9, 0))))


def test_lease_token_only_goes_up_by_code_not_by_constraint(engine: Engine) -> None:
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(insert(tasks).values(_task(lease_token=-1)))
    with engine.begin() as conn:
        conn.execute(update(tasks).values(lease_token=tasks.c.lease_token + 1))
