"""Schema versions: the database is brought to HEAD whenever ondeck opens one that is behind.

Checking is one SELECT on `alembic_version` (no Alembic import), because the CLI and the
session hook open the database on every run; Alembic loads only when there is work. Several
processes may open a new database at once: the upgrade runs under a lock (PostgreSQL
advisory lock, SQLite's write lock) and re-reads the version once it holds it.
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.exc import OperationalError, ProgrammingError

from ondeck.core.errors import SchemaUnknown
from ondeck.db.bare import SCHEMA_HEAD
from ondeck.db.engine import translate_errors

# Alembic's head (tests/integration/test_migrations.py): its home is db/bare.py, where the
# session hooks read it without SQLAlchemy.
HEAD = SCHEMA_HEAD

_PG_LOCK_KEY = 0x0DEC_0001

_checked: set[str] = set()
_lock = threading.Lock()


def revision_of(conn: Connection) -> str | None:
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def read_revision(engine: Engine) -> str | None:
    """The schema version, or None for an empty database: one SELECT, no reflection."""
    with translate_errors(), engine.connect().execution_options(readonly=True) as conn:
        try:
            return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
        except ProgrammingError:  # PostgreSQL: no such table
            return None
        except OperationalError as exc:  # SQLite: "no such table"
            if "no such table" in str(exc):
                return None
            raise


def _alembic_config(conn: Connection | None) -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", "ondeck:migrations")
    config.attributes["connection"] = conn
    return config


def upgrade(engine: Engine, revision: str = "head") -> tuple[str | None, str | None]:
    """Run the migrations up to `revision` in one transaction; returns (before, after)."""
    from alembic import command

    with translate_errors(), engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
        before = revision_of(conn)
        command.upgrade(_alembic_config(conn), revision)
        after = revision_of(conn)
    return before, after


def ensure_schema(engine: Engine) -> None:
    """Upgrade a database that is behind; one cheap read when it is current. A database
    written by a newer ondeck is refused (SchemaUnknown): this one cannot read it, and
    Alembic's own answer ("Can't locate revision") says nothing a user can act on."""
    key = str(engine.url)
    if key in _checked:
        return
    with _lock:
        if key in _checked:
            return
        revision = read_revision(engine)
        if revision != HEAD:
            if revision is not None and revision not in known_revisions():
                raise SchemaUnknown(unknown_revision("the database", revision))
            upgrade(engine)
        _checked.add(key)


def unknown_revision(what: str, revision: str) -> str:
    """Why a schema version this ondeck has no migration for is refused (a database, a
    backup): one sentence saying what to do."""
    return (
        f"{what} holds schema version {revision}, which this ondeck does not know (it knows "
        f"up to {HEAD}): it was written by a newer ondeck; upgrade ondeck"
    )


def alembic_head() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_alembic_config(None)).get_current_head()


def known_revisions() -> set[str]:
    """Every schema revision this ondeck has a migration for."""
    from alembic.script import ScriptDirectory

    directory = ScriptDirectory.from_config(_alembic_config(None))
    return {script.revision for script in directory.walk_revisions()}
