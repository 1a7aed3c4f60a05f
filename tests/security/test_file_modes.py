"""Only the owner can read what ondeck writes: under the usual umask 022
every file ondeck makes is 0600 and every directory 0700 (the SQLite database and its -wal
and -shm, backups and pg_dump files, the pre-restore copy, exports to a file and to a
Markdown tree, the spool); files found too open at start are tightened, one log line each.

Real `ondeck` processes with their umask set, real file modes, both stores.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.procs import ONDECK, ondeck_env

pytestmark = pytest.mark.slow

UMASK = 0o022


def _run(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [ONDECK, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        umask=UMASK,
        cwd=cwd,
    )


def _ok(env: dict[str, str], *args: str, cwd: Path | None = None) -> str:
    result = _run(env, *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _mode(path: Path) -> str:
    return f"{stat.S_IMODE(path.stat().st_mode):04o}"


def _modes(paths: list[Path]) -> dict[str, str]:
    return {str(p): _mode(p) for p in paths}


def _tree(root: Path) -> list[Path]:
    return [root, *sorted(root.rglob("*"))]


@pytest.fixture
def store(db_url: str, tmp_path: Path) -> tuple[dict[str, str], Path | None]:
    """The environment of a store ondeck makes itself (SQLite: a new file in a new folder),
    and the SQLite file (None on PostgreSQL)."""
    data = tmp_path / "home" / "ondeck-data"
    if db_url.startswith("sqlite"):
        database: Path | None = data / "ondeck.db"
        url = f"sqlite:///{database}"
    else:
        database, url = None, db_url
    env = ondeck_env(url, tmp_path, ONDECK_DATA_DIR=str(data))
    env["ONDECK_BACKUP_DIR"] = str(tmp_path / "home" / "backups")
    return env, database


def test_every_file_ondeck_writes_is_the_owners_alone_under_umask_022(
    store: tuple[dict[str, str], Path | None], tmp_path: Path
) -> None:
    env, database = store
    _ok(env, "note", "add", "비밀 메모: the door code", "--project", "api", "--pin")
    backup = json.loads(_ok(env, "backup", "--json"))["file"]
    _ok(env, "task", "add", "after the backup")
    restored = json.loads(_ok(env, "restore", backup, "--yes", "--json"))
    exports = tmp_path / "home" / "exports"
    exports.mkdir(mode=0o755)
    exports.chmod(0o755)
    _ok(env, "export", "--format", "jsonl", "--out", str(exports / "memory.jsonl"))
    _ok(env, "export", "--format", "markdown", "--out", str(exports / "tree" / "md"))
    written: list[Path] = [
        Path(backup),
        Path(restored["safety_copy"]),
        Path(env["ONDECK_BACKUP_DIR"]),
        exports / "memory.jsonl",
        *_tree(exports / "tree"),
    ]
    if database is not None:
        written += [database.parent, database, *_companions_while_open(database)]
    assert len([p for p in written if p.suffix == ".md"]) == 1
    expected = {str(p): "0700" if p.is_dir() else "0600" for p in written}
    assert _modes(written) == expected


def _companions_while_open(database: Path) -> list[Path]:
    """SQLite's -wal and -shm, as ondeck's engine makes them in a process under umask 022
    (they go when the last connection closes: this one holds them while it looks)."""
    script = (
        "import os, sys\n"
        "os.umask(0o022)\n"
        "from sqlalchemy import text\n"
        "from ondeck.db.engine import make_engine\n"
        "engine = make_engine('sqlite:///' + sys.argv[1])\n"
        "with engine.begin() as conn:\n"
        "    conn.execute(text(\"UPDATE tasks SET title = title || '.'\"))\n"
        "with engine.connect() as conn:\n"
        "    conn.execute(text('SELECT 1 FROM tasks'))\n"
        "    for suffix in ('-wal', '-shm'):\n"
        "        print(oct(os.stat(sys.argv[1] + suffix).st_mode & 0o777))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(database)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0o600", "0o600"]
    return []


def test_the_spool_and_the_folders_above_it_are_the_owners_alone(tmp_path: Path) -> None:
    """A hook's spool, made by a process under umask 022 (os.umask in the subprocess)."""
    spool = tmp_path / "data" / "deep" / "spool"
    script = (
        "import os, sys\n"
        "os.umask(0o022)\n"
        "from ondeck.sessions.capture import spool\n"
        "spool.append(sys.argv[1], {'kind': 'stop', 'text': '한국어'})\n"
    )
    subprocess.run([sys.executable, "-c", script, str(spool)], check=True, timeout=60)
    made = [tmp_path / "data", tmp_path / "data" / "deep", spool, *spool.iterdir()]
    assert {str(p): _mode(p) for p in made} == {
        str(p): "0700" if p.is_dir() else "0600" for p in made
    }


def _loosen(paths: list[Path]) -> None:
    for path in paths:
        path.chmod(0o755 if path.is_dir() else 0o644)


def test_files_found_too_open_at_start_are_tightened_and_the_log_says_so(
    store: tuple[dict[str, str], Path | None],
) -> None:
    env, database = store
    _ok(env, "task", "add", "one")
    _ok(env, "backup")
    folder = Path(env["ONDECK_BACKUP_DIR"])
    [backup] = folder.iterdir()
    loose: list[Any] = [folder, backup]
    if database is not None:
        # A database an older ondeck left open to everyone, -wal and -shm included (a
        # reader here holds them while the jobs process starts).
        import sqlite3

        holder = sqlite3.connect(database, isolation_level=None)
        holder.execute("BEGIN")
        holder.execute("SELECT count(*) FROM tasks").fetchall()
        companions = sorted(database.parent.glob("ondeck.db-*"))
        assert len(companions) == 2
        loose += [database, *companions]
    _loosen(loose)
    try:
        result = _run(env, "jobs", "--once")
        assert result.returncode == 0, result.stderr
        assert _modes(loose) == {str(p): "0700" if p.is_dir() else "0600" for p in loose}
    finally:
        if database is not None:
            holder.close()
    said = [line for line in result.stderr.splitlines() if "was readable by others" in line]
    for path in loose:
        mine = [line for line in said if f"{path} was readable by others" in line]
        assert len(mine) == 1, (path, said)
    assert len(said) == len(loose)
    again = _run(env, "jobs", "--once")
    assert "readable by others" not in again.stderr


def test_a_tree_of_folders_made_for_an_export_is_the_owners_alone(
    store: tuple[dict[str, str], Path | None], tmp_path: Path
) -> None:
    """Every folder the export makes, the new parents included; the one it was given and
    found (an empty folder the user made) is left as it was."""
    env, _ = store
    _ok(env, "note", "add", "a decision", "--kind", "decision", "--project", "web")
    given = tmp_path / "given"
    given.mkdir()
    given.chmod(0o755)
    _ok(env, "export", "--format", "markdown", "--out", str(given))
    _ok(env, "export", "--format", "markdown", "--out", str(tmp_path / "a" / "b" / "c"))
    assert _mode(given) == "0755"
    made = [tmp_path / "a", tmp_path / "a" / "b", *_tree(tmp_path / "a" / "b" / "c")]
    files = [p for p in [*made, *given.rglob("*")] if p.is_file()]
    assert files and all(_mode(p) == "0600" for p in files)
    assert all(_mode(p) == "0700" for p in made if p.is_dir())
