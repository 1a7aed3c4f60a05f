"""Backups run by the server: the default schedule, the backups step, verified files,
failures and retries, pruning (by the recorded time, never the file just written)."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, insert, update

from ondeck.backups import copies as backup_copies
from ondeck.backups import runs as backup_runs
from ondeck.db.migrate import HEAD
from ondeck.db.tables import backups
from ondeck.db.tables import schedules as schedules_table
from ondeck.entrypoints.jobs.backup_threads import BackupThreads
from ondeck.host.settings import Settings
from ondeck.system import events
from ondeck.work import firing, schedules

UTC_ZONE = ZoneInfo("UTC")
NOW = datetime(2026, 6, 17, 9, 0, tzinfo=UTC)
RUNNER = "jobs@test-host:1"


def _backup_schedule(engine: Engine) -> schedules.Schedule:
    with engine.begin() as conn:
        assert backup_runs.ensure_default_schedules(conn, NOW, UTC_ZONE) is True
        [schedule] = schedules.list_schedules(conn, kind="backup")
    return schedule


def _step(engine: Engine, settings: Settings, now: datetime) -> dict[str, Any]:
    """The tick's backups step, then wait for what it started (as `jobs --once` does)."""
    threads = BackupThreads(name=RUNNER)
    summary = threads.step(engine, now, settings)
    threads.join()
    return summary


def _runs(engine: Engine) -> list[backup_runs.Backup]:
    with engine.connect() as conn:
        return backup_runs.list_backups(conn)


def _ext(engine: Engine) -> str:
    return "dump" if engine.dialect.name == "postgresql" else "db"


def _break_the_backup(monkeypatch: pytest.MonkeyPatch, settings: Settings, engine: Engine) -> None:
    """SQLite: the backup directory cannot be created; PostgreSQL: no pg_dump on PATH."""
    if engine.dialect.name == "postgresql":
        monkeypatch.setenv("PATH", str(settings.backups_path / "nothing-here"))
    else:
        settings.backups_path.parent.mkdir(parents=True, exist_ok=True)
        settings.backups_path.write_text("a file where the directory should be")


def test_the_backup_schedule_is_created_once_and_never_again(engine: Engine) -> None:
    schedule = _backup_schedule(engine)
    assert (schedule.kind, schedule.rule, schedule.next_due) == ("backup", "daily", NOW.date())
    with engine.begin() as conn:
        assert backup_runs.ensure_default_schedules(conn, NOW, UTC_ZONE) is False
        schedules.delete_schedule(conn, NOW, schedule.id)
        assert backup_runs.ensure_default_schedules(conn, NOW, UTC_ZONE) is False
        [event] = events.list_events(conn, kind="schedule.created")
    assert event.actor == "jobs"


def test_the_first_backups_step_creates_the_schedule_and_runs_it(
    engine: Engine, settings: Settings
) -> None:
    summary = _step(engine, settings, NOW)
    [run] = _runs(engine)
    assert summary == {"started": [run.id]}
    assert run.status == "ok"


def test_the_fire_step_leaves_backup_schedules_to_the_backups_step(
    engine: Engine, settings: Settings
) -> None:
    schedule = _backup_schedule(engine)
    summary = firing.fire_step(engine, NOW, settings)
    assert summary["fired"] == 0
    assert _runs(engine) == []
    with engine.connect() as conn:
        assert schedules.get_schedule(conn, schedule.id).next_due == NOW.date()


def test_a_due_backup_runs_and_records_the_fire_after_success(
    engine: Engine, settings: Settings
) -> None:
    schedule = _backup_schedule(engine)
    summary = _step(engine, settings, NOW)
    [run] = _runs(engine)
    assert summary == {"started": [run.id]}
    assert run.status == "ok"
    assert run.schedule_id == schedule.id
    assert run.worker == RUNNER
    file = Path(run.file or "")
    assert file.name == f"ondeck-20260617-090000.{_ext(engine)}"
    assert file.parent == settings.backups_path
    assert run.bytes == file.stat().st_size > 0
    assert run.finished_at is not None and run.finished_at >= run.started_at
    assert not [p for p in settings.backups_path.iterdir() if ".tmp" in p.name]
    from ondeck.backups.restore import check_file

    assert check_file(file, postgres=engine.dialect.name == "postgresql") == HEAD
    with engine.connect() as conn:
        after = schedules.get_schedule(conn, schedule.id)
        [fire] = schedules.list_fires(conn, schedule.id)
        [done] = events.list_events(conn, kind="backup.done")
        [fired] = events.list_events(conn, kind="schedule.fired")
    assert (after.next_due, after.last_fired_on) == (date(2026, 6, 18), NOW.date())
    # Recorded when the backup ended, by the one way fires are recorded (firing's).
    assert after.last_fired_at == fire.fired_at == run.finished_at
    assert (fire.fire_date, fire.task_id) == (NOW.date(), None)
    assert fired.details == {"fire_date": "2026-06-17", "skipped": 0, "task_id": None}
    assert done.subject == f"backup:{run.id}"
    # Not due again today.
    assert _step(engine, settings, NOW + timedelta(hours=2)) == {}


