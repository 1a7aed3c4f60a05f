"""A hook's record is durable before the hook waits on anything (sessions/capture/pipeline.py):
a real `ondeck hook` killed while the store makes it wait (SQLite write-locked by another
process; in client mode a server that takes the connection and never answers) has left its
record in the spool, and the next hook stores it. Before, the record was written to the
spool only after the wait (5 s, 3 s), so a hook Claude Code killed inside its budget lost the
event. A hook whose record was stored leaves nothing waiting: its own line leaves the spool.

SQLite only: the wait is SQLite's write lock (PostgreSQL's doors run through the same
function, tests/cli/test_hook_refusals.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ondeck.db.engine import make_engine, reading
from ondeck.sessions import records as svc
from support.hooks import ONDECK, SESSION_ID, new_repo, payload, run_hook, serverless_env

OTHER = "7a1c2d3e-5b6a-4c7d-8e9f-0123456789cd"


def _waiting(spool: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for name in ("draining.jsonl", "events.jsonl")
        if (spool / name).exists()
        for line in (spool / name).read_text().splitlines()
        if line.strip()
    ]


def _until(what: str, check: Callable[[], bool], timeout: float = 60) -> None:
    give_up = time.monotonic() + timeout
    while not check():
        if time.monotonic() > give_up:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(0.02)


def _started(verb: str, data: dict[str, Any], env: dict[str, str]) -> subprocess.Popen[str]:
    hook = subprocess.Popen(
        [ONDECK, "hook", verb],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    assert hook.stdin is not None
    hook.stdin.write(json.dumps(data))
    hook.stdin.close()
    return hook


def _killed(hook: subprocess.Popen[str]) -> None:
    ended = hook.poll() is not None
    hook.send_signal(signal.SIGKILL)
    hook.wait(timeout=30)
    assert hook.stdout is not None and hook.stderr is not None
    hook.stdout.close()
    said = hook.stderr.read()
    hook.stderr.close()
    assert not ended, f"the hook ended before it was killed: {said}"


def _opened(pid: int, path: Path) -> bool:
    """Whether process `pid` holds `path` open (it is at the store, waiting on its lock)."""
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return False
    return str(path) in links


@pytest.fixture
def site(tmp_path: Path) -> dict[str, Any]:
    repo = new_repo(tmp_path / "site")
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text("")
    return {"cwd": str(repo), "transcript_path": str(transcript)}


def test_a_hook_killed_while_sqlite_is_locked_left_its_end_in_the_spool(
    tmp_path: Path, site: dict[str, Any]
) -> None:
    database = tmp_path / "ondeck.db"
    data = tmp_path / "data"
    env = {**serverless_env(f"sqlite:///{database}", data), "ONDECK_DEBUG": "1"}
    started = run_hook("session-start", payload("start", **site), env)
    assert started.returncode == 0, started.stderr
    assert _waiting(data / "spool") == []  # stored: its own line left the spool

    locker = sqlite3.connect(database, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")  # another writer (a long import) holds the lock
    try:
        hook = _started("session-end", payload("end", reason="logout", **site), env)
        # At the database, where SQLite makes it wait up to 5 s: killed there, as Claude
        # Code kills a hook past its budget.
        _until("the hook at the database", lambda: _opened(hook.pid, database))
        time.sleep(0.3)
        _killed(hook)
        kept = _waiting(data / "spool")
        assert [r["kind"] for r in kept] == ["end"], kept
        assert kept[0]["session"] == SESSION_ID
    finally:
        locker.execute("ROLLBACK")
        locker.close()

    # The next hook (another session's start) stores what waited, then leaves nothing.
    other = run_hook("session-start", payload("start", session_id=OTHER, **site), env)
    assert other.returncode == 0, other.stderr
    assert _waiting(data / "spool") == []
    engine = make_engine(f"sqlite:///{database}")
    try:
        with reading(engine) as conn:
            row = svc.find_session(conn, SESSION_ID)
            assert row is not None
            assert (row.status, row.end_reason) == ("ended", "logout")
            assert svc.find_session(conn, OTHER) is not None
    finally:
        engine.dispose()


def test_a_client_hook_killed_while_its_server_says_nothing_left_its_record_in_the_spool(
    tmp_path: Path, site: dict[str, Any]
) -> None:
    # A server that takes the connection and never answers (a stalled proxy, a hung host).
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    data = tmp_path / "laptop"
    env = {
        "ONDECK_SERVER_URL": f"http://127.0.0.1:{silent.getsockname()[1]}",
        "ONDECK_TOKEN": "c0ffee4d1e5e1b0a7d9f3e2c8b6a5d4f3e2c1b0a9f8e7d6c",
        "ONDECK_DATA_DIR": str(data),
        "ONDECK_TZ": "UTC",
        "ONDECK_DEBUG": "1",
    }
    try:
        said = payload("stop", last_assistant_message="다 됐어요: done", **site)
        hook = _started("stop", said, env)
        silent.settimeout(60)
        held, _ = silent.accept()  # the hook is at the server now, waiting for its answer
        try:
            time.sleep(0.3)
            _killed(hook)
        finally:
            held.close()
    finally:
        silent.close()
    kept = _waiting(data / "spool")
    assert [r["kind"] for r in kept] == ["stop"], kept
    assert kept[0]["text"]["value"] == "다 됐어요: done"


def test_a_spool_that_cannot_be_written_keeps_no_record_from_the_database(
    tmp_path: Path, site: dict[str, Any]
) -> None:
    """Written first, but not only there: with the spool's place taken by a file (a foreign
    file, a folder gone read-only), the hook still stores its record in the database."""
    database = tmp_path / "ondeck.db"
    data = tmp_path / "data"
    env = serverless_env(f"sqlite:///{database}", data)
    data.mkdir()
    (data / "spool").write_text("not a folder\n")
    done = run_hook("session-start", payload("start", **site), env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    engine = make_engine(f"sqlite:///{database}")
    try:
        with reading(engine) as conn:
            assert svc.find_session(conn, SESSION_ID) is not None
    finally:
        engine.dispose()
