"""Whether the jobs loop is alive is judged once (`heartbeat.jobs_health`) and told the same
everywhere, and a silent loop is never hidden.

A heartbeat from the future is no proof of life: a jobs tick run with a clock three days
ahead must not hide a dead loop (no `jobs_not_running`, no `backup_stale`) until real time
catches up, while nothing fires. A heartbeat records the zone, interval and lease grace of
the process that wrote it, and "silent" is measured in that process's own interval.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from ondeck.context.build import context_for
from ondeck.db.tables import workers as workers_table
from ondeck.entrypoints.api.app import create_app
from ondeck.entrypoints.jobs.loop import Jobs
from ondeck.host.settings import Settings, load_settings
from ondeck.system import heartbeat
from ondeck.work import backlog, backlog_leases, schedules
from support.surfaces import read_all, texts

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONDECK_TZ", "UTC")
    monkeypatch.setenv("COLUMNS", "400")


def _beat(engine: Engine, at: datetime, name: str = "jobs@test:1", **recorded: Any) -> None:
    with engine.begin() as conn:
        heartbeat.beat(conn, at, name=name, started_at=at, tick_ms=1.0, summary={}, **recorded)


def _codes(engine: Engine, settings: Settings, now: datetime) -> dict[str, str]:
    with engine.connect() as conn:
        ctx = context_for(conn, now, settings)
    return {w.code: w.message for w in ctx.warnings}


def test_a_tick_from_a_clock_three_days_ahead_does_not_hide_a_dead_loop(
    engine: Engine, settings: Settings, db_url: str
) -> None:
    """A whole `jobs --once` tick at +3 d (fire, reap, backup, heartbeat), then
    every surface read with the real clock."""
    with engine.begin() as conn:
        schedules.create_schedule(conn, NOW, settings.zone, title="daily report", rule="daily")
        task = backlog.create_task(conn, NOW, title="held", actor="cli")
    ahead = NOW + timedelta(days=3)
    with time_machine.travel(ahead, tick=False):
        jobs = Jobs(engine=engine, settings=settings)
        jobs.tick(ahead)
        jobs.backups.join()  # the backup is written beside the tick: let it finish
    with engine.begin() as conn:  # claimed with the real clock, after the tick from ahead
        later = NOW + timedelta(hours=1)
        backlog_leases.claim_task(
            conn, later, task.id, owner="cli:bob", duration="15m", actor="cli"
        )

    found = read_all(engine, settings, db_url, NOW + timedelta(hours=8), task_id=task.id)
    warnings = {w["code"]: w["message"] for w in found["context.json"]["warnings"]}
    assert "jobs_not_running" in warnings
    skew = warnings["clock_skew"]
    assert "2026-06-18T09:00:00+00:00" in skew and "2026-06-15T17:00:00+00:00" in skew
    assert "in the future" in warnings["backup_stale"]  # the backup it made is not counted
    assert "the latest 2026-06-18" in warnings["fired_early"]
    told = texts(found)
    for where in ("context.markdown", "context.hook", "cli context", "api context markdown"):
        assert "jobs_not_running" in told[where] and "clock_skew" in told[where], where
    for where in ("mcp get_context", "web /"):
        assert "jobs_not_running" in told[where] and "clock_skew" in told[where], where
    lease = found["api task"]["lease"]
    assert lease["jobs_ticking"] is False and "nothing will release it" in lease["summary"]

    board = found["web /schedules"]
    assert "Clock skew" in board and "has not ticked before now" in board
    system = found["web /system"]
    assert "dated in the future" in system and "The jobs loop is not running" in system
    assert "2026-06-18T09:00:00+00:00" in system
    health = found["api health"]
    assert health["jobs_ticking"] is False and health["jobs_last_tick_at"] is None
    assert health["jobs"]["ahead_tick_at"] == "2026-06-18T09:00:00+00:00"


def test_a_live_loop_and_one_ahead_are_both_told(engine: Engine, settings: Settings) -> None:
    """One process ticks now, another with a clock ahead: alive, and the skew is named."""
    _beat(engine, NOW - timedelta(seconds=20), "jobs@here:1")
    _beat(engine, NOW + timedelta(hours=2), "jobs@ahead:2")
    codes = _codes(engine, settings, NOW)
    assert "jobs_not_running" not in codes
    assert "jobs@ahead:2" in codes["clock_skew"] and "2 h after" in codes["clock_skew"]


def test_a_heartbeat_within_the_skew_tolerance_is_an_ordinary_tick(
    engine: Engine, settings: Settings
) -> None:
    _beat(engine, NOW + timedelta(seconds=30))
    codes = _codes(engine, settings, NOW)
    assert "clock_skew" not in codes and "jobs_not_running" not in codes


def test_silent_is_three_of_the_writers_own_intervals(
    engine: Engine, settings: Settings, db_url: str
) -> None:
    """A loop ticking every 10 min is alive after 25 min though this process ticks each
    minute, and silent after 31; every surface agrees."""
    _beat(engine, NOW, tz="UTC", tick_seconds=600.0, lease_grace=timedelta(hours=6))
    with engine.begin() as conn:
        task = backlog.create_task(conn, NOW, title="x", actor="cli")
    alive = read_all(engine, settings, db_url, NOW + timedelta(minutes=25), task_id=task.id)
    assert "jobs_not_running" not in alive["context.markdown"]
    assert "jobs_not_running" not in alive["web /"]
    assert "The jobs loop is ticking" in alive["web /system"]
    assert "waiting for the jobs loop" not in alive["web /schedules"]
    assert alive["api health"]["jobs_ticking"] is True
    assert alive["api health"]["jobs"]["tick_seconds"] == 600.0

    silent = read_all(engine, settings, db_url, NOW + timedelta(minutes=31), task_id=task.id)
    assert "jobs_not_running: the jobs loop has not ticked since" in silent["context.markdown"]
    assert 'data-code="jobs_not_running"' in silent["web /"]
    assert "The jobs loop is not running" in silent["web /system"]
    assert "has not ticked since" in silent["web /schedules"]
    assert silent["api health"]["jobs_ticking"] is False


def test_a_heartbeat_without_a_recorded_interval_uses_the_readers(
    engine: Engine, settings: Settings
) -> None:
    """Rows written before revision 0002 have no interval: the reader's tick judges them."""
    _beat(engine, NOW)
    assert "jobs_not_running" not in _codes(engine, settings, NOW + timedelta(minutes=3))
    assert "jobs_not_running" in _codes(engine, settings, NOW + timedelta(minutes=3, seconds=1))
    slow = settings.model_copy(update={"tick_seconds": 600.0})
    assert "jobs_not_running" not in _codes(engine, slow, NOW + timedelta(minutes=29))


