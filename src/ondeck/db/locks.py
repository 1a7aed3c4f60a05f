"""The store's locks, waited for where several processes meet.

- SQLite's write lock, held by one writer at a time (a long `ondeck import`, a restore): a
  server that must write as it starts (a schema to bring up to date, a store id to make)
  waits for it, bounded, saying so, rather than fail after the 5 s busy timeout that suits
  a short command.
- Imports (`ondeck import` of memory, `session import` of transcripts), one at a time on
  PostgreSQL: each reads what is there, then inserts what is not; two at once both find a
  session or a note missing and both insert it (a unique key refuses the second: "internal
  error"; notes have none, so a note twice). SQLite's write lock already makes them take
  turns (BEGIN IMMEDIATE).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import Connection, Engine, text

from ondeck.core.errors import Locked
from ondeck.db.engine import SQLITE_BUSY_TIMEOUT_MS
from ondeck.db.sqlite_errors import locked

# How long a starting server waits for SQLite's write lock: long enough for an import or a
# restore of a few thousand notes, short enough that a service manager hears of a lock
# that is never let go. Not a setting: nothing else waits on a configurable time.
START_WAIT_SECONDS = 30.0

# PostgreSQL advisory lock keys are one space for the database: db/migrate.py holds
# 0x0DEC_0001, backups/runs.py its own.
_PG_IMPORT_KEY = 0x0DEC_0003


def write_lock_free(engine: Engine, wait_seconds: float = 0.0) -> bool:
    """Whether SQLite's write lock can be taken within `wait_seconds` (taken and let go at
    once: the caller's own transaction takes it again). Always True on PostgreSQL, where a
    writer locks rows, never the database."""
    if engine.dialect.name != "sqlite":
        return True
    raw = engine.raw_connection()
    try:
        driver = raw.driver_connection
        assert driver is not None  # checked out
        driver.execute(f"PRAGMA busy_timeout = {int(wait_seconds * 1000)}")
        try:
            driver.execute("BEGIN IMMEDIATE")
        except Exception as exc:  # sqlite3.OperationalError: "database is locked"
            if not locked(str(exc)):
                raise
            return False
        driver.execute("ROLLBACK")
        return True
    finally:
        if raw.driver_connection is not None:
            raw.driver_connection.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        raw.close()


def wait_for_write_lock(
    engine: Engine, *, what: str, say: Callable[[str], None], seconds: float = START_WAIT_SECONDS
) -> None:
    """Return once SQLite's write lock is free; if it is not at once, say (one line) that
    this waits and for what, and after `seconds` give up with `Locked`."""
    if write_lock_free(engine):
        return
    say(
        f"the database is write-locked by another process (an import, a restore?): waiting up "
        f"to {seconds:g} s for the lock, to {what}"
    )
    began = time.monotonic()
    if not write_lock_free(engine, seconds):
        raise Locked(
            f"the database stayed write-locked by another process for "
            f"{time.monotonic() - began:.0f} s: could not {what}, nothing started; try again "
            "once it is done"
        )


def one_import_at_a_time(conn: Connection) -> None:
    """Wait until no other import's transaction runs, and hold the turn to the end of
    `conn`'s (PostgreSQL's advisory transaction lock: let go at commit or rollback, or when
    the process dies). On SQLite the transaction's BEGIN IMMEDIATE holds it already."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_IMPORT_KEY})
