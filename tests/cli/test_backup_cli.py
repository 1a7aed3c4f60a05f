"""`ondeck backup` and `ondeck restore` as a user runs them (real processes, both stores):
one line per failure, a good backup never reported as failed, a restore that checks first
and says what it replaced and where that is kept."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from ondeck.backups import runs as backup_runs
from ondeck.core import clock
from ondeck.db.migrate import HEAD
from ondeck.host.settings import load_settings
from support.procs import ondeck_env, run_ondeck

pytestmark = pytest.mark.slow


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> dict[str, str]:
    return ondeck_env(db_url, tmp_path, ONDECK_TZ="Asia/Seoul")


def _ok(env: dict[str, str], *args: str) -> str:
    result = run_ondeck(*args, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _json(env: dict[str, str], *args: str) -> Any:
    return json.loads(_ok(env, *args, "--json"))


def _titles(env: dict[str, str]) -> list[str]:
    return [t["title"] for t in _json(env, "task", "list")]


def test_a_failed_backup_is_one_line_on_stderr(
    env: dict[str, str], db_url: str, tmp_path: Path
) -> None:
    folder = Path(env["ONDECK_BACKUP_DIR"])
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("a file where the directory should be")
    if db_url.startswith("postgresql"):
        env = {**env, "PATH": str(tmp_path / "no-tools-here")}
    result = run_ondeck("backup", env=env)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("ondeck: error: backup 1 failed: ")
    assert result.stdout == ""


def test_a_backup_whose_pruning_fails_is_good_and_says_so_once(
    env: dict[str, str], tmp_path: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a file undeletable (chattr +i) needs root")
    keep1 = {**env, "ONDECK_BACKUP_KEEP": "1"}
    stuck = Path(_json(keep1, "backup")["file"])
    locked = subprocess.run(["chattr", "+i", str(stuck)], capture_output=True, check=False)
    if locked.returncode != 0:
        pytest.skip(f"chattr +i not supported here: {locked.stderr.decode().strip()}")
    try:
        result = run_ondeck("backup", env=keep1)
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("backup 2: ")
    assert result.stderr == (
        f"ondeck: warning: could not delete the old backup {stuck}: Operation not permitted\n"
    )


def test_restore_of_a_directory_says_what_it_is_and_what_is_expected(
    env: dict[str, str],
) -> None:
    made = Path(_json(env, "backup")["file"])
    result = run_ondeck("restore", str(made.parent), "--yes", env=env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "is a directory: give a backup file written by `ondeck backup`" in result.stderr
    assert made.name in result.stderr


def test_restore_of_a_newer_schema_refuses_and_everything_still_works(
    env: dict[str, str], engine: Engine
) -> None:
    _ok(env, "task", "add", "before ✓")
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    # What a newer ondeck's backup is: this schema at a revision this ondeck does not have.
    settings = load_settings(database_url=env["ONDECK_DATABASE_URL"], tz="UTC",
                             backup_dir=Path(env["ONDECK_BACKUP_DIR"]))  # fmt: skip
    newer = Path(backup_runs.run_backup(engine, settings, clock.now()).backup.file or "")
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE alembic_version SET version_num = '{HEAD}'"))
    _ok(env, "task", "add", "after 한국어")
    result = run_ondeck("restore", str(newer), "--yes", env=env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "schema version 9999" in result.stderr and "upgrade ondeck" in result.stderr
    # Nothing changed: every later command still works on the same rows.
    assert _titles(env) == ["before ✓", "after 한국어"]
    assert _json(env, "db", "status")["schema_version"] == HEAD


def test_restore_names_the_backup_time_what_it_replaced_and_the_safety_copy(
    env: dict[str, str],
) -> None:
    _ok(env, "task", "add", "in the backup")
    made = _json(env, "backup")
    _ok(env, "task", "add", "after the backup")
    out = _ok(env, "restore", made["file"], "--yes")
    first, second = out.splitlines()
    assert first.startswith("restored ")
    assert f"from {made['file']} (a backup taken {made['started_at']})" in first
    assert "+09:00" in first  # shown in the configured zone
    assert "the database it replaced (2 tasks, 0 schedules, 3 events, last change" in second
    safety = second.split(" is kept in ")[1].split(":")[0]
    assert Path(safety).name.startswith("pre-restore-")
    assert f"`ondeck restore {safety} --yes` undoes this" in second
    assert _titles(env) == ["in the backup"]
    again = _json(env, "restore", safety, "--yes")
    assert again["safety_copy"] and again["taken_at"] is None
    assert _titles(env) == ["in the backup", "after the backup"]


def test_a_restored_scheduled_backup_is_not_reported_as_failed(
    env: dict[str, str],
) -> None:
    """Restore the jobs loop's own backup; the context must not say
    `backup_failed`, the run is `ok`, and that day's fire is there."""
    _ok(env, "jobs", "--once")
    [schedule] = _json(env, "schedule", "list")
    [fire] = _json(env, "schedule", "show", str(schedule["id"]))["fires"]
    backups_dir = Path(env["ONDECK_BACKUP_DIR"])
    [file] = [p for p in backups_dir.iterdir() if p.name.startswith("ondeck-")]
    _ok(env, "restore", str(file), "--yes")
    _ok(env, "jobs", "--once")
    result = run_ondeck("context", "--format", "json", env=env)
    assert result.returncode == 0, result.stderr
    context = json.loads(result.stdout)
    assert "backup_failed" not in {w["code"] for w in context["warnings"]}
    [restored] = _json(env, "schedule", "show", str(schedule["id"]))["fires"]
    # Its time is the file's (when the run published it), within moments of the original.
    gap = datetime.fromisoformat(restored.pop("fired_at")) - datetime.fromisoformat(
        fire.pop("fired_at")
    )
    assert abs(gap.total_seconds()) < 5
    assert restored == fire


