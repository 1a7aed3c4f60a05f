"""Runs left "running" are judged by the jobs heartbeat, never by pids: marked abandoned
with the reason once their runner is gone, left alone while it may still be working."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, insert, select

from ondeck.backups import copies as backup_copies
from ondeck.backups import liveness as backup_liveness
from ondeck.backups import runs as backup_runs
from ondeck.db.tables import backups
from ondeck.entrypoints.jobs.backup_threads import BackupThreads
from ondeck.entrypoints.jobs.loop import Jobs, default_steps
from ondeck.host.settings import Settings
from ondeck.system import events, heartbeat
from ondeck.work import schedules

NOW = datetime(2026, 6, 17, 9, 0, tzinfo=UTC)
ME = "jobs@this-host:7"


def _run(engine: Engine, worker: str | None, started_at: datetime = NOW, **extra: Any) -> int:
    with engine.begin() as conn:
        return int(
            conn.execute(
                insert(backups)
                .values(started_at=started_at, status="running", worker=worker, **extra)
                .returning(backups.c.id)
            ).scalar_one()
        )


def _beat(engine: Engine, name: str, at: datetime) -> None:
    with engine.begin() as conn:
        heartbeat.beat(conn, at, name=name, started_at=at, tick_ms=1.0, summary={})


def _status(engine: Engine, backup_id: int) -> tuple[str, str | None]:
    with engine.connect() as conn:
        row = conn.execute(select(backups).where(backups.c.id == backup_id)).one()
    return row.status, row.error


def _mark(engine: Engine, settings: Settings, now: datetime, mine: set[int] | None = None) -> int:
    return backup_liveness.mark_abandoned(engine, now, settings, me=ME, mine=mine or set())


def test_a_run_of_a_jobs_process_that_keeps_ticking_stays_running(
    engine: Engine, settings: Settings
) -> None:
    run = _run(engine, "jobs@other-host:12")
    for hours in (1, 5, 6):
        _beat(engine, "jobs@other-host:12", NOW + timedelta(hours=hours))
        assert _mark(engine, settings, NOW + timedelta(hours=hours, seconds=30)) == 0
    assert _status(engine, run) == ("running", None)


def test_a_run_whose_jobs_process_went_silent_is_abandoned(
    engine: Engine, settings: Settings
) -> None:
    run = _run(engine, "jobs@other-host:12")
    _beat(engine, "jobs@other-host:12", NOW)
    silence = backup_liveness.silent_after(settings.tick_seconds)
    assert _mark(engine, settings, NOW + silence - timedelta(seconds=1)) == 0
    assert _mark(engine, settings, NOW + silence + timedelta(seconds=1)) == 1
    status, error = _status(engine, run)
    assert status == "abandoned"
    assert "jobs@other-host:12" in (error or "")
    assert "has not ticked since 2026-06-17T09:00:00+00:00" in (error or "")
    with engine.connect() as conn:
        [event] = events.list_events(conn, kind="backup.abandoned")
    assert (event.actor, event.subject) == ("jobs", f"backup:{run}")


def test_a_run_whose_jobs_process_stopped_is_abandoned_at_once(
    engine: Engine, settings: Settings
) -> None:
    run = _run(engine, "jobs@other-host:12")
    _beat(engine, "jobs@other-host:12", NOW)
    with engine.begin() as conn:
        heartbeat.stopped(conn, NOW + timedelta(seconds=5), "jobs@other-host:12")
    assert _mark(engine, settings, NOW + timedelta(seconds=6)) == 1
    assert "stopped at" in (_status(engine, run)[1] or "")


def test_a_run_whose_jobs_process_never_beat_is_given_the_time_of_a_first_tick(
    engine: Engine, settings: Settings
) -> None:
    run = _run(engine, "jobs@other-host:13")
    silence = backup_liveness.silent_after(settings.tick_seconds)
    assert _mark(engine, settings, NOW + silence) == 0
    assert _mark(engine, settings, NOW + silence + timedelta(seconds=1)) == 1
    assert "never wrote a heartbeat" in (_status(engine, run)[1] or "")


def test_a_run_under_this_process_name_that_it_is_not_running_is_abandoned(
    engine: Engine, settings: Settings
) -> None:
    """A restarted container often gets the same pid: the name is its predecessor's too."""
    _beat(engine, ME, NOW)  # this process ticks: the heartbeat alone would say "alive"
    ours = _run(engine, ME)
    predecessors = _run(engine, ME)
    assert _mark(engine, settings, NOW, mine={ours}) == 1
    assert _status(engine, ours) == ("running", None)
    status, error = _status(engine, predecessors)
    assert status == "abandoned"
    assert "restarted under the same name" in (error or "")


def test_a_cli_run_has_no_heartbeat_and_is_abandoned_only_past_the_longest_run(
    engine: Engine, settings: Settings
) -> None:
    run = _run(engine, "cli@this-host:99")
    assert _mark(engine, settings, NOW + backup_copies.MAX_RUN) == 0
    assert _mark(engine, settings, NOW + backup_copies.MAX_RUN + timedelta(seconds=1)) == 1
    assert "longer than any run may take" in (_status(engine, run)[1] or "")
    unnamed = _run(engine, None)
    assert _mark(engine, settings, NOW + timedelta(days=1)) == 1
    assert "unknown" in (_status(engine, unnamed)[1] or "")


def test_the_backups_step_waits_on_a_running_run_and_only_maintain_marks_it(
    engine: Engine, settings: Settings
) -> None:
    """Once per tick: the backups step starts nothing beside a running run and does not
    judge it; the maintain step does."""
    with engine.begin() as conn:
        backup_runs.ensure_default_schedules(conn, NOW, settings.zone)
        [schedule] = schedules.list_schedules(conn, kind="backup")
    dead = _run(engine, "jobs@gone:1", NOW - timedelta(days=1), schedule_id=schedule.id)
    threads = BackupThreads(name=ME)
    assert threads.step(engine, NOW, settings) == {}
    assert _status(engine, dead)[0] == "running"
    assert threads.maintain(engine, NOW, settings) == {"abandoned": 1}
    assert _status(engine, dead)[0] == "abandoned"


def test_the_tick_lists_its_steps_explicitly(engine: Engine, settings: Settings) -> None:
    jobs = Jobs(engine=engine, settings=settings, name=ME)
    assert [name for name, _ in jobs.steps or []] == [
        "fire",
        "backups",
        "reap",
        "maintain",
        "sessions",
        "notes",
        "recall",
    ]
    assert [name for name, _ in default_steps(jobs.backups)] == [
        "fire",
        "backups",
        "reap",
        "maintain",
        "sessions",
        "notes",
        "recall",
    ]
