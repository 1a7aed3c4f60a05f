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


def test_a_file_that_is_not_a_database_is_unavailable_on_both_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A foreign or broken file where the database should be: every command says so in one
    line (exit 5, as for a store it cannot reach), and a hook keeps its event in the spool
    with that reason, for when the file is restored."""
    import json
    import os
    import subprocess
    import sys

    from ondeck.entrypoints.cli import run
    from support.pg import free_port

    path = tmp_path / "foreign.db"
    path.write_bytes(b"not SQLite at all\n" * 400)
    url = f"sqlite:///{path}"
    assert run(["--db", url, "task", "list"]) == 5
    err = capsys.readouterr().err.strip()
    assert err == "ondeck: error: database unavailable: file is not a database"
    with pytest.raises(bare.StoreUnavailable, match="not a database"):
        bare.open_bare(url)

    env = {
        **os.environ,
        "ONDECK_DATABASE_URL": url,
        "ONDECK_DATA_DIR": str(tmp_path / "data"),
        "ONDECK_PORT": str(free_port()),
    }
    for event in (
        {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "Stop",
         "last_assistant_message": "done"},
        {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "SessionEnd",
         "reason": "exit"},
    ):  # fmt: skip
        verb = "stop" if event["hook_event_name"] == "Stop" else "session-end"
        done = subprocess.run(
            [sys.executable, "-m", "ondeck", "hook", verb],
            input=json.dumps(event),
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        said = json.loads(done.stdout)["systemMessage"]
        # The second hook finds the first's event waiting: the reason is still the file's.
        assert "file is not a database" in said and "kept in the spool" in said, said
    spool = tmp_path / "data" / "spool"
    spooled = [
        line
        for name in ("draining.jsonl", "events.jsonl")
        if (spool / name).exists()
        for line in (spool / name).read_text().splitlines()
    ]
    # The stop, the end and the end's git changes (a hook no longer drains before it tries
    # its own event, so all three are in events.jsonl; before, a drain moved the first two).
    assert [json.loads(line)["kind"] for line in spooled] == ["stop", "end", "changes"]
    assert path.read_bytes() == b"not SQLite at all\n" * 400  # left as it was
