"""A backup that takes long (a large `pg_dump` may take hours) holds nothing back: while a
real `ondeck jobs` writes it, the loop keeps ticking, writing its heartbeat and firing what
falls due; another jobs process starts no second run; `--once` waits for the backup it
started; a stop mid-backup records the run `abandoned` and leaves no file behind.

The slowness is real: PostgreSQL runs a `pg_dump` on PATH that sleeps before it dumps,
SQLite a copy paused in its progress handler (tests/support/slow_backup.py). Sizes:
ONDECK_FAULT_SLOW_BACKUP seconds (default 20), the longest the first test's backup takes: it
lets the backup go on once it has seen the loop tick, fire and refuse a second run meanwhile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from ondeck.db.tables import backups, fires, workers
from ondeck.db.tables import schedules as schedules_table
from ondeck.work import schedules
from support.procs import Proc, Procs, knob, ondeck_env, run_ondeck, wait_for
from support.slow_backup import RELEASE, slow_pg_dump

pytestmark = pytest.mark.slow

SLOW = knob("SLOW_BACKUP", 20, 60)
SLOW_BACKUP = str(Path(__file__).parents[1] / "support" / "slow_backup.py")


def _env(db_url: str, tmp_path: Path, seconds: float) -> tuple[dict[str, str], list[str]]:
    """The environment and the command of an `ondeck` whose backups take `seconds`, or
    until the test creates `_release(tmp_path)`."""
    env = ondeck_env(db_url, tmp_path, tick=1.0, **{RELEASE: str(_release(tmp_path))})
    if db_url.startswith("postgresql"):
        real = shutil.which("pg_dump")
        assert real, "pg_dump not found"
        folder = slow_pg_dump(tmp_path / "slow-bin", seconds, real, _release(tmp_path))
        env["PATH"] = f"{folder}{os.pathsep}{env['PATH']}"
    return env, [sys.executable, SLOW_BACKUP, str(seconds)]


def _release(tmp_path: Path) -> Path:
    return tmp_path / "release-the-backup"


def _run(engine: Engine) -> Any:
    with engine.connect() as conn:
        return conn.execute(select(backups).order_by(backups.c.id.desc()).limit(1)).first()


def _heartbeat(engine: Engine, name: str) -> Any:
    with engine.connect() as conn:
        return conn.execute(select(workers).where(workers.c.name == name)).first()


def _backup_schedule_fires(engine: Engine) -> int:
    with engine.connect() as conn:
        backup_schedule = select(schedules_table.c.id).where(schedules_table.c.kind == "backup")
        return int(
            conn.execute(
                select(func.count()).where(
                    fires.c.schedule_id.in_(backup_schedule.scalar_subquery())
                )
            ).scalar_one()
        )


def _fires_of(engine: Engine, schedule_id: int) -> list[Any]:
    with engine.connect() as conn:
        return schedules.list_fires(conn, schedule_id)


def _start_loop(procs: Procs, env: dict[str, str], command: list[str]) -> Proc:
    return procs.start("jobs", [*command, "jobs"], env)


def test_a_slow_backup_holds_back_neither_firing_nor_the_heartbeat(
    db_url: str, engine: Engine, tmp_path: Path, procs: Procs, report: dict[str, object]
) -> None:
    env, command = _env(db_url, tmp_path, SLOW)
    loop = _start_loop(procs, env, command)
    name = f"jobs@{os.uname().nodename}:{loop.pid}"
    run = wait_for(
        lambda: (r := _run(engine)) is not None and r.status == "running" and r,
        timeout=60,
        what="the backup run to start",
    )
    began = time.monotonic()
    assert run.worker == name
    ticks_at_start = wait_for(lambda: _heartbeat(engine, name), timeout=30).ticks

    # Falls due while the backup is being written: the loop must fire it meanwhile.
    now = datetime.now(UTC)
    with engine.begin() as conn:
        made = schedules.create_schedule(conn, now, UTC, title="water the plants", rule="daily")
    wait_for(
        lambda: _fires_of(engine, made.id),
        timeout=SLOW,
        what="the schedule to fire during the backup",
    )
    fired_after = time.monotonic() - began
    # Another jobs process meanwhile: its tick starts no second run of the backup.
    other = run_ondeck("jobs", "--once", env=env, timeout=120)
    assert other.returncode == 0, other.stderr
    wait_for(
        lambda: (h := _heartbeat(engine, name)) and h.ticks >= ticks_at_start + 3,
        timeout=SLOW,
        what="three heartbeats during the backup",
    )
    during = _run(engine)
    assert (during.id, during.status) == (run.id, "running"), "the backup ended too soon to tell"
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(backups)).scalar_one() == 1

    # Seen all it needs while the backup ran: it may end now rather than at SLOW seconds.
    _release(tmp_path).touch()
    done = wait_for(
        lambda: (r := _run(engine)).status != "running" and r, timeout=SLOW + 120, what="the end"
    )
    took = time.monotonic() - began
    assert (done.id, done.status) == (run.id, "ok"), done.error
    assert Path(done.file).is_file()
    assert _backup_schedule_fires(engine) == 1
    ticks_at_end = _heartbeat(engine, name).ticks
    assert loop.stop() == 0
    report.update(
        backup_seconds=round(took, 1),
        fired_after_seconds=round(fired_after, 1),
        heartbeats_during_backup=ticks_at_end - ticks_at_start,
    )


def test_jobs_once_waits_for_the_backup_it_started_and_keeps_its_heartbeat(
    db_url: str, engine: Engine, tmp_path: Path, report: dict[str, object]
) -> None:
    seconds = max(4.0, SLOW / 2)
    env, command = _env(db_url, tmp_path, seconds)
    began = time.monotonic()
    result = subprocess.run(
        [*command, "jobs", "--once"], env=env, capture_output=True, text=True, timeout=600
    )
    took = time.monotonic() - began
    assert result.returncode == 0, result.stderr
    run = _run(engine)
    assert run.status == "ok", run.error
    assert took >= seconds
    with engine.connect() as conn:
        [beat] = conn.execute(select(workers)).all()
    # It ticked on while it waited (others judge its run by this heartbeat), then stopped.
    assert beat.ticks >= 2
    assert beat.stopped_at is not None
    assert _backup_schedule_fires(engine) == 1
    report.update(once_seconds=round(took, 1), ticks=beat.ticks)


def test_stopping_the_loop_mid_backup_records_the_run_abandoned_and_leaves_no_file(
    db_url: str, engine: Engine, tmp_path: Path, procs: Procs, report: dict[str, object]
) -> None:
    env, command = _env(db_url, tmp_path, 3600)
    loop = _start_loop(procs, env, command)
    wait_for(
        lambda: (r := _run(engine)) is not None and r.status == "running",
        timeout=60,
        what="the backup run to start",
    )
    time.sleep(1.5)  # well inside the copy
    began = time.monotonic()
    assert loop.stop(timeout=60) == 0
    stopped_in = time.monotonic() - began
    run = _run(engine)
    assert run.status == "abandoned"
    assert "stopped" in run.error and "stopping" in run.error
    assert run.finished_at is not None
    assert list((tmp_path / "backups").iterdir()) == [], "a half-written copy was left"
    assert _backup_schedule_fires(engine) == 0
    report.update(stopped_in_seconds=round(stopped_in, 1))
