"""Settings that would lie later stop every command at once.

Real `ondeck` processes in a scratch HOME: a database that keeps
nothing, or a path relative to whatever folder a command (or the session hook, which runs
in each project's folder) happens to run in, is exit 2 with one line naming the setting, and
nothing is created anywhere. The URLs that do keep data, PostgreSQL's included, keep working
from every folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ondeck.core import clock
from ondeck.core.durations import format_duration
from ondeck.entrypoints.cli import run
from ondeck.host.quick_settings import LEASE_GRACE_MAX
from ondeck.work import backlog, backlog_leases

ONDECK = str(Path(sys.executable).with_name("ondeck"))


@pytest.fixture
def scratch(tmp_path: Path) -> dict[str, Path]:
    """A user's set-up: HOME, a data dir, and two project folders to run commands in."""
    places = {
        "home": tmp_path / "home",
        "data": tmp_path / "data",
        "site": tmp_path / "projects" / "site",
        "shop": tmp_path / "projects" / "shop",
    }
    for place in places.values():
        place.mkdir(parents=True)
    return places


def _env(scratch: dict[str, Path], **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONDECK_")}
    env.update(
        HOME=str(scratch["home"]),
        ONDECK_DATA_DIR=str(scratch["data"]),
        ONDECK_TZ="Asia/Seoul",
        ONDECK_CONFIG=str(scratch["home"] / "none.toml"),
        XDG_DATA_HOME=str(scratch["home"] / ".local" / "share"),
        XDG_CONFIG_HOME=str(scratch["home"] / ".config"),
    )
    env.update(settings)
    return env


def _ondeck(
    cwd: Path, env: dict[str, str], *args: str, stdin: str = ""
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [ONDECK, *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _files(*folders: Path) -> list[Path]:
    return sorted(p for folder in folders for p in folder.rglob("*"))


def _refused(result: subprocess.CompletedProcess[str], setting: str) -> None:
    assert result.returncode == 2, result
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("ondeck: error: ")
    assert f"{setting}=" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "url",
    ["sqlite:///", "sqlite://", "sqlite:///:memory:", "sqlite:///o.db", "sqlite:///data/o.db"],
)
def test_a_database_that_keeps_nothing_or_depends_on_the_folder_is_refused(
    scratch: dict[str, Path], url: str
) -> None:
    env = _env(scratch, ONDECK_DATABASE_URL=url)
    _refused(_ondeck(scratch["site"], env, "task", "add", "hi"), "ONDECK_DATABASE_URL")
    # --db overrides the URL and gets the same checks, whatever the environment says.
    good = _env(scratch, ONDECK_DATABASE_URL=f"sqlite:///{scratch['data']}/o.db")
    _refused(
        _ondeck(scratch["site"], good, "--db", url, "task", "add", "hi"), "ONDECK_DATABASE_URL"
    )
    assert _files(scratch["site"], scratch["shop"], scratch["data"], scratch["home"]) == []


@pytest.mark.parametrize("data_dir", ["", "data", "./data", "~nobody-here/data"])
def test_an_empty_or_relative_data_dir_is_refused_and_the_hook_says_so(
    scratch: dict[str, Path], data_dir: str
) -> None:
    env = _env(scratch, ONDECK_DATA_DIR=data_dir)
    _refused(_ondeck(scratch["site"], env, "task", "add", "hi"), "ONDECK_DATA_DIR")
    payload = json.dumps({"session_id": "s", "cwd": str(scratch["site"])})
    hook = _ondeck(scratch["site"], env, "hook", "session-start", stdin=payload)
    assert hook.returncode == 0, "a hook never fails a session"
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "unavailable" in context and "ONDECK_DATA_DIR" in context
    assert _files(scratch["site"], scratch["shop"], scratch["data"], scratch["home"]) == []


def test_every_project_folder_reads_the_one_database(scratch: dict[str, Path], db_url: str) -> None:
    """The same URL, PostgreSQL's included, from two folders: the hook in the second folder
    sees what a command in the first one wrote."""
    env = _env(scratch, ONDECK_DATABASE_URL=db_url)
    added = _ondeck(scratch["site"], env, "task", "add", "write the report")
    assert added.returncode == 0, added.stderr
    payload = json.dumps({"session_id": "s", "cwd": str(scratch["shop"])})
    hook = _ondeck(scratch["shop"], env, "hook", "session-start", stdin=payload)
    assert "write the report" in json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_home_relative_sqlite_path_is_the_same_file_from_every_folder(
    scratch: dict[str, Path],
) -> None:
    env = _env(scratch, ONDECK_DATABASE_URL="sqlite:///~/ondeck/o.db")
    assert _ondeck(scratch["site"], env, "task", "add", "한글 할 일").returncode == 0
    listed = _ondeck(scratch["shop"], env, "task", "list", "--json")
    assert [t["title"] for t in json.loads(listed.stdout)] == ["한글 할 일"]
    assert (scratch["home"] / "ondeck" / "o.db").is_file()
    assert _files(scratch["site"], scratch["shop"]) == []


# --- durations past their bound ------------------------------------------------------------


@pytest.fixture
def running(engine: Engine) -> Engine:
    """A RUNNING task: the case in which `context` overflowed."""
    with engine.begin() as conn:
        task = backlog.create_task(conn, clock.now(), title="held", actor="cli")
        backlog_leases.claim_task(conn, clock.now(), task.id, owner="cli:x", actor="cli")
    return engine


@pytest.mark.parametrize("grace", ["99999999d", "999999999d999999999d", "31d"])
@pytest.mark.parametrize("command", [["context"], ["jobs", "--once"]])
def test_a_lease_grace_past_its_bound_stops_the_command(
    running: Engine,
    db_url: str,
    grace: str,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ONDECK_LEASE_GRACE", grace)
    assert run(["--db", db_url, *command]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"ONDECK_LEASE_GRACE={grace}" in err
    assert f"at most {format_duration(LEASE_GRACE_MAX)}" in err


@pytest.mark.parametrize("command", [["context"], ["jobs", "--once"]])
def test_the_longest_lease_grace_works_with_a_running_task(
    running: Engine,
    db_url: str,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ONDECK_LEASE_GRACE", format_duration(LEASE_GRACE_MAX))
    monkeypatch.setenv("ONDECK_DATA_DIR", str(tmp_path / "data"))
    assert run(["--db", db_url, *command]) == 0, capsys.readouterr().err


def test_a_data_dir_with_any_characters_holds_the_database_and_its_backups(
    scratch: dict[str, Path],
) -> None:
    """`%`, `?` and `#` mean something in a URL; the folder is still the one named."""
    folder = scratch["home"] / "50%off?#한글 dir"
    env = _env(scratch, ONDECK_DATA_DIR=str(folder))
    assert _ondeck(scratch["site"], env, "task", "add", "x").returncode == 0
    backup = _ondeck(scratch["site"], env, "backup", "--json")
    assert backup.returncode == 0, backup.stderr
    assert (folder / "ondeck.db").is_file()
    assert [p.parent for p in folder.glob("backups/*.db")] == [folder / "backups"]
    assert _files(scratch["site"], scratch["shop"]) == []
