"""The session hooks run at every agent session start and end and every turn: they must not
load the heavy parts of ondeck (web framework, MCP SDK, Typer and its console, Alembic) on
their way to an answer, nor SQLAlchemy or pydantic when they write to (or, session-start,
read its context from) a database that is there at the current revision themselves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from ondeck.db.engine import make_engine
from ondeck.db.tables import events
from support.pg import free_port

HEAVY = ("fastapi", "starlette", "mcp", "uvicorn", "typer", "click", "rich", "alembic")
LIGHT_HOOKS_SKIP = (*HEAVY, "sqlalchemy", "pydantic", "pydantic_settings")

# The real entry point (`ondeck hook session-start` is `ondeck.entrypoints.cli:main`), which
# ends the process with `os._exit`: report what was imported on the way out.
PROBE = """
import json, os, sys
real_exit = os._exit
def exit_reporting(code):
    loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set({watched!r}))
    sys.stderr.write("LOADED " + json.dumps(loaded) + "\\n")
    sys.stderr.flush()
    real_exit(code)
os._exit = exit_reporting
sys.argv = ["ondeck", "hook", {verb!r}]
from ondeck.entrypoints.cli import main
main()
"""


def _session_start(db_url: str, watched: tuple[str, ...], payload: dict[str, str]) -> str:
    """Run session-start on the database path; what it printed on stderr (LOADED …)."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(watched=watched, verb="session-start")],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        # A port nothing listens on: the hook takes the database path (the one that imports
        # the most), not a server that may happen to run on this machine.
        env={
            **os.environ,
            "ONDECK_DATABASE_URL": db_url,
            "ONDECK_PORT": str(free_port()),
            "ONDECK_DEBUG": "1",
        },
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "session context from the database" in result.stderr
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("# On deck"), context
    assert "unavailable" not in context, context
    return result.stderr


def test_session_start_reads_the_database_without_heavy_imports(db_url: str) -> None:
    payload = {"session_id": "s", "cwd": "/", "hook_event_name": "SessionStart"}
    stderr = _session_start(db_url, HEAVY, payload)
    loaded = [line for line in stderr.splitlines() if line.startswith("LOADED ")]
    assert loaded == ["LOADED []"], stderr


def test_session_start_records_and_reads_without_sqlalchemy_or_pydantic(db_url: str) -> None:
    """Once the database is there at the current revision, the start is recorded and the
    whole context (warnings, today's work, the brief) read through the bare driver."""
    first = {"session_id": "s1", "cwd": "/", "hook_event_name": "SessionStart"}
    _session_start(db_url, HEAVY, first)  # makes a new database's tables
    again = {"session_id": "s2", "cwd": "/", "hook_event_name": "SessionStart"}
    stderr = _session_start(db_url, LIGHT_HOOKS_SKIP, again)
    loaded = [line for line in stderr.splitlines() if line.startswith("LOADED ")]
    assert loaded == ["LOADED []"], stderr
    assert "start stored in the database" in stderr, stderr


def test_session_start_migrates_a_database_at_an_older_revision(db_url: str) -> None:
    """A schema behind is brought up to date by the SQLAlchemy path, and says nothing."""
    from sqlalchemy import text

    from ondeck.db.migrate import HEAD

    first = {"session_id": "s1", "cwd": "/", "hook_event_name": "SessionStart"}
    _session_start(db_url, HEAVY, first)
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '0004'"))
            conn.execute(text("DROP TABLE tokens"))  # what 0005 made
            conn.execute(text("DROP TABLE dashboard_sessions"))  # what 0009 made
            # What 0007 made (0006 changes PostgreSQL's indexes only, and remakes them).
            conn.execute(text("DROP INDEX ix_tasks_side_status"))
            for table in ("tasks", "schedules"):
                conn.execute(text(f"ALTER TABLE {table} DROP COLUMN side"))
            conn.execute(text("DROP TABLE store_identity"))  # what 0008 made
    finally:
        engine.dispose()
    again = {"session_id": "s2", "cwd": "/", "hook_event_name": "SessionStart"}
    stderr = _session_start(db_url, HEAVY, again)
    assert "schema behind: migrating it first" in stderr, stderr
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    finally:
        engine.dispose()
    assert version == HEAD


