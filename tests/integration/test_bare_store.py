"""The bare drivers' connections (db/bare.py: the session hooks, which must not import
SQLAlchemy) behave as the engines' (db/engine.py): the same waits, pragmas, time zone and
error classes, so a hook and the server read and write the same database the same way."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from ondeck.db import bare
from ondeck.db import engine as engines
from ondeck.db.migrate import HEAD


def test_the_limits_are_the_engines() -> None:
    assert bare.SQLITE_BUSY_TIMEOUT_MS == engines.SQLITE_BUSY_TIMEOUT_MS
    assert bare.PG_CONNECT_TIMEOUT_S == engines.PG_CONNECT_TIMEOUT_S
    assert bare.SCHEMA_HEAD == HEAD


def _settings(db: bare.BareDb | bare.SqlaDb) -> dict[str, object]:
    if db.dialect == "sqlite":
        return {
            pragma: next(iter(db.run(f"PRAGMA {pragma}", {})[0].values()))
            for pragma in ("busy_timeout", "journal_mode", "synchronous", "foreign_keys")
        } | {"pairs": db.run("SELECT ondeck_pairs('ab') AS p", {})[0]["p"]}
    return {"TimeZone": db.run("SHOW TimeZone", {})[0]["TimeZone"]}


def test_a_bare_connection_is_set_up_as_the_engines_are(engine: Engine, db_url: str) -> None:
    found = bare.open_bare(db_url)
    assert found is not None
    try:
        with found.reading() as db:
            theirs = _settings(db)
            found.check_revision()
            now = db.run("SELECT CURRENT_TIMESTAMP AS now", {})[0]["now"]
        with engine.connect() as conn:
            ours = _settings(bare.SqlaDb(conn))
    finally:
        found.close()
    assert theirs == ours
    if found.dialect == "postgresql":
        assert now.utcoffset().total_seconds() == 0  # instants come back in UTC


def test_what_the_bare_path_does_not_handle_goes_to_sqlalchemy(tmp_path: Path) -> None:
    """A file that does not exist yet (SQLAlchemy creates and migrates it), an in-memory or
    URI-style SQLite database, another kind of URL: None, never a half-set-up connection."""
    assert bare.open_bare(f"sqlite:///{tmp_path / 'new.db'}") is None
    assert not (tmp_path / "new.db").exists()
    for url in ("sqlite:///:memory:", "sqlite:///file:x?mode=ro", "mysql://h/db"):
        assert bare.open_bare(url) is None


def test_a_schema_behind_is_told_apart_from_an_unreachable_store(
    engine: Engine, db_url: str
) -> None:
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0004'"))
    found = bare.open_bare(db_url)
    assert found is not None
    try:
        with pytest.raises(bare.SchemaBehind), found.reading():
            found.check_revision()
        with pytest.raises(bare.SchemaBehind), found.reading() as db:
            db.run("SELECT missing FROM no_such_table", {})
    finally:
        found.close()
