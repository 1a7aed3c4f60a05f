"""Engines for the two stores, with the settings each needs to be shared safely.

SQLite: WAL so the server and a separate jobs process read while one writes; a busy
timeout so a writer waits instead of failing; `BEGIN IMMEDIATE` for transactions that
write, so two writers serialise at BEGIN instead of deadlocking on a lock upgrade.
Read-only work passes `execution_options(readonly=True)` to take a plain deferred BEGIN.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import (
    ArgumentError,
    DatabaseError,
    DBAPIError,
    NoSuchModuleError,
    OperationalError,
)

from ondeck.core.errors import ConfigError, Unavailable
from ondeck.core.urls import shown
from ondeck.db import textpairs
from ondeck.db.refusals import is_pg_store_refusal
from ondeck.db.sqlite_errors import unavailable
from ondeck.host import private

# How long a writer waits for another writer's lock before giving up with `Unavailable`
# (HTTP 503, exit 5). Normal write transactions last milliseconds; a lock held for seconds
# is another program (or a stuck one), and an API call, command or session hook should say
# so within a few seconds rather than look hung. The jobs loop just retries.
SQLITE_BUSY_TIMEOUT_MS = 5_000
# Likewise for a PostgreSQL server that does not answer (a connect is the step that hangs).
PG_CONNECT_TIMEOUT_S = 5


def make_engine(url: str, **kwargs: Any) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigError(f"ONDECK_DATABASE_URL={url!r:.80}: not a database URL") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(parsed, **kwargs)
    if backend == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        connect_args = {
            "connect_timeout": PG_CONNECT_TIMEOUT_S,
            "application_name": "ondeck",
            # Instants come back in UTC whatever the server's zone (as `Instant` gives them;
            # statements run straight through the driver rely on it: events._Precompiled).
            "options": "-c TimeZone=UTC",
        }
        connect_args.update(kwargs.pop("connect_args", {}))
        try:
            return create_engine(parsed, pool_pre_ping=True, connect_args=connect_args, **kwargs)
        except NoSuchModuleError:
            raise ConfigError(
                f"ONDECK_DATABASE_URL: unsupported driver {parsed.drivername!r}"
            ) from None
    raise ConfigError(
        f"ONDECK_DATABASE_URL={shown(parsed.render_as_string(hide_password=False))!r}: "
        "only sqlite:/// and postgresql+psycopg:// URLs are supported"
    )


def _sqlite_engine(parsed: Any, **kwargs: Any) -> Engine:
    database = parsed.database
    path: Path | None = None
    if database and database != ":memory:" and not database.startswith("file:"):
        path = Path(database).expanduser()
        try:
            private.make_dirs(path.parent)
        except OSError as exc:
            raise ConfigError(
                f"ONDECK_DATABASE_URL: cannot create {path.parent}: {exc.strerror}"
            ) from None
        private.tighten_all(private.sqlite_files(path))
    engine = create_engine(
        parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}, **kwargs
    )

    if path is not None:
        database_file = path

        @event.listens_for(engine, "do_connect")
        def _private_file(*_args: Any) -> None:
            # Made here, 0600, before SQLite would make it 0644 under the usual umask: its
            # -wal and -shm files take the database file's mode.
            with contextlib.suppress(FileExistsError, OSError):
                private.create_file(database_file)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Hand transaction control to SQLAlchemy: pysqlite's own BEGIN comes too late.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()
        # The full-text triggers of migration 0004 call it (db/textpairs.py says why).
        textpairs.install(dbapi_connection)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        if conn.get_execution_options().get("readonly"):
            conn.exec_driver_sql("BEGIN")
        else:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def is_unavailable(exc: BaseException) -> bool:
    """Whether a database error means "cannot reach or lock the store" rather than a bug."""
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    if type(exc.orig).__module__.startswith("sqlite3"):
        # SQLite also reports "no such table" as OperationalError: that one is a bug. A file
        # that is not a database comes as DatabaseError: the store is unusable until mended.
        return isinstance(exc, DatabaseError) and unavailable(str(exc.orig))
    # A read-only standby, a missing privilege: the store refuses, whatever the statement.
    return isinstance(exc, OperationalError) or (
        exc.orig is not None and is_pg_store_refusal(exc.orig)
    )


def on_driver(conn: Connection, sql: str, params: dict[str, Any]) -> tuple[list[str], list[Any]]:
    """Run `sql` (in the driver's own parameter style) on `conn`'s driver connection, in its
    transaction: (column names, rows). Skips SQLAlchemy's per-call work (each parameter and
    value through its type, a result object described column by column), which costs the
    client more than the driver does for small statements; a driver error is handed back
    as SQLAlchemy's, as `conn.execute` would (a lost connection invalidated), so
    `translate_errors` and the pool see no difference."""
    driver = conn.connection.driver_connection
    cursor = driver.cursor()  # type: ignore[union-attr]  # set while checked out
    try:
        cursor.execute(sql, params)
        names = [d[0] for d in cursor.description] if cursor.description else []
        return names, cursor.fetchall() if names else []
    except conn.dialect.loaded_dbapi.Error as exc:
        lost = conn.dialect.is_disconnect(exc, driver, cursor)
        if lost:
            conn.invalidate(exc)
        raise DBAPIError.instance(
            sql,
            params,
            exc,
            conn.dialect.loaded_dbapi.Error,
            connection_invalidated=lost,
            dialect=conn.dialect,
        ) from exc
    finally:
        cursor.close()


@contextmanager
def translate_errors() -> Iterator[None]:
    """Turn "the store is unreachable or locked" into `Unavailable` (exit 5, HTTP 503)."""
    try:
        yield
    except DBAPIError as exc:
        if is_unavailable(exc):
            reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
            raise Unavailable(f"database unavailable: {reason}") from exc
        raise


@contextmanager
def reading(engine: Engine) -> Iterator[Connection]:
    """A read-only transaction (a plain deferred BEGIN on SQLite: it never blocks writers)."""
    with translate_errors(), engine.connect() as conn:
        conn = conn.execution_options(readonly=True)
        with conn.begin():
            yield conn


@contextmanager
def writing(engine: Engine) -> Iterator[Connection]:
    """A write transaction, committed at the end (BEGIN IMMEDIATE on SQLite)."""
    with translate_errors(), engine.begin() as conn:
        yield conn


@contextmanager
def autocommitting(engine: Engine) -> Iterator[Connection]:
    """A PostgreSQL connection on which every statement commits by itself.

    For a worker's loop of the lease holder's steps (`backlog.claim_next`, `claim_task`,
    `renew_lease`, `complete_task` with a token), which on PostgreSQL are one statement each
    (the change and its event together): each call is then one round trip instead of three
    (BEGIN, the statement, COMMIT). Anything else needs `writing`. SQLite is refused: there
    those services are several statements and need a transaction.
    """
    if engine.dialect.name != "postgresql":
        raise ValueError("autocommitting is for PostgreSQL; use writing() on SQLite")
    with translate_errors(), engine.connect() as conn:
        yield conn.execution_options(isolation_level="AUTOCOMMIT")


def describe(engine: Engine) -> str:
    return shown(engine.url.render_as_string(hide_password=False))
