"""One copy of each store, written and checked: the bytes of a backup, nothing about runs.

SQLite: `VACUUM INTO` a new file: one statement reading one snapshot while others keep
writing (WAL), and a compact, self-contained file (no -wal companion). PostgreSQL:
`pg_dump --format=custom`, checked with `pg_restore --list`.

A copy can be stopped (the jobs process is stopping) and is bounded in time: SQLite's
progress handler and the wait on `pg_dump` both look at `stop` and the deadline. So a run
older than `MAX_RUN` cannot still be working, which is how a run with no heartbeat to judge
it by (a CLI run) is known to be dead.

Failures are `BackupFailed` with one line saying why; a stopped copy is `Cancelled`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Engine
from sqlalchemy.engine import URL, make_url

from ondeck.core.errors import InvalidInput, OndeckError
from ondeck.host import private

DUMP_TIMEOUT_S = 6 * 3600
VERIFY_TIMEOUT_S = 600
# The longest a run can take: writing, then verifying. Older "running" rows are dead.
MAX_RUN = timedelta(seconds=DUMP_TIMEOUT_S + VERIFY_TIMEOUT_S)
SQLITE_MAGIC = b"SQLite format 3\x00"
PG_DUMP_MAGIC = b"PGDMP"
# SQLite calls the progress handler every this many virtual machine steps (~0.1 ms).
_PROGRESS_STEPS = 10_000
# How often a wait on pg_dump looks at `stop`.
_POLL_S = 0.25

# Called from the SQLite copy's progress handler with the copy's `stop`; None in production.
# The tests' slow copy (tests/support/slow_backup.py) sets it, to show that a long backup
# holds nothing back and can still be stopped.
PACE: Callable[[threading.Event | None], None] | None = None


class BackupFailed(OndeckError):
    """The backup did not complete."""

    code = "backup_failed"


class Cancelled(BackupFailed):
    """The backup was stopped before it ended."""

    code = "backup_cancelled"


def _stopped(stop: threading.Event | None) -> bool:
    return stop is not None and stop.is_set()


# --- SQLite ----------------------------------------------------------------------------


def sqlite_path(engine: Engine) -> Path:
    database = engine.url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        raise BackupFailed("only a SQLite database file can be backed up")
    return Path(database).expanduser()


def copy_sqlite(source: Path, target: Path, *, stop: threading.Event | None = None) -> None:
    """A consistent, compact copy of `source` at `target` (which must not exist)."""
    # Created here first: SQLite says only "unable to open database file" about a file it
    # cannot create; the OSError says why (read-only, permission denied, no space left).
    private.create_file(target)
    deadline = time.monotonic() + DUMP_TIMEOUT_S
    reason: list[str] = []

    def progress() -> int:
        if PACE is not None:
            PACE(stop)
        if _stopped(stop):
            reason.append("stop")
        elif time.monotonic() > deadline:
            reason.append("time")
        return 1 if reason else 0  # non-zero interrupts the statement

    try:
        conn = sqlite3.connect(f"file:{quote(str(source))}?mode=rw", uri=True, timeout=15)
    except sqlite3.Error as exc:
        raise BackupFailed(f"SQLite backup: cannot open {source}: {exc}") from None
    try:
        # With PACE set, often enough that even a tiny database's copy is paced.
        conn.set_progress_handler(progress, 100 if PACE else _PROGRESS_STEPS)
        conn.execute("VACUUM INTO ?", (str(target),))
    except sqlite3.Error as exc:
        if reason == ["stop"]:
            raise Cancelled("stopped before the copy was complete") from None
        if reason == ["time"]:
            raise BackupFailed(f"the SQLite copy took over {DUMP_TIMEOUT_S} s") from None
        raise BackupFailed(f"SQLite backup: {exc}") from None
    finally:
        conn.close()


def verify_sqlite(path: Path) -> str | None:
    """Check an intact SQLite file holding an ondeck schema; its schema revision.

    Raises `InvalidInput` saying why it is not one.
    """
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise InvalidInput(f"{path}: cannot open: {exc}") from None
    try:
        result = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
        if result != ["ok"]:
            raise InvalidInput(f"{path}: integrity check failed: {'; '.join(result)[:300]}")
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"alembic_version", "schedules", "tasks"} <= names:
            raise InvalidInput(f"{path}: not an ondeck database (its tables are missing)")
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.Error as exc:
        raise InvalidInput(f"{path}: not a usable SQLite database: {exc}") from None
    finally:
        conn.close()
    return None if row is None else str(row[0])


# --- PostgreSQL ------------------------------------------------------------------------


def pg_tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise BackupFailed(
            f"{name} not found on PATH: install the PostgreSQL client tools "
            "(Debian: postgresql-client) matching the server's version"
        )
    return found


def pg_target(engine_or_url: Engine | str) -> tuple[str, dict[str, str]]:
    """A libpq URL without the password, and the environment carrying it.

    The password goes in PGPASSWORD, never on the command line (any user of the machine
    reads another's arguments in /proc; only the owner reads its environment). The URL
    object is read itself: `str()` of it masks the password as `***`."""
    url = engine_or_url.url if isinstance(engine_or_url, Engine) else make_url(engine_or_url)
    query = dict(url.query)
    password = url.password if url.password is not None else query.pop("password", None)
    env = dict(os.environ)
    if password:
        env["PGPASSWORD"] = str(password if isinstance(password, str) else password[0])
    env.setdefault("PGCONNECT_TIMEOUT", "10")
    # Built anew: `url.set(password=None)` leaves the password as it was.
    plain = URL.create(
        "postgresql",
        username=url.username,
        host=url.host,
        port=url.port,
        database=url.database,
        query=query,
    )
    return plain.render_as_string(hide_password=False), env


def run_tool(
    args: list[str],
    env: dict[str, str],
    timeout: int,
    what: str,
    *,
    stop: threading.Event | None = None,
) -> str:
    """Run a PostgreSQL client tool to its end; its stdout, or `BackupFailed` with the
    last line it wrote on stderr. `stop` ends it early (`Cancelled`)."""
    try:
        # Its own process group: stopping it stops whatever it started too (a wrapper
        # script's children would otherwise hold its output open after it was killed).
        proc = subprocess.Popen(
            args,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            # Whatever it creates (a dump, a restore's script) is the owner's alone.
            umask=0o077,
        )
    except OSError as exc:
        raise BackupFailed(f"{what} could not start: {exc.strerror or exc}") from None
    deadline = time.monotonic() + timeout
    while True:
        try:
            # Short waits (not an Event's): `stop` is seen within _POLL_S.
            out, err = proc.communicate(timeout=_POLL_S)
            break
        except subprocess.TimeoutExpired:
            if _stopped(stop) or time.monotonic() > deadline:
                _kill_group(proc)
                if _stopped(stop):
                    raise Cancelled(f"stopped while {what} was running") from None
                raise BackupFailed(f"{what} did not finish within {timeout} s") from None
    if proc.returncode != 0:
        lines = [line for line in err.strip().splitlines() if line.strip()]
        reason = lines[-1] if lines else f"exit status {proc.returncode}"
        raise BackupFailed(f"{what} failed: {reason[:500]}")
    return out


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=30)


def dump_postgres(engine: Engine, target: Path, *, stop: threading.Event | None = None) -> None:
    url, env = pg_target(engine)
    private.create_file(target)  # pg_dump writes into it, keeping its mode
    run_tool(
        [pg_tool("pg_dump"), "--format=custom", f"--file={target}", f"--dbname={url}"],
        env,
        DUMP_TIMEOUT_S,
        "pg_dump",
        stop=stop,
    )


def verify_postgres(path: Path) -> str | None:
    """Check a readable pg_dump archive of an ondeck database; its schema revision.

    Raises `InvalidInput` saying why it is not one.
    """
    try:
        listing = run_tool(
            [pg_tool("pg_restore"), "--list", str(path)],
            dict(os.environ),
            VERIFY_TIMEOUT_S,
            "pg_restore --list",
        )
    except BackupFailed as exc:
        raise InvalidInput(f"{path}: {exc}") from None
    if "TABLE DATA" not in listing or " schedules " not in listing:
        raise InvalidInput(f"{path}: not an ondeck database dump (its tables are missing)")
    try:
        data = run_tool(
            [pg_tool("pg_restore"), "--data-only", "--table=alembic_version", "-f", "-", str(path)],
            dict(os.environ),
            VERIFY_TIMEOUT_S,
            "pg_restore",
        )
    except BackupFailed as exc:
        raise InvalidInput(f"{path}: {exc}") from None
    return _copied_value(data, "alembic_version")


def _copied_value(script: str, table: str) -> str | None:
    """The first value of a one-column table in pg_restore's SQL (`COPY … FROM stdin;`)."""
    lines = iter(script.splitlines())
    for line in lines:
        if line.startswith("COPY ") and f"{table} " in line:
            value = next(lines, "\\.")
            return None if value == "\\." else value.strip()
    return None


# --- either ----------------------------------------------------------------------------


def file_kind(path: Path) -> str | None:
    """ "sqlite", "pg_dump" or None, from the file's first bytes."""
    with path.open("rb") as file:
        head = file.read(len(SQLITE_MAGIC))
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    if head.startswith(PG_DUMP_MAGIC):
        return "pg_dump"
    return None


def write_copy(engine: Engine, target: Path, *, stop: threading.Event | None = None) -> None:
    """Write and verify a copy of the database behind `engine` at `target`."""
    if engine.dialect.name == "postgresql":
        dump_postgres(engine, target, stop=stop)
        verify_postgres(target)
    else:
        copy_sqlite(sqlite_path(engine), target, stop=stop)
        verify_sqlite(target)
