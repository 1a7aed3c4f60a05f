"""Restore: every check before anything changes, a safety copy of what is replaced, and a
restored database that tells the truth about the backup it came from."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, MetaData, func, insert, select, text

from ondeck.backups import copies as backup_copies
from ondeck.backups import runs as backup_runs
from ondeck.backups.restore import restore
from ondeck.context import build as context
from ondeck.core.errors import InvalidInput, OndeckError
from ondeck.db.engine import make_engine
from ondeck.db.migrate import HEAD, read_revision
from ondeck.db.tables import backups, metadata
from ondeck.db.tables import schedules as schedules_table
from ondeck.entrypoints.jobs.backup_threads import BackupThreads
from ondeck.host.settings import Settings
from ondeck.system import events
from ondeck.work import firing, schedules

UTC_ZONE = ZoneInfo("UTC")
NOW = datetime(2026, 6, 17, 9, 0, tzinfo=UTC)


def _all_rows(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    with engine.connect() as conn:
        return {
            table.name: sorted(
                (tuple(map(str, row)) for row in conn.execute(select(table))), key=str
            )
            for table in metadata.sorted_tables
        }


def _empty_database(engine: Engine, tmp_path: Path, request: pytest.FixtureRequest) -> Engine:
    from conftest import empty_database

    file = "empty/restored.db"
    target = make_engine(empty_database(engine.dialect.name, tmp_path, request, file))
    request.addfinalizer(target.dispose)
    return target


def _titles(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(select(schedules_table.c.title).order_by("id")).scalars())


def _add(engine: Engine, title: str) -> None:
    with engine.begin() as conn:
        schedules.create_schedule(conn, NOW, UTC_ZONE, title=title, rule="daily")


def _backup(engine: Engine, settings: Settings, now: datetime = NOW) -> Path:
    ran = backup_runs.run_backup(engine, settings, now)
    assert ran.backup.status == "ok", ran.backup.error
    return Path(ran.backup.file or "")


def test_backup_then_restore_into_an_empty_database_gives_back_every_row(
    engine: Engine, settings: Settings, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with engine.begin() as conn:
        backup_runs.ensure_default_schedules(conn, NOW, UTC_ZONE)
    for i in range(5):
        with engine.begin() as conn:
            schedules.create_schedule(
                conn, NOW, UTC_ZONE, title=f"s{i} ✓ 백업", rule="daily", body="x\ny", project="p"
            )
    threads = BackupThreads(name="jobs@t:1")
    threads.step(engine, NOW, settings)
    threads.join()
    firing.fire_step(engine, NOW, settings)
    before = _all_rows(engine)
    assert all(before[name] for name in ("tasks", "fires", "events", "schedules", "backups"))
    file = _backup(engine, settings, NOW + timedelta(minutes=1))

    target = _empty_database(engine, tmp_path, request)
    result = restore(target, settings, file, NOW + timedelta(minutes=2), actor="cli")
    assert (result.file, result.revision, result.safety_copy) == (str(file), HEAD, None)
    assert result.replaced == {"empty": True}
    assert result.taken_at == NOW + timedelta(minutes=1)
    after = _all_rows(target)
    added = [row for row in after["events"] if row not in before["events"]]
    # The restore records itself, and the end of the run that wrote the backup.
    assert sorted(row[3] for row in added) == ["backup.done", "backup.restored"]
    for name, rows in before.items():
        if name in ("backups", "events"):
            continue
        assert after[name] == rows, name
    with target.connect() as conn:
        runs = backup_runs.list_backups(conn)
    assert (runs[0].status, runs[0].file) == ("ok", str(file.resolve()))


def test_restore_refuses_a_corrupted_backup_and_changes_nothing(
    engine: Engine, settings: Settings
) -> None:
    path = _backup(engine, settings)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = os.urandom(4096)
    data[:16] = b"garbage garbage!"
    path.write_bytes(bytes(data))
    _add(engine, "changed after the backup")
    with pytest.raises(InvalidInput) as caught:
        restore(engine, settings, path, NOW)
    assert str(path) in str(caught.value)
    assert _titles(engine) == ["changed after the backup"]


def test_restore_refuses_a_backup_of_a_newer_schema_before_touching_anything(
    engine: Engine, settings: Settings
) -> None:
    """It would be put in place, then every command would fail with "Can't locate revision"."""
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    newer = _backup(engine, settings)
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE alembic_version SET version_num = '{HEAD}'"))
    _add(engine, "written after")
    folder_before = sorted(settings.backups_path.iterdir())
    with pytest.raises(InvalidInput) as caught:
        restore(engine, settings, newer, NOW)
    message = str(caught.value)
    assert "schema version 9999" in message and "newer ondeck" in message
    assert _titles(engine) == ["written after"]
    assert read_revision(engine) == HEAD
    assert sorted(settings.backups_path.iterdir()) == folder_before, "no safety copy either"


def test_restore_refuses_a_backup_with_no_schema_version(
    engine: Engine, settings: Settings
) -> None:
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM alembic_version"))
    empty = _backup(engine, settings)
    with engine.begin() as conn:
        conn.execute(text(f"INSERT INTO alembic_version VALUES ('{HEAD}')"))
    with pytest.raises(InvalidInput, match="no schema version"):
        restore(engine, settings, empty, NOW)


def _other_store_file(engine: Engine, tmp_path: Path, settings: Settings) -> Path:
    """A good backup of the other store: a pg_dump for SQLite, a SQLite file for PostgreSQL."""
    if engine.dialect.name == "postgresql":
        sqlite_settings = settings.model_copy(update={"backup_dir": tmp_path / "sqlite-backups"})
        other = make_engine(f"sqlite:///{tmp_path / 'other.db'}")
        from ondeck.db.migrate import upgrade

        upgrade(other)
        path = _backup(other, sqlite_settings)
        other.dispose()
        return path
    path = tmp_path / "a.dump"
    path.write_bytes(backup_copies.PG_DUMP_MAGIC + b"\x01\x0e\x00" + b"\0" * 200)
    return path


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        ("missing", "no such file"),
        ("directory", "is a directory: give a backup file"),
        ("fifo", "is not a regular file"),
        ("empty", "is empty: not an ondeck backup"),
        ("text", "neither a SQLite database nor a pg_dump"),
        ("other_store", "but the configured database is"),
        ("foreign_sqlite", "not an ondeck"),
        ("itself", "is the configured database itself"),
    ],
)
def test_restore_refuses_what_is_not_a_backup_of_this_store_and_changes_nothing(
    engine: Engine, settings: Settings, tmp_path: Path, make: str, expected: str
) -> None:
    made = _backup(engine, settings)
    _add(engine, "keep me")
    path = tmp_path / "given"
    if make == "directory":
        path = settings.backups_path
    elif make == "fifo":
        os.mkfifo(path)
    elif make == "empty":
        path.write_bytes(b"")
    elif make == "text":
        path.write_text("just text ✓")
    elif make == "other_store":
        path = _other_store_file(engine, tmp_path, settings)
    elif make == "foreign_sqlite":
        if engine.dialect.name == "postgresql":
            pytest.skip("a SQLite file is refused as the other store's on PostgreSQL")
        other_engine = make_engine(f"sqlite:///{path}")
        MetaData().create_all(other_engine)
        with other_engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE t (x)")
        other_engine.dispose()
    elif make == "itself":
        if engine.dialect.name == "postgresql":
            pytest.skip("a PostgreSQL database is not a file")
        path = Path(engine.url.database or "")
    before = sorted(settings.backups_path.iterdir())
    with pytest.raises(InvalidInput) as caught:
        restore(engine, settings, path, NOW)
    assert expected in str(caught.value)
    assert str(path) in str(caught.value)
    assert _titles(engine) == ["keep me"]
    assert sorted(settings.backups_path.iterdir()) == before
    if make == "directory":
        assert made.name in str(caught.value), "the newest backup in it is named"


def test_restore_keeps_a_safety_copy_that_undoes_it(engine: Engine, settings: Settings) -> None:
    _add(engine, "in the backup")
    file = _backup(engine, settings)
    _add(engine, "after the backup")
    before = _all_rows(engine)
    result = restore(engine, settings, file, NOW + timedelta(hours=1))
    assert _titles(engine) == ["in the backup"]
    safety = Path(result.safety_copy or "")
    ext = "dump" if engine.dialect.name == "postgresql" else "db"
    assert safety.name == f"pre-restore-20260617-100000.{ext}"
    assert safety.parent == settings.backups_path
    replaced = result.replaced
    assert (replaced["schedules"], replaced["revision"], replaced["empty"]) == (2, HEAD, False)
    assert replaced["events"] == len(before["events"])

    back = restore(engine, settings, safety, NOW + timedelta(hours=2))
    assert _titles(engine) == ["in the backup", "after the backup"]
    assert back.taken_at is None, "a safety copy has no run of its own"
    restored = _all_rows(engine)
    for name in ("schedules", "tasks", "fires", "backups"):
        assert restored[name] == before[name], name
    # The pruning of ordinary backups never takes a safety copy.
    keep1 = settings.model_copy(update={"backup_keep": 1})
    for minutes in (1, 2):
        _backup(engine, keep1, NOW + timedelta(hours=3, minutes=minutes))
    assert safety.exists() and Path(back.safety_copy or "").exists()


def test_restore_refuses_when_it_cannot_keep_the_safety_copy(
    engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    file = _backup(engine, settings)
    _add(engine, "after the backup")
    moved = file.rename(tmp_path / file.name)
    settings.backups_path.rmdir()
    settings.backups_path.write_text("a file where the directory should be")
    with pytest.raises(OndeckError) as caught:
        restore(engine, settings, moved, NOW)
    assert caught.value.code == "safety_copy_failed"
    assert "nothing was changed" in str(caught.value)
    assert _titles(engine) == ["after the backup"]


# --- the run that wrote the backup ----------------------------------------------------


def _scheduled_backup(engine: Engine, settings: Settings, now: datetime) -> tuple[int, Path]:
    with engine.begin() as conn:
        backup_runs.ensure_default_schedules(conn, now, UTC_ZONE)
        [schedule] = schedules.list_schedules(conn, kind="backup")
    threads = BackupThreads(name="jobs@test-host:1")
    assert threads.step(engine, now, settings)["started"]
    threads.join()
    with engine.connect() as conn:
        [run] = backup_runs.list_backups(conn, limit=1)
    assert run.status == "ok"
    return schedule.id, Path(run.file or "")


def test_a_restored_scheduled_backup_says_it_succeeded_with_that_days_fire(
    engine: Engine, settings: Settings, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The file holds its own run "running" and not its fire: the restore makes it true."""
    schedule_id, file = _scheduled_backup(engine, settings, NOW)
    with engine.connect() as conn:
        [original] = backup_runs.list_backups(conn)
    for target in (engine, _empty_database(engine, tmp_path, request)):
        restore(target, settings, file, NOW + timedelta(hours=3))
        with target.connect() as conn:
            [run] = backup_runs.list_backups(conn)
            [fire] = schedules.list_fires(conn, schedule_id)
            schedule = schedules.get_schedule(conn, schedule_id)
            ctx = context.context_for(conn, NOW + timedelta(hours=3), settings)
        assert (run.id, run.status, run.error) == (original.id, "ok", None)
        assert run.file == str(file.resolve())
        assert run.bytes == file.stat().st_size
        assert run.started_at <= (run.finished_at or run.started_at) <= NOW + timedelta(hours=3)
        assert fire.fire_date == NOW.date()
        assert schedule.next_due == NOW.date() + timedelta(days=1)
        assert "backup_failed" not in {w.code for w in ctx.warnings}
        # The next tick neither abandons it nor backs up again that day.
        threads = BackupThreads(name="jobs@another-host:2")
        assert threads.step(target, NOW + timedelta(hours=4), settings) == {}
        assert threads.maintain(target, NOW + timedelta(hours=4), settings) == {"abandoned": 0}