# --- PostgreSQL with a password ----------------------------------------------------------

_SECRET = "p@ss:w/rd-비번"


def _spying_tools(folder: Path) -> Path:
    """pg_dump and pg_restore on PATH that note their arguments, then run the real ones."""
    import shutil

    folder.mkdir()
    log = folder / "calls.log"
    for name in ("pg_dump", "pg_restore"):
        real = shutil.which(name)
        assert real is not None
        wrapper = folder / name
        wrapper.write_text(
            f'#!/bin/sh\nprintf "%s\\n" "{name} $*" >> {log}\n'
            f'[ -n "$PGPASSWORD" ] && echo "{name} has PGPASSWORD" >> {log}\n'
            f'exec {real} "$@"\n'
        )
        wrapper.chmod(0o755)
    return log


def test_backup_and_restore_of_a_postgresql_database_whose_role_needs_a_password(
    db_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """`str(engine.url)` masks the password as `***`: every pg_dump and pg_restore failed
    with "password authentication failed". The password travels in the tools'
    environment, never in their arguments (which any user of the machine can read)."""
    if not db_url.startswith("postgresql"):
        pytest.skip("a PostgreSQL role's password: nothing to give on SQLite")
    from support.pg import require_password

    url = require_password(request.getfixturevalue("pg_admin_url"), db_url, "ondeck_pw", _SECRET)
    log = _spying_tools(tmp_path / "tools")
    env = ondeck_env(url, tmp_path, PATH=f"{tmp_path / 'tools'}:{os.environ['PATH']}")
    refused = run_ondeck(
        "task", "list", env={**env, "ONDECK_DATABASE_URL": url.replace("p%40ss", "wrong")}
    )
    assert refused.returncode != 0  # the role does need its password
    _ok(env, "task", "add", "in the backup")
    made = _json(env, "backup")
    assert made["status"] == "ok", made
    _ok(env, "task", "add", "after the backup")
    restored = _json(env, "restore", made["file"], "--yes")
    assert restored["safety_copy"]
    assert _titles(env) == ["in the backup"]
    calls = log.read_text()
    assert "pg_dump has PGPASSWORD" in calls and "pg_restore has PGPASSWORD" in calls
    assert "p@ss" not in calls and "p%40ss" not in calls and "***" not in calls


# --- back up, change, export, restore, import ----------------------------------------


def test_an_import_after_a_restore_brings_what_changed_and_a_cut_export_is_refused(
    env: dict[str, str], db_url: str, tmp_path: Path
) -> None:
    """Back up, change, export, restore, import with the real CLI: the brief after the
    import shows the replacement, not the superseded note, nor the wrong one, nor the older
    handoff."""
    from ondeck.db.engine import make_engine
    from support.memory import make_session

    decision = _json(env, "note", "add", "배포는 금요일", "--kind", "decision", "--project",
                     "api", "--pin")  # fmt: skip
    plain = _json(env, "note", "add", "the grace is 6 h", "--project", "api", "--pin")
    engine = make_engine(db_url)
    with engine.begin() as conn:
        make_session(conn, clock.now(), external_id="sess-import-1", project="api")
    engine.dispose()
    _ok(env, "handoff", "next: the old plan", "--session", "sess-import-1")
    made = _json(env, "backup")
    _ok(env, "note", "supersede", str(decision["id"]), "배포는 목요일")
    _ok(env, "note", "wrong", str(plain["id"]), "--reason", "12 h since May")
    _ok(env, "handoff", "next: 새 계획", "--session", "sess-import-1")
    exported = tmp_path / "memory.jsonl"
    _ok(env, "export", "--format", "jsonl", "--out", str(exported))
    _ok(env, "restore", made["file"], "--yes")
    lines = exported.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:-2]), encoding="utf-8")
    refused = run_ondeck("import", str(cut), env=env)
    assert refused.returncode == 2
    assert refused.stderr.startswith("ondeck: error: incomplete export"), refused.stderr
    assert refused.stderr.count("\n") == 1
    out = _ok(env, "import", str(exported))
    assert "1 note and" in out and "3 brought to the export's newer state" in out, out
    brief = _ok(env, "context", "--format", "markdown", "--project", "api")
    assert "배포는 목요일" in brief and "next: 새 계획" in brief
    for stale in ("배포는 금요일", "the grace is 6 h", "next: the old plan"):
        assert stale not in brief, stale
    shown = _json(env, "note", "show", str(decision["id"]))
    assert shown["status"] == "superseded" and not shown["pinned"], shown


def test_a_note_written_while_the_clock_ran_ahead_stays_wrong_after_restore_and_import(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The note is written with the clock a month ahead (libfaketime), backed up, marked
    wrong with the clock right, exported; restore and import: wrong, and said so."""
    from datetime import UTC, timedelta

    from support.procs import at_time

    ahead = at_time(env, datetime.now(UTC) + timedelta(days=30))
    note = json.loads(_ok(ahead, "note", "add", "배포 창은 금요일", "--json"))
    made = _json(env, "backup")
    _ok(env, "note", "wrong", str(note["id"]), "--reason", "목요일로 바뀜")
    exported = tmp_path / "memory.jsonl"
    _ok(env, "export", "--format", "jsonl", "--all-sides", "--out", str(exported))
    _ok(env, "restore", made["file"], "--yes")
    out = _ok(env, "import", str(exported))
    assert "0 already there; 1 brought to the export's newer state" in out, out
    assert f"marked wrong as in the export: 1 note ({note['id']})" in out, out
    shown = _json(env, "note", "show", str(note["id"]))
    assert (shown["status"], shown["status_reason"]) == ("wrong", "목요일로 바뀜"), shown
    assert "배포 창은 금요일" not in _ok(env, "recall", "배포")
