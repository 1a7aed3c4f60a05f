"""Connections of the bare drivers (`sqlite3`, `psycopg`) with the settings ondeck's engines
give theirs (db/engine.py), for the session hooks' writes (sessions/rows.py) and
session-start's context (context/build.py), which must not pay for importing
SQLAlchemy. `tests/integration/test_bare_store.py` holds the two sets of settings together.

`open_bare` answers None for anything it does not handle the way `make_engine` does (an
unusual URL, a SQLite file that does not exist yet): the caller then takes the SQLAlchemy
path, which also creates and migrates a new database.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ondeck.db import gate

# The schema version the code expects (Alembic's head; db/migrate.py takes it from here and
# tests/integration/test_migrations.py holds it to Alembic's).
SCHEMA_HEAD = "0014"
SQLITE_BUSY_TIMEOUT_MS = 5_000  # = db.engine.SQLITE_BUSY_TIMEOUT_MS
PG_CONNECT_TIMEOUT_S = 5  # = db.engine.PG_CONNECT_TIMEOUT_S


class StoreUnavailable(Exception):
    """The database cannot be reached or locked right now."""


class RecordRefused(Exception):
    """The store refuses the record for what it holds (db/refusals.py): set it aside."""


class SchemaBehind(Exception):
    """The database lacks a table or column a statement reads (its revision is behind): the
    SQLAlchemy path migrates it first."""


class BareDb:
    """A `plain.Db` over a DB-API connection, one transaction at a time."""

    def __init__(self, connection: Any, dialect: str) -> None:
        self.connection = connection
        self.dialect = dialect

    def run(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        cursor = self.connection.cursor()
        try:
            cursor.execute(sql, gate.bind(sql, params))
            if cursor.description is None:
                return []
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        finally:
            cursor.close()

    @contextmanager
    def transaction(self) -> Iterator[BareDb]:
        """A write transaction (BEGIN IMMEDIATE on SQLite, as the engines take), committed at
        the end; a driver error comes out as StoreUnavailable or SchemaBehind when it is one.

        Nothing is written unless the schema is at SCHEMA_HEAD, read inside the transaction
        (SQLite's write lock, taken, keeps a migration out until it ends): a database at
        another revision raises SchemaBehind, and the SQLAlchemy path migrates one that is
        behind or refuses one a newer ondeck migrated (SchemaUnknown), so an older
        release's hook never writes into a newer schema; its record waits in the spool."""
        with translate(self.dialect):
            if self.dialect == "sqlite":
                self.connection.execute("BEGIN IMMEDIATE")
            try:
                self.check_revision()
                yield self
            except BaseException:
                self.connection.rollback()
                raise
            self.connection.commit()

    @contextmanager
    def reading(self) -> Iterator[BareDb]:
        """A read transaction (a deferred BEGIN on SQLite, as `engine.reading`: it never
        blocks writers), rolled back at the end; driver errors translated as above."""
        with translate(self.dialect):
            if self.dialect == "sqlite":
                self.connection.execute("BEGIN")
            try:
                yield self
            finally:
                self.connection.rollback()

    def check_revision(self) -> None:
        """SchemaBehind unless the schema is at SCHEMA_HEAD: a database at an older revision
        may have every table a statement reads and still miss what a migration changed, so
        the reader takes the SQLAlchemy path, which migrates it first."""
        with translate(self.dialect):
            found = self.run("SELECT version_num FROM alembic_version", {})
        if not found or found[0]["version_num"] != SCHEMA_HEAD:
            raise SchemaBehind(f"schema at {found[0]['version_num'] if found else None}")

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing what failed must not hide why
            self.connection.close()


@contextmanager
def translate(dialect: str) -> Iterator[None]:
    """Driver errors as the three cases a hook treats apart: the store refuses (unreachable,
    read-only, ...), the record is refused for its content, the schema is behind."""
    try:
        yield
    except Exception as exc:
        problem = _classify(dialect, exc)
        if problem is not None:
            raise problem from exc
        raise


def _classify(dialect: str, exc: Exception) -> Exception | None:
    from ondeck.db.refusals import is_content

    message = " ".join(str(exc).split())[:300] or type(exc).__name__
    if dialect == "sqlite":
        import sqlite3

        if not isinstance(exc, sqlite3.DatabaseError):  # OperationalError is one too
            return None
        lowered = message.lower()
        # An INSERT naming a column a migration adds says "has no column named".
        behind = ("no such table", "no such column", "has no column named")
        if any(words in lowered for words in behind):
            return SchemaBehind(message)
        if is_content(exc):
            return RecordRefused(message)
        # Locked, read-only, full, not a database, or anything else SQLite refuses: the
        # event waits in the spool with the reason (db/refusals.py says why).
        return StoreUnavailable(message)
    import psycopg

    if isinstance(exc, psycopg.errors.UndefinedTable | psycopg.errors.UndefinedColumn):
        return SchemaBehind(message)
    if not isinstance(exc, psycopg.Error):
        return None
    if is_content(exc):
        return RecordRefused(message)
    return StoreUnavailable(message)


def open_bare(url: str) -> BareDb | None:
    """A bare connection to the database at `url`, or None (take the SQLAlchemy path)."""
    if url.startswith("sqlite:///"):
        return _sqlite(url.removeprefix("sqlite:///"))
    for scheme in ("postgresql+psycopg://", "postgresql://"):
        if url.startswith(scheme):
            return _postgres("postgresql://" + url.removeprefix(scheme))
    return None


def _sqlite(database: str) -> BareDb | None:
    import sqlite3

    if not database or "?" in database or database.startswith("file:") or database == ":memory:":
        return None
    path = os.path.expanduser(database)
    if not os.path.isfile(path):
        return None  # a new database: the SQLAlchemy path creates and migrates it
    from ondeck.host import private

    private.tighten_all(private.sqlite_files(path))
    with translate("sqlite"):
        connection = sqlite3.connect(
            path, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000, isolation_level=None
        )
        connection.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        # The file is already in WAL mode (the engine that created it set it: it persists).
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA foreign_keys = ON")
        from ondeck.db import textpairs  # the full-text triggers of migration 0004 call it

        textpairs.install(connection)
    return BareDb(connection, "sqlite")


def _postgres(conninfo: str) -> BareDb:
    import psycopg

    with translate("postgresql"):
        connection = psycopg.connect(
            conninfo,
            connect_timeout=PG_CONNECT_TIMEOUT_S,
            application_name="ondeck",
            # Instants come back in UTC, as the engines' connections give them.
            options="-c TimeZone=UTC",
        )
    return BareDb(connection, "postgresql")


class SqlaDb:
    """A `plain.Db` over a SQLAlchemy connection, in the caller's transaction."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.dialect = conn.dialect.name

    def run(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        from ondeck.db.engine import on_driver

        if not self.conn.in_transaction():
            # As the first `conn.execute` would: SQLite's BEGIN is emitted there (db/engine.py).
            self.conn.begin()
        names, rows = on_driver(self.conn, sql, gate.bind(sql, params))
        return [dict(zip(names, row, strict=True)) for row in rows]