def test_a_backup_missed_for_days_fires_once_for_the_latest_day(
    engine: Engine, settings: Settings
) -> None:
    schedule = _backup_schedule(engine)
    later = NOW + timedelta(days=3)
    _step(engine, settings, later)
    with engine.connect() as conn:
        [fire] = schedules.list_fires(conn, schedule.id)
        after = schedules.get_schedule(conn, schedule.id)
    assert (fire.fire_date, fire.skipped) == (later.date(), 3)
    assert after.next_due == later.date() + timedelta(days=1)


def test_a_schedule_edited_while_its_backup_ran_is_not_fired_by_it(
    engine: Engine, settings: Settings
) -> None:
    schedule = _backup_schedule(engine)
    [claim] = backup_runs.claim_due(engine, NOW, UTC_ZONE, runner=RUNNER)
    with engine.begin() as conn:
        schedules.pause_schedule(conn, NOW, schedule.id)
    ran = backup_runs.complete(engine, settings, claim)
    assert ran.backup.status == "ok"
    with engine.connect() as conn:
        assert schedules.list_fires(conn, schedule.id) == []


def test_a_second_claim_while_a_run_is_going_starts_nothing(
    engine: Engine, settings: Settings
) -> None:
    _backup_schedule(engine)
    [first] = backup_runs.claim_due(engine, NOW, UTC_ZONE, runner=RUNNER)
    assert backup_runs.claim_due(engine, NOW, UTC_ZONE, runner="jobs@other:2") == []
    assert backup_runs.claim_due(engine, NOW + timedelta(hours=5), UTC_ZONE, runner=RUNNER) == []
    assert backup_runs.complete(engine, settings, first).backup.status == "ok"
    assert len(_runs(engine)) == 1


