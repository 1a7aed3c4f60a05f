"""Backups run by the server: the default schedule, verified files, failures, restore."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, MetaData, insert, select, update

from ondeck.core.config import Settings
from ondeck.core.errors import InvalidInput
from ondeck.db.engine import make_engine
from ondeck.db.tables import backups, metadata
from ondeck.db.tables import schedules as schedules_table
from ondeck.services import events, firing, maintenance, schedules

UTC_ZONE = ZoneInfo("UTC")
NOW = datetime(2026, 6, 17, 9, 0, tzinfo=UTC)


def _backup_schedule(engine: Engine) -> schedules.Schedule:
    with engine.begin() as conn:
        assert maintenance.ensure_default_schedules(conn, NOW, UTC_ZONE) is True
        [schedule] = schedules.list_schedules(conn, kind="backup")
    return schedule


def _runs(engine: Engine) -> list[maintenance.Backup]:
    with engine.connect() as conn:
        return maintenance.list_backups(conn)


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
        assert maintenance.ensure_default_schedules(conn, NOW, UTC_ZONE) is False
        schedules.delete_schedule(conn, NOW, schedule.id)
        assert maintenance.ensure_default_schedules(conn, NOW, UTC_ZONE) is False
        [event] = events.list_events(conn, kind="schedule.created")
    assert event.actor == "jobs"


def test_a_due_backup_runs_and_records_the_fire_after_success(
    engine: Engine, settings: Settings
) -> None:
    schedule = _backup_schedule(engine)
    summary = firing.fire_step(engine, NOW, settings)
    assert summary["backups"] == {"ok": 1}
    [run] = _runs(engine)
    assert run.status == "ok"
    assert run.schedule_id == schedule.id
    assert run.worker and run.worker.startswith("jobs@")
    file = Path(run.file or "")
    ext = "dump" if engine.dialect.name == "postgresql" else "db"
    assert file.name == f"ondeck-20260617-090000.{ext}"
    assert file.parent == settings.backups_path
    assert run.bytes == file.stat().st_size > 0
    assert run.finished_at is not None and run.finished_at >= run.started_at
    assert not [p for p in settings.backups_path.iterdir() if p.name.endswith(".tmp")]
    maintenance.verify_file(file, postgres=engine.dialect.name == "postgresql")
    with engine.connect() as conn:
        after = schedules.get_schedule(conn, schedule.id)
        [fire] = schedules.list_fires(conn, schedule.id)
        [done] = events.list_events(conn, kind="backup.done")
    assert (after.next_due, after.last_fired_on) == (date(2026, 6, 18), NOW.date())
    assert (fire.fire_date, fire.task_id) == (NOW.date(), None)
    assert done.subject == f"backup:{run.id}"
    # Not due again today.
    assert "backups" not in firing.fire_step(engine, NOW + timedelta(hours=2), settings)


def test_a_failed_backup_is_recorded_and_retried_at_most_once_an_hour(
    engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    schedule = _backup_schedule(engine)
    _break_the_backup(monkeypatch, settings, engine)
    assert firing.fire_step(engine, NOW, settings)["backups"] == {"failed": 1}
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

    assert firing.fire_step(engine, NOW + timedelta(minutes=59), settings)["backups"] == {
        "waiting": 1
    }
    assert len(_runs(engine)) == 1
    monkeypatch.undo()
    if settings.backups_path.is_file():
        settings.backups_path.unlink()
    later = NOW + timedelta(hours=1, minutes=1)
    assert firing.fire_step(engine, later, settings)["backups"] == {"ok": 1}
    with engine.connect() as conn:
        [fire] = schedules.list_fires(conn, schedule.id)
    assert fire.fire_date == NOW.date()


def test_a_run_whose_process_died_is_marked_abandoned(engine: Engine, settings: Settings) -> None:
    schedule = _backup_schedule(engine)
    with engine.begin() as conn:
        dead = conn.execute(
            insert(backups)
            .values(
                started_at=NOW - timedelta(minutes=5),
                status="running",
                worker="jobs@no-such-host.invalid:1",
                schedule_id=schedule.id,
            )
            .returning(backups.c.id)
        ).scalar_one()
        young = conn.execute(
            insert(backups)
            .values(started_at=NOW, status="running", worker="jobs@elsewhere.invalid:2")
            .returning(backups.c.id)
        ).scalar_one()
    # Another host's run is given an hour before it counts as dead.
    assert maintenance.maintain_step(engine, NOW, settings) == {"abandoned": 0}
    later = NOW + timedelta(hours=1, minutes=10)
    assert maintenance.maintain_step(engine, later, settings) == {"abandoned": 2}
    with engine.connect() as conn:
        rows = {b.id: b for b in maintenance.list_backups(conn)}
        [event, _] = events.list_events(conn, kind="backup.abandoned")
    assert rows[dead].status == rows[young].status == "abandoned"
    assert "stopped before it ended" in (rows[dead].error or "")
    assert event.actor == "jobs"


def test_a_run_of_a_dead_local_process_is_abandoned_at_once(
    engine: Engine, settings: Settings
) -> None:
    import socket
    import subprocess

    child = subprocess.Popen(["true"])
    child.wait()
    with engine.begin() as conn:
        conn.execute(
            insert(backups).values(
                started_at=NOW,
                status="running",
                worker=f"jobs@{socket.gethostname()}:{child.pid}",
            )
        )
        # A run under this very process's name that this process is not running (pid reuse).
        conn.execute(
            insert(backups).values(
                started_at=NOW, status="running", worker=maintenance.runner_name("jobs")
            )
        )
    assert maintenance.mark_abandoned(engine, NOW) == 2


def test_an_abandoned_scheduled_run_is_retried_after_an_hour(
    engine: Engine, settings: Settings
) -> None:
    schedule = _backup_schedule(engine)
    with engine.begin() as conn:
        conn.execute(
            insert(backups).values(
                started_at=NOW,
                status="running",
                worker=f"jobs@{os.uname().nodename}:999999",
                schedule_id=schedule.id,
            )
        )
    first = firing.fire_step(engine, NOW + timedelta(minutes=1), settings)
    assert first["backups"] == {"waiting": 1}
    assert _runs(engine)[0].status == "abandoned"
    assert firing.fire_step(engine, NOW + timedelta(hours=2), settings)["backups"] == {"ok": 1}


def test_old_files_beyond_keep_are_deleted(engine: Engine, settings: Settings) -> None:
    keep2 = settings.model_copy(update={"backup_keep": 2})
    folder = settings.backups_path
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("not ours")
    for i in range(3):
        maintenance.run_backup(engine, keep2, NOW + timedelta(minutes=i))
    names = sorted(p.name for p in folder.iterdir())
    ext = "dump" if engine.dialect.name == "postgresql" else "db"
    assert names == ["notes.txt", f"ondeck-20260617-090100.{ext}", f"ondeck-20260617-090200.{ext}"]
    assert [r.status for r in _runs(engine)] == ["ok", "ok", "ok"]


def _all_rows(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    with engine.connect() as conn:
        return {
            table.name: sorted(
                (tuple(map(str, row)) for row in conn.execute(select(table))), key=str
            )
            for table in metadata.sorted_tables
        }


def test_backup_then_restore_into_an_empty_database_gives_back_every_row(
    engine: Engine, settings: Settings, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    _backup_schedule(engine)
    for i in range(5):
        with engine.begin() as conn:
            schedules.create_schedule(
                conn, NOW, UTC_ZONE, title=f"s{i} ✓", rule="daily", body="x\ny", project="p"
            )
    firing.fire_step(engine, NOW, settings)  # tasks, fires, events and a backups row
    before = _all_rows(engine)
    assert all(before[name] for name in ("tasks", "fires", "events", "schedules", "backups"))
    run = maintenance.run_backup(engine, settings, NOW + timedelta(minutes=1))
    assert run.status == "ok"

    target = _empty_database(engine, tmp_path, request)
    result = maintenance.restore(target, Path(run.file or ""), NOW, actor="cli")
    assert result["file"] == run.file
    after = _all_rows(target)
    restored = [row for row in after["events"] if "backup.restored" in row]
    assert len(restored) == 1  # the restore records itself
    after["events"].remove(restored[0])
    for name, rows in before.items():
        if name == "backups":
            # The copy was taken while its own run was "running", so that row is in it too.
            assert len(after[name]) == len(rows) + 1
            assert set(rows) <= set(after[name])
            continue
        assert after[name] == rows, name


def _empty_database(engine: Engine, tmp_path: Path, request: pytest.FixtureRequest) -> Engine:
    if engine.dialect.name == "postgresql":
        from conftest import drop_pg_database, new_pg_database

        admin = request.getfixturevalue("pg_admin_url")
        url = new_pg_database(admin, "template0")
        request.addfinalizer(lambda: drop_pg_database(admin, url))
        target = make_engine(url)
    else:
        target = make_engine(f"sqlite:///{tmp_path / 'empty' / 'restored.db'}")
    request.addfinalizer(target.dispose)
    return target


def test_restore_refuses_a_corrupted_backup_and_changes_nothing(
    engine: Engine, settings: Settings
) -> None:
    _backup_schedule(engine)
    run = maintenance.run_backup(engine, settings, NOW)
    path = Path(run.file or "")
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = os.urandom(4096)
    data[:16] = b"garbage garbage!"
    path.write_bytes(bytes(data))
    with engine.begin() as conn:
        conn.execute(update(schedules_table).values(title="changed after the backup"))
    with pytest.raises(InvalidInput) as caught:
        maintenance.restore(engine, path, NOW)
    assert str(path) in str(caught.value)
    with engine.connect() as conn:
        assert conn.execute(select(schedules_table.c.title)).scalar() == "changed after the backup"


def test_restore_refuses_a_file_that_is_not_an_ondeck_backup(
    engine: Engine, tmp_path: Path
) -> None:
    other = tmp_path / "other.db"
    if engine.dialect.name == "sqlite":
        other_engine = make_engine(f"sqlite:///{other}")
        MetaData().create_all(other_engine)
        with other_engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE t (x)")
        other_engine.dispose()
    else:
        other.write_text("just text")
    with pytest.raises(InvalidInput):
        maintenance.restore(engine, other, NOW)
    with pytest.raises(InvalidInput, match="no such file"):
        maintenance.restore(engine, tmp_path / "missing.db", NOW)
