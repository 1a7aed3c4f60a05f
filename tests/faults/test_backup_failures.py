"""The backup directory is full or read-only: a real `ondeck jobs --once` records the failed
run with its reason, the session context says `backup_failed`, everything else in the tick
(firing, reaping, the heartbeat) still happens, and the backup succeeds once the directory
is usable again (retried after an hour, never hidden).

A full disk and a read-only one are real filesystems: small tmpfs mounts, which needs root
(CI runs as root). Without root only the read-only case runs, as a directory without write
permission.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from ondeck.core.models import TaskStatus
from ondeck.db.tables import backups, events, fires, tasks, workers
from ondeck.db.tables import schedules as schedules_table
from ondeck.work import backlog, backlog_leases, schedules
from support.procs import at_time, ondeck_env, run_ondeck

pytestmark = pytest.mark.slow

DAY = date(2026, 7, 1)
NINE = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
ZONE = UTC
# What the reason must say, whatever tool wrote the file (SQLite's backup API or pg_dump).
REASONS = {
    "disk_full": ("No space left on device", "database or disk is full"),
    "read_only": ("Read-only file system", "Permission denied"),
}


def _mount(path: Path, options: str) -> bool:
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "ondeck-fault", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.returncode == 0


def _fill(path: Path) -> None:
    """Write until the filesystem is full: any later write fails with ENOSPC."""
    for size in (65536, 4096, 1):
        with (path / f"filler-{size}").open("wb", buffering=0) as out:
            try:
                while True:
                    out.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC


@contextlib.contextmanager
def failing_dir(path: Path, mode: str) -> Iterator[None]:
    """`path` full or read-only for the duration; afterwards an ordinary writable directory."""
    path.mkdir()
    if os.geteuid() != 0:
        if mode == "disk_full":
            pytest.skip("filling a filesystem needs a tmpfs mount, which needs root")
        path.chmod(0o500)
        try:
            yield
        finally:
            path.chmod(0o755)
        return
    if not _mount(path, "ro,size=1m" if mode == "read_only" else "size=64k"):
        pytest.skip("mounting a tmpfs is not permitted here")
    try:
        if mode == "disk_full":
            _fill(path)
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _setup(engine: Engine) -> tuple[int, int]:
    """A daily task schedule due today and a lease that ended hours ago; their ids."""
    with engine.begin() as conn:
        schedule = schedules.create_schedule(
            conn,
            NINE - timedelta(days=1),
            ZONE,
            title="water the plants",
            rule="daily",
            actor="cli",
        )
        task = backlog.create_task(conn, NINE - timedelta(hours=9), title="stuck", actor="cli")
        backlog_leases.claim_task(
            conn, NINE - timedelta(hours=9), task.id, owner="gone", duration="1h", actor="cli"
        )
    return schedule.id, task.id


def _jobs_once(env: dict[str, str], at: datetime) -> str:
    result = run_ondeck("jobs", "--once", env=at_time(env, at))
    assert result.returncode == 0, result.stderr
    return result.stderr


def _warnings(env: dict[str, str], at: datetime) -> dict[str, str]:
    result = run_ondeck("context", "--format", "json", env=at_time(env, at))
    assert result.returncode == 0, result.stderr
    return {w["code"]: w["message"] for w in json.loads(result.stdout)["warnings"]}


@pytest.mark.parametrize("mode", ["disk_full", "read_only"])
def test_a_backup_that_cannot_be_written_is_a_recorded_failure_and_nothing_else_breaks(
    db_url: str, engine: Engine, tmp_path: Path, mode: str, report: dict[str, object]
) -> None:
    folder = tmp_path / "backups"
    env = ondeck_env(db_url, tmp_path, grace="1h", backup_dir=folder)
    schedule_id, stuck_id = _setup(engine)
    with failing_dir(folder, mode):
        log = _jobs_once(env, NINE)
        warnings = _warnings(env, NINE + timedelta(minutes=1))
        leftovers = [p.name for p in folder.iterdir() if not p.name.startswith("filler")]

    with engine.connect() as conn:
        runs = conn.execute(select(backups).order_by(backups.c.id)).all()
        failed = conn.execute(
            select(events.c.details).where(events.c.kind == "backup.failed")
        ).scalar_one()
        backup_schedule = conn.execute(
            select(schedules_table).where(schedules_table.c.kind == "backup")
        ).one()
        backup_fires = conn.execute(
            select(func.count()).where(fires.c.schedule_id == backup_schedule.id)
        ).scalar_one()
        fired = conn.execute(
            select(fires.c.fire_date, fires.c.task_id).where(fires.c.schedule_id == schedule_id)
        ).all()
        made = conn.execute(select(tasks.c.source).where(tasks.c.source.is_not(None))).all()
        stuck = backlog.get_task_row(conn, stuck_id)
        heartbeat = conn.execute(select(workers.c.summary)).scalar_one()

    # The failure is recorded with its reason, as a run and as an event.
    assert [r.status for r in runs] == ["failed"]
    error = runs[0].error
    assert any(reason in error for reason in REASONS[mode]), error
    assert failed["error"] == error
    assert f"backup {runs[0].id} failed" in log
    # The context says so, with the reason.
    assert "backup_failed" in warnings
    reason = next(r for r in REASONS[mode] if r in error)
    assert reason in warnings["backup_failed"], "the context cut off the reason"
    # Not recorded as fired; still due, so it is retried.
    assert backup_fires == 0
    assert backup_schedule.next_due == DAY
    assert leftovers == [], "a failed run left files behind"
    # Everything else in the tick went on: the task schedule fired, the stale lease was
    # released, the heartbeat was written.
    assert [(f.fire_date, f.task_id is not None) for f in fired] == [(DAY, True)]
    assert made == [(f"sch:{schedule_id}:{DAY}",)]
    assert stuck is not None and stuck.status is TaskStatus.READY
    # The backup is written beside the tick: the heartbeat says it started it (or, if the
    # failure took over a tick's interval, the next tick of `--once` says how it ended).
    assert heartbeat["backups"] in ({"started": [runs[0].id]}, {"failed": 1})
    assert heartbeat["reap"]["released"] == 1

    # The directory works again: the next try (an hour later, not before) succeeds.
    _jobs_once(env, NINE + timedelta(minutes=30))
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(backups)).scalar_one() == 1
    _jobs_once(env, NINE + timedelta(hours=1, minutes=5))
    with engine.connect() as conn:
        statuses = conn.execute(select(backups.c.status).order_by(backups.c.id)).scalars().all()
        fire_dates = (
            conn.execute(select(fires.c.fire_date).where(fires.c.schedule_id == backup_schedule.id))
            .scalars()
            .all()
        )
    assert statuses == ["failed", "ok"]
    assert fire_dates == [DAY]
    assert "backup_failed" not in _warnings(env, NINE + timedelta(hours=1, minutes=6))
    report.update(mode=mode, reason=error)


def test_the_file_of_a_backup_run_that_died_is_removed_by_a_later_backup(
    db_url: str, tmp_path: Path
) -> None:
    """A run killed half-way leaves its temporary copy of the database; once no live run
    could still be writing it, the next backup deletes it (and leaves a recent one alone)."""
    folder = tmp_path / "backups"
    folder.mkdir()
    dead = [
        folder / ".ondeck-20260101-000000-4242-1.tmp",
        folder / ".ondeck-20260101-000000-4242-1.tmp-journal",
    ]
    live = folder / ".ondeck-20260101-000000-4343-1.tmp"
    for path in [*dead, live]:
        path.write_bytes(b"\0" * 4096)
    long_ago = time.time() - 7 * 3600
    for path in dead:
        os.utime(path, (long_ago, long_ago))
    result = run_ondeck("jobs", "--once", env=ondeck_env(db_url, tmp_path, backup_dir=folder))
    assert result.returncode == 0, result.stderr
    assert "removed 2 files left by backup runs that died" in result.stderr
    names = sorted(p.name for p in folder.iterdir())
    assert [n for n in names if n.endswith((".db", ".dump"))], "the backup itself was written"
    assert [n for n in names if ".tmp" in n] == [live.name]
