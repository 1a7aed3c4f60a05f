"""A database written by the previous release, 0.1.0 (schema 0006), is upgraded by this one
with every row kept, on SQLite and PostgreSQL, and this release works on it.

The databases are fixtures that 0.1.0 itself wrote (tests/fixtures/release-0.1.0/make.py
runs that release's commands from git history: tasks, leases, schedules and their fires, a
jobs tick with its backup, a session's hooks, notes, a handoff, tokens): a SQLite file, and
a `pg_dump` of the PostgreSQL database, read back into an empty one here. Each row of every
table is read before the upgrade and again after it (`ondeck db upgrade`, the command a user
runs), column by column as the driver gives it.
"""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
import time_machine
from sqlalchemy import Engine, MetaData, create_engine, text
from sqlalchemy.engine import make_url

from conftest import empty_database
from ondeck.db.fulltext import is_fulltext
from ondeck.db.migrate import HEAD, read_revision
from ondeck.entrypoints.cli import run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "release-0.1.0"
KOREAN = "배포 준비 — 한국어와 English"

Rows = dict[str, list[tuple[Any, ...]]]


def _released_database(dialect: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if dialect == "sqlite":
        path = tmp_path / "ondeck.db"
        shutil.copyfile(FIXTURES / "ondeck-0.1.0.sqlite3", path)
        return f"sqlite:///{path}"
    url = empty_database(dialect, tmp_path, request)
    dump = (FIXTURES / "ondeck-0.1.0.pg.sql").read_text(encoding="utf-8")
    # pg_dump's session settings (an empty search_path) stay with this connection only.
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    # The driver itself, with no parameters: the dump's % are not placeholders, and its
    # session settings (an empty search_path) end with this connection.
    with psycopg.connect(plain) as conn:
        conn.execute(dump)
    return url


def _rows(engine: Engine, columns: dict[str, list[str]]) -> Rows:
    """Each table's rows as the driver gives them, in the order of their key."""
    found: Rows = {}
    with engine.connect() as conn:
        for table, names in columns.items():
            listed = ", ".join(names)
            found[table] = [
                tuple(row)
                for row in conn.execute(text(f"SELECT {listed} FROM {table} ORDER BY {names[0]}"))
            ]
    return found


def _columns(engine: Engine) -> dict[str, list[str]]:
    """The tables and their columns as they are in the database (the key first)."""
    reflected = MetaData()
    reflected.reflect(bind=engine, only=lambda name, _: not is_fulltext(name))
    columns: dict[str, list[str]] = {}
    for name, table in reflected.tables.items():
        if name == "alembic_version":
            continue
        keys = [c.name for c in table.primary_key.columns]
        columns[name] = keys + [c.name for c in table.columns if c.name not in keys]
    return columns


@pytest.fixture(params=["sqlite", "postgresql"])
def released(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return _released_database(request.param, tmp_path, request)


def test_a_database_of_0_1_0_is_upgraded_with_every_row_kept(
    released: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = create_engine(released)
    try:
        assert read_revision(engine) == "0006"
        before_columns = _columns(engine)
        assert {"tasks", "sessions", "notes", "tokens"} <= set(before_columns)
        before = _rows(engine, before_columns)
        empty = [t for t, rows in before.items() if not rows]
        assert not empty, f"the fixture has no rows in {empty}"
        with engine.connect() as conn:
            written = conn.execute(text("SELECT max(at) FROM events")).scalar_one()
    finally:
        engine.dispose()
    # The day the release wrote it, a little later: its leases and dates as they were.
    at = written if isinstance(written, datetime) else datetime.fromisoformat(written)
    now = at.replace(tzinfo=at.tzinfo or datetime.now().astimezone().tzinfo) + timedelta(hours=1)

    monkeypatch.setenv("ONDECK_TZ", "Asia/Seoul")
    monkeypatch.setenv("ONDECK_DATA_DIR", str(tmp_path / "data"))

    def ondeck(*args: str) -> str:
        with time_machine.travel(now, tick=False):
            code = run(["--db", released, *args])
        out, err = capsys.readouterr()
        assert code == 0, f"ondeck {' '.join(args)}: {code} {err}"
        return out

    ondeck("db", "upgrade")

    engine = create_engine(released)
    try:
        assert read_revision(engine) == HEAD
        after_columns = _columns(engine)
        for table, names in before_columns.items():
            gone = set(names) - set(after_columns[table])
            assert not gone, f"columns of {table} gone: {gone}"
        after = _rows(engine, before_columns)
    finally:
        engine.dispose()
    for table, rows in before.items():
        assert after[table] == rows, f"{table}: rows changed by the upgrade"

    # This release reads and writes it: the backlog, the context, recall, session records.
    listed = ondeck("task", "list", "--status", "all", "--json")
    assert KOREAN in listed and "Write the release notes" in listed
    assert KOREAN in ondeck("context")
    assert "금요일 배포 금지" in ondeck("recall", "배포", "--unclassified")
    assert "3f1c2d3e-5b6a-4c7d-8e9f-0123456789ab" in ondeck("session", "list", "--json")
    assert "added task 5" in ondeck("task", "add", "after the upgrade")