@pytest.mark.parametrize("verb", ["stop", "post-compact", "session-end"])
def test_the_other_hooks_write_the_database_without_sqlalchemy_or_pydantic(
    db_url: str, tmp_path: Path, verb: str
) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {
        **os.environ,
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_DATA_DIR": str(tmp_path / "data"),
        "ONDECK_PORT": str(free_port()),
    }
    # The session's start first (it makes a new database's tables; the others need them).
    start = {"session_id": "s", "cwd": str(repo), "hook_event_name": "SessionStart"}
    subprocess.run(
        [sys.executable, "-m", "ondeck", "hook", "session-start"],
        input=json.dumps(start),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    event = {"session_id": "s", "cwd": str(repo), "last_assistant_message": "done"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(watched=LIGHT_HOOKS_SKIP, verb=verb)],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "systemMessage" not in result.stdout, result.stdout
    loaded = [line for line in result.stderr.splitlines() if line.startswith("LOADED ")]
    assert loaded == ["LOADED []"], result.stderr
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            kinds = conn.execute(select(events.c.kind).order_by(events.c.id)).scalars().all()
    finally:
        engine.dispose()
    assert (
        kinds[-1]
        == {
            "stop": "session.last_word",
            "post-compact": "session.compacted",
            "session-end": "session.changes_read",
        }[verb]
    )


THIN_SKIP = (
    *LIGHT_HOOKS_SKIP,
    "psycopg",
    "sqlite3",
    "typing",
    "dataclasses",
    "pathlib",
    "subprocess",
    "logging",
    "contextlib",
    "hashlib",
    "encodings.idna",
    "ondeck.context.render",
    "ondeck.core.scrubber",
    "ondeck.sessions.classify",
)
PROBE_THIN = PROBE.replace('{{name.split(".")[0] for name in sys.modules}}', "set(sys.modules)")


@pytest.mark.slow
def test_with_a_server_the_hooks_only_send_what_they_received(db_url: str, tmp_path: Path) -> None:
    """The warm path costs a hook almost nothing: no database driver, no scrubber, no git,
    not even typing or pathlib; the server does the rest."""
    from support.served import serving

    port = free_port()
    env = {
        **os.environ,
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_DATA_DIR": str(tmp_path / "data"),
        "ONDECK_PORT": str(port),
        "ONDECK_DEBUG": "1",
    }
    with serving(env, "--no-jobs", url=f"http://127.0.0.1:{port}"):
        for verb in ("session-start", "stop", "post-compact", "session-end"):
            event = {"session_id": "s", "cwd": str(tmp_path)}
            text = {"stop": "last_assistant_message", "post-compact": "compact_summary"}
            if verb in text:
                event[text[verb]] = "x"
            result = subprocess.run(
                [sys.executable, "-c", PROBE_THIN.format(watched=THIN_SKIP, verb=verb)],
                input=json.dumps(event),
                capture_output=True,
                text=True,
                timeout=60,
                env=env,
                check=False,
            )
            assert result.returncode == 0, result.stderr
            sock = tmp_path / "data" / "run" / f"server-{port}.sock"  # never the TCP port
            assert f"stored through {sock}" in result.stderr, result.stderr
            loaded = [line for line in result.stderr.splitlines() if line.startswith("LOADED ")]
            # A text is scrubbed where it is captured, before it is sent, so the
            # hooks that carry one (stop, post-compact) load the scrubber; nothing else.
            expected = '["ondeck.core.scrubber"]' if verb in ("stop", "post-compact") else "[]"
            assert loaded == [f"LOADED {expected}"], result.stderr
