"""Test fixtures. Every store test runs on SQLite and on PostgreSQL.

PostgreSQL: a throwaway cluster per test session (tests/support/pg.py), or the server at
`ONDECK_TEST_PG_URL`. Each test gets a database cloned from a migrated template, or the one
an earlier test of the process had, emptied to be as new (support/pg_reuse.py); each SQLite
test its own copy of a migrated file. Without PostgreSQL the variants skip with
the reason, unless `ONDECK_REQUIRE_PG=1`, which makes that a failure (CI sets it).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from ondeck.db.engine import make_engine
from ondeck.db.migrate import upgrade
from ondeck.host.settings import Settings, load_settings
from support import pg, pg_reuse

# A fixed instant the unit tests read time from: Monday 2026-06-15, 09:00 UTC.
NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
PG_TEMPLATE = "ondeck_template"


@pytest.fixture(autouse=True)
def _hermetic_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No test reads the developer's settings, config file or data directory."""
    for key in list(os.environ):
        if (
            key.startswith("ONDECK_")
            and not key.startswith("ONDECK_TEST_")
            and key != "ONDECK_REQUIRE_PG"
        ):
            monkeypatch.delenv(key)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("ONDECK_CONFIG", str(home / "no-config.toml"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))


# --- PostgreSQL -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    explicit = os.environ.get("ONDECK_TEST_PG_URL")
    if explicit:
        yield explicit
        return
    bindir = pg.find_bindir()
    if bindir is None:
        reason = "PostgreSQL server binaries not found (install the Debian package postgresql)"
        if os.environ.get("ONDECK_REQUIRE_PG") == "1":
            pytest.fail(f"ONDECK_REQUIRE_PG=1 but {reason}")
        pytest.skip(reason)
    cluster = pg.start_cluster(bindir)
    try:
        yield cluster.admin_url
    finally:
        cluster.stop()


def _admin(url: str) -> Engine:
    return create_engine(url, isolation_level="AUTOCOMMIT")


@pytest.fixture(scope="session")
def pg_template(pg_admin_url: str) -> Iterator[str]:
    admin = _admin(pg_admin_url)
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {PG_TEMPLATE}"))
        conn.execute(text(f"CREATE DATABASE {PG_TEMPLATE}"))
    url = make_url(pg_admin_url).set(database=PG_TEMPLATE).render_as_string(hide_password=False)
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    yield PG_TEMPLATE
    admin.dispose()


@pytest.fixture(scope="session")
def pg_databases(pg_admin_url: str, pg_template: str) -> Iterator[pg_reuse.Databases]:
    """This process's migrated databases, each emptied after a test for the next one."""
    databases = pg_reuse.Databases(admin_url=pg_admin_url, template=pg_template)
    try:
        yield databases
    finally:
        databases.close()


def new_pg_database(admin_url: str, template: str) -> str:
    name = f"t_{uuid.uuid4().hex[:16]}"
    admin = _admin(admin_url)
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name} TEMPLATE {template}"))
    admin.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(admin_url: str, url: str) -> None:
    name = make_url(url).database
    admin = _admin(admin_url)
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    admin.dispose()


def empty_database(
    dialect: str, tmp_path: Path, request: pytest.FixtureRequest, file: str = "empty.db"
) -> str:
    """The URL of a database with no schema at all on `dialect`'s store (not the migrated
    template: the migration tests build it themselves), dropped after the test."""
    if dialect == "postgresql":
        admin = request.getfixturevalue("pg_admin_url")
        url = new_pg_database(admin, "template0")
        request.addfinalizer(lambda: drop_pg_database(admin, url))
        return url
    path = tmp_path / file
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database (no schema at all): once on SQLite, once on PostgreSQL."""
    return empty_database(request.param, tmp_path, request)


# --- SQLite -----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "ondeck.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()  # the last connection to close checkpoints the WAL into the file
    assert not path.with_name("ondeck.db-wal").exists()
    return path


# --- Per test ---------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, migrated database: once on SQLite, once on PostgreSQL."""
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        path = tmp_path / "ondeck.db"
        shutil.copyfile(template, path)
        yield f"sqlite:///{path}"
        return
    databases: pg_reuse.Databases = request.getfixturevalue("pg_databases")
    url = databases.take()
    try:
        yield url
    finally:
        databases.give_back(url)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def second_engine(
    engine: Engine, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Engine]:
    """A second migrated, empty database on the same store as `engine` (a restored backup,
    another machine's database): what an import is tried into."""
    if engine.dialect.name == "postgresql":
        admin = request.getfixturevalue("pg_admin_url")
        url = new_pg_database(admin, request.getfixturevalue("pg_template"))
        other = make_engine(url)
        yield other
        other.dispose()
        drop_pg_database(admin, url)
        return
    path = tmp_path / "second.db"
    shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
    other = make_engine(f"sqlite:///{path}")
    yield other
    other.dispose()


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    return load_settings(
        database_url=db_url, tz="UTC", data_dir=tmp_path / "data", backup_dir=tmp_path / "backups"
    )


@pytest.fixture(autouse=True)
def _quiet_logging() -> Iterator[None]:
    """Commands run in-process install ondeck's stderr handler; each test starts without it."""
    import logging

    logger = logging.getLogger("ondeck")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    yield
    logger.handlers[:], logger.level, logger.propagate = saved