def test_a_failed_backup_is_recorded_and_retried_at_most_once_an_hour(
    engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    schedule = _backup_schedule(engine)
    _break_the_backup(monkeypatch, settings, engine)
    _step(engine, settings, NOW)
    [run] = _runs(engine)
    assert run.status == "failed"
    assert run.error
    if engine.dialect.name == "postgresql":
        assert "pg_dump not found" in run.error
    with engine.connect() as conn:
        assert schedules.get_schedule(conn, schedule.id).next_due == NOW.date()
        assert schedules.list_fires(conn, schedule.id) == []
        [failed] = events.list_events(conn, kind="backup.failed")
    assert failed.details["error"] == run.error

    assert _step(engine, settings, NOW + timedelta(minutes=59)) == {}
    assert len(_runs(engine)) == 1
    monkeypatch.undo()
    if settings.backups_path.is_file():
        settings.backups_path.unlink()
    later = NOW + timedelta(hours=1, minutes=1)
    _step(engine, settings, later)
    assert [r.status for r in _runs(engine)] == ["ok", "failed"]
    with engine.connect() as conn:
        [fire] = schedules.list_fires(conn, schedule.id)
    assert fire.fire_date == NOW.date()


def test_an_abandoned_scheduled_run_is_retried_after_an_hour(
    engine: Engine, settings: Settings
) -> None:
    schedule = _backup_schedule(engine)
    with engine.begin() as conn:
        conn.execute(
            insert(backups).values(
                started_at=NOW,
                finished_at=NOW,
                status="abandoned",
                worker="jobs@gone:1",
                schedule_id=schedule.id,
                error="stopped before it ended",
            )
        )
    assert _step(engine, settings, NOW + timedelta(minutes=30)) == {}
    assert _step(engine, settings, NOW + timedelta(hours=2))["started"]
    assert [r.status for r in _runs(engine)] == ["ok", "abandoned"]


def test_a_run_taken_for_dead_that_did_end_gets_its_real_outcome(
    engine: Engine, settings: Settings
) -> None:
    """Another process's verdict was a guess; the run's own record of its end is the fact."""
    schedule = _backup_schedule(engine)
    [claim] = backup_runs.claim_due(engine, NOW, UTC_ZONE, runner=RUNNER)
    with engine.begin() as conn:
        conn.execute(
            update(backups).where(backups.c.id == claim.backup_id).values(status="abandoned")
        )
    ran = backup_runs.complete(engine, settings, claim)
    assert (ran.backup.status, ran.backup.error) == ("ok", None)
    with engine.connect() as conn:
        [fire] = schedules.list_fires(conn, schedule.id)
        [done] = events.list_events(conn, kind="backup.done")
    assert done.details["was"] == "abandoned"
    assert fire.fire_date == NOW.date()


# --- files ----------------------------------------------------------------------------


def test_old_files_beyond_keep_are_deleted(engine: Engine, settings: Settings) -> None:
    keep2 = settings.model_copy(update={"backup_keep": 2})
    folder = settings.backups_path
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("not ours")
    for i in range(3):
        backup_runs.run_backup(engine, keep2, NOW + timedelta(minutes=i))
    names = sorted(p.name for p in folder.iterdir())
    ext = _ext(engine)
    assert names == ["notes.txt", f"ondeck-20260617-090100.{ext}", f"ondeck-20260617-090200.{ext}"]
    runs = _runs(engine)
    assert [r.status for r in runs] == ["ok", "ok", "ok"]
    with engine.connect() as conn:
        [done] = events.list_events(conn, subject=f"backup:{runs[0].id}")
    assert done.details["pruned"] == [f"ondeck-20260617-090000.{ext}"]


def test_two_backups_in_one_second_keep_the_newer_one(engine: Engine, settings: Settings) -> None:
    """`…-2.db` sorts before `….db` by name: pruning goes by the recorded time instead."""
    keep1 = settings.model_copy(update={"backup_keep": 1})
    first = backup_runs.run_backup(engine, keep1, NOW).backup
    second = backup_runs.run_backup(engine, keep1, NOW + timedelta(milliseconds=300)).backup
    ext = _ext(engine)
    assert Path(second.file or "").name == f"ondeck-20260617-090000-2.{ext}"
    assert [p.name for p in settings.backups_path.iterdir()] == [f"ondeck-20260617-090000-2.{ext}"]
    assert not Path(first.file or "").exists()
    assert Path(second.file or "").is_file()


def test_a_clock_set_back_does_not_prune_the_backup_just_written(
    engine: Engine, settings: Settings
) -> None:
    keep2 = settings.model_copy(update={"backup_keep": 2})
    for i in range(2):
        backup_runs.run_backup(engine, keep2, NOW + timedelta(days=i))
    earlier = backup_runs.run_backup(engine, keep2, NOW - timedelta(days=30)).backup
    assert earlier.status == "ok"
    assert Path(earlier.file or "").is_file()
    ext = _ext(engine)
    # The kept two: the one just written and the newest of the others.
    assert sorted(p.name for p in settings.backups_path.iterdir()) == [
        f"ondeck-20260518-090000.{ext}",
        f"ondeck-20260618-090000.{ext}",
    ]


def test_files_no_run_knows_are_placed_by_the_time_in_their_name(
    engine: Engine, settings: Settings
) -> None:
    """After a restore the database knows nothing of the files written since its backup."""
    keep2 = settings.model_copy(update={"backup_keep": 2})
    folder = settings.backups_path
    folder.mkdir(parents=True)
    ext = _ext(engine)
    for name in (f"ondeck-20260101-000000.{ext}", f"ondeck-20260701-000000.{ext}"):
        (folder / name).write_bytes(b"an older ondeck's backup")
    made = backup_runs.run_backup(engine, keep2, NOW).backup
    assert sorted(p.name for p in folder.iterdir()) == [
        f"ondeck-20260617-090000.{ext}",
        f"ondeck-20260701-000000.{ext}",
    ]
    assert Path(made.file or "").is_file()


def _immutable(path: Path) -> None:
    """A file even root cannot delete (chattr +i), or skip where that is not possible."""
    if os.geteuid() != 0:
        pytest.skip("making a file undeletable (chattr +i) needs root")
    result = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    if result.returncode != 0:
        pytest.skip(f"chattr +i not supported here: {result.stderr.decode().strip()}")


def _mutable(path: Path) -> None:
    subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)