def test_the_jobs_tick_records_its_zone_interval_and_grace(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    seoul = load_settings(
        database_url=db_url,
        tz="Asia/Seoul",
        tick_seconds=30,
        lease_grace="2h",
        data_dir=tmp_path / "data",
        backup_dir=tmp_path / "backups",
    )
    Jobs(engine=engine, settings=seoul, steps=[]).tick(NOW)
    with engine.connect() as conn:
        row = conn.execute(select(workers_table)).one()
    assert (row.tz, row.tick_seconds, row.lease_grace_seconds) == ("Asia/Seoul", 30.0, 7200.0)


def test_a_loop_with_other_settings_is_named_on_the_context_and_the_system_page(
    engine: Engine, settings: Settings
) -> None:
    """Jobs fires dates in Seoul and releases after 1 h; this server shows UTC and 6 h."""
    _beat(
        engine,
        NOW - timedelta(seconds=5),
        tz="Asia/Seoul",
        tick_seconds=60.0,
        lease_grace=timedelta(hours=1),
    )
    differ = _codes(engine, settings, NOW)["jobs_settings_differ"]
    assert "it fires dates in Asia/Seoul, this process shows them in UTC" in differ
    assert "releases leases 60 min after they end, this process assumes 6 h" in differ
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as client:
        page = client.get("/system").text
    assert "Asia/Seoul" in page and "(this server: UTC)" in page
    assert "60.0 s" in page and "60 min" in page


def test_the_system_page_says_not_recorded_for_old_heartbeats(
    engine: Engine, settings: Settings
) -> None:
    _beat(engine, NOW - timedelta(seconds=5))
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as client:
        page = client.get("/system").text
    assert page.count("not recorded") == 3
    assert "The jobs loop is ticking" in page


def test_the_overdue_and_pending_readers_share_the_index_predicate(engine: Engine) -> None:
    """SCHEDULES_LIVE is the text of ix_schedules_due's WHERE, on both stores."""
    from sqlalchemy import inspect

    from ondeck.db.tables import SCHEDULES_LIVE, schedules

    [index] = [ix for ix in schedules.indexes if ix.name == "ix_schedules_due"]
    dialect = engine.dialect.name
    assert index.dialect_options[dialect]["where"] is SCHEDULES_LIVE
    names = {ix["name"] for ix in inspect(engine).get_indexes("schedules")}
    assert "ix_schedules_due" in names


@pytest.mark.parametrize(("theirs", "warned"), [("Etc/UTC", False), ("Asia/Tokyo", True)])
def test_a_zone_is_judged_by_the_dates_it_gives_not_its_name(
    engine: Engine, settings: Settings, theirs: str, warned: bool
) -> None:
    _beat(engine, NOW - timedelta(seconds=5), tz=theirs, tick_seconds=60.0)
    assert ("jobs_settings_differ" in _codes(engine, settings, NOW)) is warned


def test_a_loop_whose_ticks_take_long_is_slow_not_dead(engine: Engine, settings: Settings) -> None:
    """Interval 60 s, last tick took 5 min: it beats every 6 min, silent only after 18."""
    with engine.begin() as conn:
        heartbeat.beat(
            conn, NOW, name="jobs@slow:1", started_at=NOW, tick_ms=300_000.0, summary={},
            tick_seconds=60.0,
        )  # fmt: skip
    assert "jobs_not_running" not in _codes(engine, settings, NOW + timedelta(minutes=17))
    assert "jobs_not_running" in _codes(engine, settings, NOW + timedelta(minutes=19))


def test_a_tick_forgets_processes_long_ended_and_nothing_else(engine: Engine) -> None:
    """`jobs --once` from cron adds a row a run: the rows of processes that stopped over a
    day ago, or fell silent a week ago, go at the next tick of any process; the others stay."""
    rows = {
        "jobs@cron:1": (NOW - timedelta(days=3), NOW - timedelta(days=3)),  # stopped: goes
        "jobs@cron:2": (NOW - timedelta(hours=20), NOW - timedelta(hours=20)),  # stopped: stays
        "jobs@gone:3": (NOW - timedelta(days=8), None),  # silent a week, never stopped: goes
        "jobs@slow:4": (NOW - timedelta(days=6), None),  # silent 6 days: stays
    }
    for name, (last, _) in rows.items():
        _beat(engine, last, name=name)
    for name, (_, stopped_at) in rows.items():
        if stopped_at is not None:
            with engine.begin() as conn:
                heartbeat.stopped(conn, stopped_at, name)
    with engine.connect() as conn:
        assert len(heartbeat.list_workers(conn, limit=100)) == 4  # each was fresh at its beats
    _beat(engine, NOW, name="jobs@now:5")
    with engine.connect() as conn:
        names = {w.name for w in heartbeat.list_workers(conn, limit=100)}
    assert names == {"jobs@cron:2", "jobs@slow:4", "jobs@now:5"}


def test_with_no_process_ticking_the_last_heartbeat_stays_to_say_so(engine: Engine) -> None:
    _beat(engine, NOW - timedelta(days=30), name="jobs@old:1")
    with engine.connect() as conn:
        health = heartbeat.jobs_health(conn, NOW, tick_seconds=60)
        assert [w.name for w in heartbeat.list_workers(conn)] == ["jobs@old:1"]
    assert not health.alive
    assert health.last_tick == NOW - timedelta(days=30)
