"""The jobs loop: heartbeat every tick, a failing step does not stop it, outages back off."""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from ondeck.core.errors import Unavailable
from ondeck.db.engine import make_engine
from ondeck.db.migrate import upgrade
from ondeck.entrypoints.jobs.loop import Jobs
from ondeck.host.settings import Settings, load_settings
from ondeck.system import heartbeat

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


def _count(calls: list[datetime]) -> Any:
    def step(engine: Engine, now: datetime, settings: Settings) -> dict[str, Any]:
        calls.append(now)
        return {"done": len(calls)}

    return step


def test_each_tick_writes_the_heartbeat(engine: Engine, settings: Settings) -> None:
    calls: list[datetime] = []
    jobs = Jobs(engine=engine, settings=settings, steps=[("count", _count(calls))], name="jobs@t:1")
    jobs.tick(NOW)
    jobs.tick(NOW + timedelta(minutes=1))
    with engine.connect() as conn:
        [row] = heartbeat.list_workers(conn)
        assert heartbeat.last_tick_at(conn) == NOW + timedelta(minutes=1)
    assert row.name == "jobs@t:1"
    assert row.ticks == 2
    assert row.summary == {"count": {"done": 2}}
    assert row.tick_ms is not None and row.tick_ms >= 0
    assert calls == [NOW, NOW + timedelta(minutes=1)]


def test_a_failing_step_is_logged_and_the_next_steps_still_run(
    engine: Engine,
    settings: Settings,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(engine: Engine, now: datetime, settings: Settings) -> dict[str, Any]:
        raise RuntimeError("disk on fire")

    calls: list[datetime] = []
    jobs = Jobs(
        engine=engine, settings=settings, steps=[("broken", broken), ("count", _count(calls))]
    )
    monkeypatch.setattr(logging.getLogger("ondeck"), "propagate", True)
    with caplog.at_level(logging.ERROR, logger="ondeck.jobs"):
        summary = jobs.tick(NOW)
    assert summary["broken"] == {"error": "RuntimeError: disk on fire"}
    assert calls == [NOW]
    assert "step broken failed" in caplog.text
    assert "Traceback" in caplog.text


def test_an_unreachable_database_raises_unavailable_not_a_crash(tmp_path) -> None:
    settings = load_settings(tz="UTC", tick_seconds=1)
    engine = make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")
    jobs = Jobs(engine=engine, settings=settings, steps=[])
    with pytest.raises(Unavailable, match="database unavailable"):
        jobs.tick(NOW)
    assert jobs.run(once=True) == 5


def test_the_loop_backs_off_while_the_database_is_down_and_stops_on_request() -> None:
    settings = load_settings(tz="UTC", tick_seconds=0.05)
    engine = make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")
    jobs = Jobs(engine=engine, settings=settings, steps=[])
    attempts: list[float] = []
    original = jobs.tick

    def counted(now: datetime | None = None) -> dict[str, Any]:
        attempts.append(1)
        return original(now)

    jobs.tick = counted  # type: ignore[method-assign]
    thread = threading.Thread(target=jobs.run)
    thread.start()
    threading.Event().wait(1.5)
    jobs.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()
    # Pauses of 0.05 s would mean ~30 attempts; backing off (capped at the tick) means few.
    assert 1 <= len(attempts) <= 30


def test_wake_makes_the_loop_tick_before_the_interval(engine: Engine) -> None:
    settings = load_settings(tz="UTC", tick_seconds=3600)
    calls: list[datetime] = []
    jobs = Jobs(engine=engine, settings=settings, steps=[("count", _count(calls))])
    thread = threading.Thread(target=jobs.run)
    thread.start()
    for _ in range(100):
        if calls:
            break
        threading.Event().wait(0.05)
    jobs.wake()
    for _ in range(100):
        if len(calls) >= 2:
            break
        threading.Event().wait(0.05)
    jobs.stop()
    thread.join(timeout=10)
    assert len(calls) >= 2
    with engine.connect() as conn:
        assert heartbeat.list_workers(conn)[0].stopped_at is not None


def _broken(engine: Engine, now: datetime, settings: Settings) -> dict[str, Any]:
    raise RuntimeError("disk on fire")


def test_a_failing_step_is_counted_in_the_heartbeat_and_fails_once(
    engine: Engine, settings: Settings
) -> None:
    calls: list[datetime] = []
    steps = [("broken", _broken), ("count", _count(calls))]
    jobs = Jobs(engine=engine, settings=settings, steps=steps, name="jobs@t:1")
    assert jobs.run(once=True) == 1
    with engine.connect() as conn:
        [row] = heartbeat.list_workers(conn)
    assert row.summary is not None
    assert row.summary["failed_steps"] == ["broken"]
    assert row.summary["broken"] == {"error": "RuntimeError: disk on fire"}
    assert row.summary["count"] == {"done": 1}
    assert row.stopped_at is not None
    healthy = Jobs(engine=engine, settings=settings, steps=[("count", _count(calls))])
    assert healthy.run(once=True) == 0


def test_the_loop_goes_on_past_a_failing_step(engine: Engine) -> None:
    settings = load_settings(tz="UTC", tick_seconds=0.05)
    calls: list[datetime] = []
    jobs = Jobs(
        engine=engine, settings=settings, steps=[("broken", _broken), ("count", _count(calls))]
    )
    thread = threading.Thread(target=jobs.run)
    thread.start()
    for _ in range(200):
        if len(calls) >= 3:
            break
        threading.Event().wait(0.05)
    jobs.stop()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert len(calls) >= 3


@pytest.mark.parametrize(
    "module", ["work.firing", "work.reaper", "backups.runs", "backups.liveness"]
)
def test_a_step_that_cannot_be_imported_stops_the_jobs_loop_loudly(module: str) -> None:
    """No step is registered by catching ImportError: a broken step module is an error at
    start, not a tick that silently lacks it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        f"sys.modules['ondeck.{module}'] = None  # importing it raises ImportError\n"
        "from ondeck.entrypoints.jobs.loop import Jobs\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode != 0
    assert "ImportError" in result.stderr or "ModuleNotFoundError" in result.stderr


def test_schedules_do_not_import_the_jobs_loop() -> None:
    """ "now" wakes the loop through the channel that lives beside `wake_jobs`."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from ondeck.work import schedules\n"
        "assert schedules.WAKE_CHANNEL == 'ondeck_jobs'\n"
        "print(sorted(m for m in sys.modules if m.startswith('ondeck.entrypoints')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]"
    from ondeck.entrypoints.jobs import loop as jobs
    from ondeck.work import schedules

    assert jobs.WAKE_CHANNEL is schedules.WAKE_CHANNEL


def test_the_tick_log_names_how_backups_ended_in_words(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`backups {'ok': 1}`, as the heartbeat's JSON has it, not the status enum's repr."""
    settings = load_settings(
        database_url=f"sqlite:///{tmp_path / 'ondeck.db'}", tz="UTC", data_dir=tmp_path / "data"
    )
    engine = make_engine(settings.database_url)
    try:
        upgrade(engine)
        jobs = Jobs(engine=engine, settings=settings, name="jobs@t:1")
        assert jobs.tick(NOW)["backups"]["started"] == [1]
        jobs.backups.join()
        with caplog.at_level(logging.INFO, logger="ondeck.jobs"):
            summary = jobs.tick(NOW + timedelta(minutes=1))
    finally:
        engine.dispose()
    assert summary["backups"] == {"ok": 1}
    assert "backups {'ok': 1}" in caplog.text, caplog.text
    assert "BackupStatus" not in caplog.text
