"""The backup directory's files: names that never replace each other, the order pruning
goes by, and what pruning may and may not delete."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ondeck.backups import files as backup_files

NOW = datetime(2026, 6, 17, 9, 0, tzinfo=UTC)


def _touch(folder: Path, *names: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / name for name in names]
    for path in paths:
        path.write_bytes(path.name.encode())
    return paths


def test_a_name_gives_its_time_and_sequence() -> None:
    assert backup_files.name_time("ondeck-20260617-090000.db") == (NOW, 1)
    assert backup_files.name_time("ondeck-20260617-090000-12.dump") == (NOW, 12)
    for other in ("ondeck-20261399-250000.db", "pre-restore-20260617-090000.db", "x.db"):
        assert backup_files.name_time(other) is None


def test_the_second_of_one_second_sorts_after_the_first(tmp_path: Path) -> None:
    """By name, `…-2.db` comes before `….db`; by time and sequence, after it."""
    first, second, older = _touch(
        tmp_path,
        "ondeck-20260617-090000.db",
        "ondeck-20260617-090000-2.db",
        "ondeck-20260616-090000.db",
    )
    assert sorted([first.name, second.name])[0] == second.name
    assert backup_files.backup_files(tmp_path) == [older, first, second]


def test_a_recorded_time_wins_over_the_name(tmp_path: Path) -> None:
    early, late = _touch(tmp_path, "ondeck-20260101-000000.db", "ondeck-20260601-000000.db")
    recorded = {early.name: NOW}  # its run says it was made after the other
    assert backup_files.backup_files(tmp_path, recorded) == [late, early]


def test_publishing_never_replaces_a_file(tmp_path: Path) -> None:
    """Two runs in the same second, in two threads at once: each keeps its own file."""
    temps = _touch(tmp_path, *[f".ondeck-x-{i}.tmp" for i in range(8)])
    published: list[Path] = []
    barrier = threading.Barrier(len(temps))

    def publish(temp: Path) -> None:
        barrier.wait()
        published.append(backup_files.publish(temp, tmp_path, "ondeck-20260617-090000", "db"))

    threads = [threading.Thread(target=publish, args=(t,)) for t in temps]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(published)) == len(temps)
    contents = {p.read_bytes() for p in published}
    assert contents == {t.name.encode() for t in temps}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in published)


def test_pruning_keeps_the_newest_and_the_file_just_written(tmp_path: Path) -> None:
    old, mid, new = _touch(
        tmp_path,
        "ondeck-20260101-000000.db",
        "ondeck-20260201-000000.db",
        "ondeck-20260301-000000.db",
    )
    # Written just now under a clock that was set back: the oldest name of all.
    [just_written] = _touch(tmp_path, "ondeck-20250101-000000.db")
    pruned = backup_files.prune(tmp_path, 2, recorded={}, protect=just_written)
    assert pruned.deleted == [old, mid]
    assert pruned.failed == []
    assert sorted(tmp_path.iterdir()) == [just_written, new]


def test_pruning_touches_only_our_files(tmp_path: Path) -> None:
    ours = _touch(tmp_path, "ondeck-20260101-000000.db", "ondeck-20260102-000000.dump")
    others = _touch(tmp_path, "notes.txt", "pre-restore-20250101-000000.db", "ondeck.db")
    (tmp_path / "ondeck-20240101-000000.db").mkdir()  # a directory named like one
    pruned = backup_files.prune(tmp_path, 1, recorded={})
    assert pruned.deleted == [ours[0]]
    assert all(p.exists() for p in [*others, ours[1]])


def test_a_missing_folder_has_no_files(tmp_path: Path) -> None:
    assert backup_files.backup_files(tmp_path / "nowhere") == []


def test_leftovers_of_dead_runs_are_removed_and_recent_ones_kept(tmp_path: Path) -> None:
    dead = _touch(
        tmp_path, ".ondeck-20260101-000000-1-2.tmp", ".ondeck-20260101-000000-1-2.tmp-wal"
    )
    [young] = _touch(tmp_path, ".ondeck-20260617-085900-3-4.tmp")
    [unrelated] = _touch(tmp_path, ".other.tmp")
    for path in dead:
        old = (NOW - timedelta(hours=7)).timestamp()
        os.utime(path, (old, old))
    os.utime(young, (NOW.timestamp(), NOW.timestamp()))
    removed = backup_files.remove_stale_temps(tmp_path, NOW, older_than_s=6 * 3600)
    assert sorted(removed.deleted) == sorted(dead)
    assert young.exists() and unrelated.exists()


def test_pg_target_gives_the_password_in_the_environment_never_in_the_url() -> None:
    from sqlalchemy import create_engine

    from ondeck.backups.copies import pg_target

    for given in (
        "postgresql+psycopg://u:s%40cret@h:5433/db?sslmode=require",
        "postgresql+psycopg://u@h:5433/db?password=s%40cret&sslmode=require",
    ):
        engine = create_engine(given)
        for source in (engine, given):
            url, env = pg_target(source)
            assert url == "postgresql://u@h:5433/db?sslmode=require", url
            assert env["PGPASSWORD"] == "s@cret"
        engine.dispose()
