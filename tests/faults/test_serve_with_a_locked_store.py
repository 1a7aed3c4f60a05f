"""`ondeck serve` started while another process holds SQLite's write lock (BEGIN IMMEDIATE,
as a long import does), when the server must write as it starts: a store id to make (a
new database), a schema to bring up to date (a 0.1.0 database). It says in one line that
it waits and for what, and starts once the lock is let go; held past the bound (30 s), it
exits 2 with one line. With nothing to write it starts at once, as it always did.

PostgreSQL has no database-wide write lock: a writer there locks rows, and a starting
server's writes (the schema under an advisory lock, the one store id row) wait for no
import."""

from __future__ import annotations

import shutil
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from support.pg import free_port
from support.procs import Proc, Procs, http, ondeck_env, wait_for

pytestmark = pytest.mark.slow

FIXTURE_0_1_0 = Path(__file__).parents[1] / "fixtures" / "release-0.1.0" / "ondeck-0.1.0.sqlite3"
WAIT_LINE = "write-locked by another process"
# A process that takes the write lock, says so, and lets it go after SECONDS (or when
# killed): another program mid-write.
HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
print("unlocked", flush=True)
"""


def _hold(procs: Procs, path: Path, seconds: float) -> Proc:
    holder = procs.start("holder", [sys.executable, "-c", HOLDER, str(path), str(seconds)], {})
    wait_for(lambda: "locked" in holder.text(), timeout=30, what="the write lock taken")
    return holder


def _serve(procs: Procs, path: Path, tmp_path: Path) -> tuple[Proc, str]:
    port = free_port()
    env = ondeck_env(f"sqlite:///{path}", tmp_path, tick=60)
    server = procs.ondeck("serve", "serve", "--port", str(port), env=env)
    return server, f"http://127.0.0.1:{port}/api/v1/health"


def _answers(url: str) -> bool:
    try:
        return http("GET", url, timeout=2).status == 200
    except OSError:
        return False


@pytest.fixture
def new_database(sqlite_template: Path, tmp_path: Path) -> Path:
    """Migrated, never served: no store id yet."""
    path = tmp_path / "ondeck.db"
    shutil.copyfile(sqlite_template, path)
    path.chmod(0o600)  # as ondeck makes it: the server says nothing of its mode
    return path


@pytest.fixture
def old_database(tmp_path: Path) -> Path:
    """A database of ondeck 0.1.0: its schema must be brought up to date."""
    path = tmp_path / "old.db"
    shutil.copyfile(FIXTURE_0_1_0, path)
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("which", ["new_database", "old_database"])
def test_a_server_that_must_write_waits_for_the_lock_then_starts(
    which: str, procs: Procs, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    path: Path = request.getfixturevalue(which)
    holder = _hold(procs, path, seconds=8)
    began = time.monotonic()
    server, url = _serve(procs, path, tmp_path)
    wait_for(lambda: WAIT_LINE in server.text(), timeout=30, what="the waiting line")
    wait_for(lambda: _answers(url) or not server.alive(), timeout=60, what="the server")
    assert server.alive(), server.text()
    assert "unlocked" in holder.text()  # it answered only once the lock was let go
    said = server.text()
    waited = [line for line in said.splitlines() if WAIT_LINE in line]
    assert len(waited) == 1, said
    what = "make the store's id" if which == "new_database" else "bring its schema up to date"
    assert f"waiting up to 30 s for the lock, to {what}" in waited[0]
    assert "error" not in said and "Traceback" not in said, said
    assert time.monotonic() - began < 60
    assert server.stop() == 0


def test_a_lock_held_past_the_bound_is_one_line_and_exit_2(
    new_database: Path, procs: Procs, tmp_path: Path
) -> None:
    _hold(procs, new_database, seconds=120)
    began = time.monotonic()
    server, _ = _serve(procs, new_database, tmp_path)
    code = server.wait(timeout=90)
    waited = time.monotonic() - began
    said = server.text()
    assert code == 2, said
    assert 30 <= waited < 60, waited
    lines = said.splitlines()
    assert len(lines) == 2 and WAIT_LINE in lines[0], said
    assert lines[1].startswith("ondeck: error: the database stayed write-locked"), said
    assert "could not make the store's id, nothing started" in lines[1]


def test_a_server_with_nothing_to_write_starts_at_once(
    new_database: Path, procs: Procs, tmp_path: Path
) -> None:
    """Its store id made once (a first start), the lock does not hold it back."""
    conn = sqlite3.connect(new_database)
    conn.execute(
        "INSERT INTO store_identity (id, store_id, created_at) "
        "VALUES (1, '0123456789abcdef', '2026-06-15 09:00:00.000000')"
    )
    conn.commit()
    conn.close()
    _hold(procs, new_database, seconds=120)
    server, url = _serve(procs, new_database, tmp_path)
    wait_for(lambda: _answers(url) or not server.alive(), timeout=60, what="the server")
    assert server.alive() and WAIT_LINE not in server.text(), server.text()
    assert server.stop() == 0