def test_a_pruning_error_is_a_warning_on_a_good_backup(engine: Engine, settings: Settings) -> None:
    keep1 = settings.model_copy(update={"backup_keep": 1})
    old = backup_runs.run_backup(engine, keep1, NOW).backup
    stuck = Path(old.file or "")
    _immutable(stuck)
    try:
        ran = backup_runs.run_backup(engine, keep1, NOW + timedelta(hours=1))
        again = backup_runs.run_backup(engine, keep1, NOW + timedelta(hours=2))
    finally:
        _mutable(stuck)
    assert ran.backup.status == "ok" and ran.backup.error is None
    assert Path(ran.backup.file or "").is_file() is False  # pruned by the next run
    assert [w.split(":")[0] for w in ran.warnings] == [f"could not delete the old backup {stuck}"]
    assert "Operation not permitted" in ran.warnings[0]
    # Still one file beyond ONDECK_BACKUP_KEEP, not one more per run.
    assert sorted(settings.backups_path.iterdir()) == [stuck, Path(again.backup.file or "")]
    with engine.connect() as conn:
        [done] = events.list_events(conn, subject=f"backup:{ran.backup.id}")
    assert done.details["warnings"] == ran.warnings


def test_a_scheduled_backup_whose_pruning_fails_is_fired_not_retried(
    engine: Engine, settings: Settings
) -> None:
    schedule = _backup_schedule(engine)
    keep1 = settings.model_copy(update={"backup_keep": 1})
    old = backup_runs.run_backup(engine, keep1, NOW - timedelta(days=1)).backup
    stuck = Path(old.file or "")
    _immutable(stuck)
    try:
        _step(engine, keep1, NOW)
        _step(engine, keep1, NOW + timedelta(hours=1, minutes=5))
    finally:
        _mutable(stuck)
    assert [r.status for r in _runs(engine)] == ["ok", "ok"]
    with engine.connect() as conn:
        [fire] = schedules.list_fires(conn, schedule.id)
    assert fire.fire_date == NOW.date()
    assert len(list(settings.backups_path.iterdir())) == 2


def test_the_temporary_file_of_a_run_that_died_is_removed_by_a_later_backup(
    engine: Engine, settings: Settings
) -> None:
    folder = settings.backups_path
    folder.mkdir(parents=True)
    dead = folder / ".ondeck-20260101-000000-4242-1.tmp"
    young = folder / ".ondeck-20260617-085900-4343-1.tmp"
    for path in (dead, young):
        path.write_bytes(b"\0" * 4096)
    long_ago = (NOW - backup_copies.MAX_RUN - timedelta(minutes=1)).timestamp()
    os.utime(dead, (long_ago, long_ago))
    os.utime(young, (NOW.timestamp(), NOW.timestamp()))
    assert backup_runs.run_backup(engine, settings, NOW).backup.status == "ok"
    assert not dead.exists()
    assert young.exists()


def test_a_backup_schedule_removed_while_due_starts_no_run(
    engine: Engine, settings: Settings
) -> None:
    schedule = _backup_schedule(engine)
    with engine.begin() as conn:
        conn.execute(
            update(schedules_table)
            .where(schedules_table.c.id == schedule.id)
            .values(deleted_at=NOW)
        )
    assert _step(engine, settings, NOW) == {}
    assert _runs(engine) == []


def test_the_next_backups_step_reports_how_the_runs_it_started_ended(
    engine: Engine, settings: Settings
) -> None:
    _backup_schedule(engine)
    threads = BackupThreads(name=RUNNER)
    [started] = threads.step(engine, NOW, settings)["started"]
    threads.join()
    assert threads.step(engine, NOW + timedelta(minutes=1), settings) == {"ok": 1}
    assert threads.step(engine, NOW + timedelta(minutes=2), settings) == {}
    assert [r.id for r in _runs(engine)] == [started]


def test_now_on_a_backup_schedule_that_backed_up_today_changes_nothing(
    engine: Engine, settings: Settings
) -> None:
    """Today's date is processed: "now" cannot fire it twice and says so (schedules'
    `pulled_state`); a second copy the same day is `ondeck backup`."""
    schedule = _backup_schedule(engine)
    _step(engine, settings, NOW)
    with engine.begin() as conn:
        before = schedules.get_schedule(conn, schedule.id)
        pulled = schedules.pull_now(conn, NOW + timedelta(hours=1), UTC_ZONE, schedule.id)
    assert pulled == before
    _step(engine, settings, NOW + timedelta(hours=1))
    assert [r.status for r in _runs(engine)] == ["ok"]
    with engine.connect() as conn:
        after = schedules.get_schedule(conn, schedule.id)
        fires = schedules.list_fires(conn, schedule.id)
    assert [f.fire_date for f in fires] == [NOW.date()]
    assert after.next_due == NOW.date() + timedelta(days=1)
    assert after.last_fired_at == fires[0].fired_at
