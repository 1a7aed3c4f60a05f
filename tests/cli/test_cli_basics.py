"""The command line: one line on stderr and the right exit code for every bad input."""

from __future__ import annotations

import pytest

from ondeck.db.engine import make_engine
from ondeck.db.migrate import HEAD, read_revision
from ondeck.entrypoints.cli import run


def test_db_upgrade_then_status(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    assert run(["--db", url, "db", "upgrade"]) == 0
    assert f"empty -> {HEAD}" in capsys.readouterr().out
    assert run(["--db", url, "db", "upgrade"]) == 0
    assert "already at" in capsys.readouterr().out
    assert run(["--db", url, "db", "status", "--json"]) == 0
    assert '"current": true' in capsys.readouterr().out
    assert read_revision(make_engine(url)) == HEAD


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["nonsense"], {}, "No such command"),
        (["jobs", "--bogus"], {}, "No such option"),
        (["--db", "mysql://x/y", "db", "status"], {}, "only sqlite:/// and postgresql"),
        (["--db", "::not a url::", "db", "status"], {}, "not a database URL"),
        (["db", "status"], {"ONDECK_TZ": "Nowhere/Land"}, "ONDECK_TZ=Nowhere/Land"),
        (["jobs", "--once"], {"ONDECK_LEASE_GRACE": "soon"}, "ONDECK_LEASE_GRACE=soon"),
        (["serve", "--host", "0.0.0.0"], {}, "needs ONDECK_TOKEN"),
        (["serve", "--port", "http"], {}, "--port"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str],
    env: dict[str, str],
    expected: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path,
) -> None:
    monkeypatch.setenv("ONDECK_DATA_DIR", str(tmp_path))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert run(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("ondeck: error: ")
    assert expected in err
    assert "Traceback" not in err
    assert not (tmp_path / "ondeck.db").exists(), "nothing is written on bad input"


def test_a_port_in_use_is_refused_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    import socket

    monkeypatch.setenv("ONDECK_DATA_DIR", str(tmp_path))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert run(["serve", "--port", str(port)]) == 2
    assert f"ONDECK_PORT={port}: port already in use" in capsys.readouterr().err


def test_an_unreachable_database_exits_5(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--db", "postgresql+psycopg://nobody@127.0.0.1:1/x", "db", "status"]) == 5
    err = capsys.readouterr().err
    assert "database unavailable" in err
    assert err.count("\n") == 1


def test_a_command_run_as_its_own_process_works_with_garbage_collected(tmp_path) -> None:
    """`ondeck` as a process skips collection only while it loads (cli/__init__.py): the
    command's own work, which may run for days (`serve`, `jobs`), is collected as usual."""
    import subprocess
    import sys

    probe = (
        "import gc, sys\n"
        "from ondeck.entrypoints.cli import _whole_process\n"
        "from ondeck.entrypoints.cli.tasks import app\n"
        "@app.command('gc-probe', hidden=True)\n"
        "def probe() -> None:\n"
        "    print('collecting' if gc.isenabled() else 'not collecting')\n"
        "added = _whole_process(['task', 'add', '가비지 없음'])\n"
        "sys.exit(added or _whole_process(['task', 'gc-probe']))\n"
    )
    env = {"ONDECK_HOME": str(tmp_path), "ONDECK_TZ": "UTC", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "collecting"