def test_other_runs_in_flight_in_a_backup_are_marked_not_guessed(
    engine: Engine, settings: Settings
) -> None:
    with engine.begin() as conn:
        other = conn.execute(
            insert(backups)
            .values(started_at=NOW - timedelta(minutes=5), status="running", worker="cli@h:5")
            .returning(backups.c.id)
        ).scalar_one()
    file = _backup(engine, settings)
    result = restore(engine, settings, file, NOW + timedelta(hours=1))
    assert result.taken_at == NOW
    with engine.connect() as conn:
        rows = {r.id: r for r in backup_runs.list_backups(conn)}
        abandoned = events.list_events(conn, kind="backup.abandoned")
    assert rows[other].status == "abandoned"
    assert f"was running when the backup {file.name} was taken" in (rows[other].error or "")
    assert [e.subject for e in abandoned] == [f"backup:{other}"]
    assert [r.status for r in rows.values() if r.id != other] == ["ok"]


def test_a_renamed_backup_still_names_its_run_when_it_is_the_only_one_running(
    engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    file = _backup(engine, settings)
    renamed = file.rename(tmp_path / "latest-backup.bin")
    result = restore(engine, settings, renamed, NOW + timedelta(hours=1))
    assert result.taken_at == NOW
    with engine.connect() as conn:
        statuses = conn.execute(select(backups.c.status, func.count()).group_by("status")).all()
    assert dict(statuses) == {"ok": 1}


def test_a_backup_written_under_a_stamp_no_running_row_has_names_no_run(
    engine: Engine, settings: Settings
) -> None:
    """Two runs in flight and a name matching neither: nothing is guessed."""
    for minutes in (1, 2):
        with engine.begin() as conn:
            conn.execute(
                insert(backups).values(
                    started_at=NOW - timedelta(minutes=minutes), status="running", worker="cli@h:1"
                )
            )
    file = _backup(engine, settings)
    renamed = file.rename(file.with_name("ondeck-20200101-000000" + file.suffix))
    result = restore(engine, settings, renamed, NOW + timedelta(hours=1))
    assert result.taken_at is None
    with engine.connect() as conn:
        assert {r.status for r in backup_runs.list_backups(conn)} == {"abandoned"}


def test_a_current_database_that_cannot_be_read_is_refused_with_the_way_out(
    engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    """The safety copy cannot be taken: nothing is replaced, and the message says how to go
    on (move the broken file away; the restore then fills an empty database)."""
    if engine.dialect.name == "postgresql":
        pytest.skip("corrupting a PostgreSQL cluster's files is not this test's business")
    file = _backup(engine, settings)
    _add(engine, "after the backup")
    engine.dispose()
    live = Path(engine.url.database or "")
    data = bytearray(live.read_bytes())
    data[4096:8192] = b"\xff" * 4096
    live.write_bytes(bytes(data))
    broken = live.read_bytes()
    with pytest.raises(OndeckError) as caught:
        restore(engine, settings, file, NOW)
    assert caught.value.code == "safety_copy_failed"
    assert f"move {live} away, then restore again" in str(caught.value)
    assert live.read_bytes() == broken
    live.rename(tmp_path / "broken.db")
    result = restore(engine, settings, file, NOW)
    assert result.replaced == {"empty": True}
    assert _titles(engine) == []
