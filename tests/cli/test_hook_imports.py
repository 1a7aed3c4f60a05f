"""The session hooks run at every agent session start and end and every turn: they must not
load the heavy parts of ondeck (web framework, MCP SDK, Typer and its console, Alembic) on
their way to an answer, nor SQLAlchemy or pydantic when they write to (or, session-start,
read its context from) a database that is there at the current revision themselves."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from ondeck.db.engine import make_engine
from ondeck.db.tables import events
from ondeck.entrypoints.hooks import fast_path
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
    from alembic import command
    from sqlalchemy import text

    from ondeck.db.migrate import HEAD, _alembic_config

    first = {"session_id": "s1", "cwd": "/", "hook_event_name": "SessionStart"}
    _session_start(db_url, HEAVY, first)
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            # 0012 by its own downgrade (it makes 0004's full-text machinery again).
            command.downgrade(_alembic_config(conn), "0011")
        with engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '0004'"))
            conn.execute(text("DROP TABLE tokens"))  # what 0005 made
            conn.execute(text("DROP TABLE dashboard_sessions"))  # what 0009 made
            # What 0007 made (0006 changes PostgreSQL's indexes only, and remakes them).
            conn.execute(text("DROP INDEX ix_tasks_side_status"))
            for table in ("tasks", "schedules"):
                conn.execute(text(f"ALTER TABLE {table} DROP COLUMN side"))
            conn.execute(text("DROP TABLE store_identity"))  # what 0008 made
            for column in ("imported", "imported_from", "agent_version", "transcript_path"):
                conn.execute(text(f"ALTER TABLE sessions DROP COLUMN {column}"))  # 0011
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


# --- the fast path's wall (entrypoints/hooks/fast_path.py) ---------------------------------

SRC = Path(fast_path.__file__).parents[2]

# The real entry point, reporting every ondeck module and every NEVER package it loaded.
PROBE_MODULES = """
import json, os, sys
real_exit = os._exit
def exit_reporting(code):
    names = [m for m in sys.modules if m.split(".")[0] in ("ondeck", *{never!r})]
    sys.stderr.write("MODULES " + json.dumps(sorted(names)) + "\\n")
    sys.stderr.flush()
    real_exit(code)
os._exit = exit_reporting
sys.argv = ["ondeck", "hook", *sys.argv[1:]]
from ondeck.entrypoints.cli import main
main()
"""

VERBS = ("session-start", "stop", "post-compact", "session-end")


def _loaded(
    env: dict[str, str], cwd: Path, verb: str, session: str, agent: tuple[str, ...] = ()
) -> set[str]:
    event = {
        "session_id": session,
        "cwd": str(cwd),
        "hook_event_name": verb,
        "last_assistant_message": "배포 끝",
        "compact_summary": "summary",
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE_MODULES.format(never=fast_path.NEVER), verb, *agent],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("MODULES ")]
    assert len(lines) == 1, result.stderr
    return set(json.loads(lines[0].removeprefix("MODULES ")))


def _outside(loaded: set[str], allowed: frozenset[str]) -> list[str]:
    return sorted(loaded - allowed)


def _module_path(name: str) -> Path:
    rel = Path(*name.split(".")[1:])
    package = SRC / rel / "__init__.py"
    return package if package.exists() else SRC / rel.with_suffix(".py")


def _import_time_imports(tree: ast.Module) -> list[tuple[str, int]]:
    """What a module imports when it is imported: its body and class bodies, `if` and `try`
    blocks included; not functions, and not `if TYPE_CHECKING:`."""
    found: list[tuple[str, int]] = []

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.extend((alias.name, node.lineno) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.append((node.module, node.lineno))
                found.extend((f"{node.module}.{a.name}", node.lineno) for a in node.names)
            elif isinstance(node, ast.If):
                if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                    walk(node.body)
                walk(node.orelse)
            elif isinstance(node, ast.Try):
                for part in (node.body, node.orelse, node.finalbody):
                    walk(part)
                for handler in node.handlers:
                    walk(handler.body)
            elif isinstance(node, ast.ClassDef):
                walk(node.body)

    walk(tree.body)
    return found


def wall_breaches(modules: frozenset[str], src: Path = SRC) -> list[str]:
    """Each import a listed module makes at import time of a module that is neither in the
    standard library nor listed."""
    wrong = []
    for name in sorted(modules):
        rel = Path(*name.split(".")[1:])
        path = src / rel / "__init__.py"
        if not path.exists():
            path = src / rel.with_suffix(".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for target, line in _import_time_imports(tree):
            top = target.split(".")[0]
            if top == "ondeck":
                is_module = (src / Path(*target.split(".")[1:])).with_suffix(".py").exists()
                is_package = (src / Path(*target.split(".")[1:]) / "__init__.py").exists()
                if (is_module or is_package or target == "ondeck") and target not in modules:
                    wrong.append(f"{name}:{line} imports {target}")
            elif top not in sys.stdlib_module_names and top != "__future__":
                wrong.append(f"{name}:{line} imports {target}")
    return wrong


def test_every_module_on_the_fast_path_exists() -> None:
    missing = [m for m in sorted(fast_path.MODULES) if not _module_path(m).exists()]
    assert not missing, f"listed on the fast path but not in the tree: {missing}"


def test_a_module_on_the_fast_path_imports_only_the_standard_library_and_the_path() -> None:
    breaches = wall_breaches(fast_path.MODULES)
    assert not breaches, "imports through the fast path's wall:\n" + "\n".join(breaches)


def test_the_wall_check_finds_a_planted_import(tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "ondeck"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    planted = copy / "sessions" / "capture" / "spool.py"
    text = planted.read_text(encoding="utf-8")
    planted.write_text(
        text + "\ntry:\n    import sqlalchemy\nexcept ImportError:\n    pass\n"
        "if TYPE_CHECKING:\n    import pydantic\n"
        "from ondeck.work import backlog\n",
        encoding="utf-8",
    )
    breaches = wall_breaches(fast_path.MODULES, copy)
    assert any("capture.spool" in b and "imports sqlalchemy" in b for b in breaches), breaches
    assert any("imports ondeck.work.backlog" in b for b in breaches), breaches
    assert not any("pydantic" in b for b in breaches), breaches


@pytest.mark.slow
def test_each_hook_loads_only_its_paths_modules(db_url: str, tmp_path: Path) -> None:
    """Every verb on every path (the database at its revision, this machine's server, client
    mode, and client mode with the server gone: the spool) loads only what the fast path
    lists for it, and nothing of NEVER."""
    import time
    import urllib.error
    import urllib.request

    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith("ONDECK_")}
    base.update(HOME=str(tmp_path / "home"), ONDECK_TZ="UTC")
    found: dict[str, list[str]] = {}

    database = {
        **base,
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_DATA_DIR": str(tmp_path / "data"),
        "ONDECK_PORT": str(free_port()),
    }
    _loaded(database, repo, "session-start", "s0")  # makes the tables: the slow way, once
    for verb in VERBS:
        found[f"database {verb}"] = _outside(
            _loaded(database, repo, verb, "s1"), fast_path.DATABASE
        )

    port = free_port()
    admin = "admin-token-of-the-server-0123456789"
    serving = {**database, "ONDECK_PORT": str(port), "ONDECK_TOKEN": admin}
    ondeck = str(Path(sys.executable).with_name("ondeck"))
    server = subprocess.Popen(
        [ondeck, "serve", "--no-jobs"], env=serving, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=1)
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                time.sleep(0.1)
        for verb in VERBS:
            found[f"server {verb}"] = _outside(_loaded(serving, repo, verb, "s2"), fast_path.SERVER)
        made = subprocess.run(
            [ondeck, "token", "create", "laptop", "--json"],
            env=serving,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        client = {
            **base,
            "HOME": str(tmp_path / "laptop"),
            "ONDECK_SERVER_URL": f"http://127.0.0.1:{port}",
            "ONDECK_TOKEN": json.loads(made.stdout)["token"],
        }
        for verb in VERBS:
            found[f"client {verb}"] = _outside(_loaded(client, repo, verb, "s3"), fast_path.CLIENT)
    finally:
        server.terminate()
        server.wait(timeout=30)
    for verb in VERBS:  # the server gone: each event goes to the laptop's spool
        found[f"spooled {verb}"] = _outside(
            _loaded(client, repo, verb, "s4"), fast_path.CLIENT_ALONE
        )
    outside = {where: names for where, names in found.items() if names}
    assert not outside, f"loaded outside the fast path: {outside}"


def test_another_agent_s_hook_loads_no_more_than_claude_code_s(db_url: str, tmp_path: Path) -> None:
    """`ondeck hook VERB --agent codex|gemini-cli` on the database path: the modules of the
    same verb for Claude Code, and nothing more (sessions/capture/agents is on every path)."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONDECK_")}
    env.update(
        HOME=str(tmp_path / "home"),
        ONDECK_TZ="UTC",
        ONDECK_DATABASE_URL=db_url,
        ONDECK_DATA_DIR=str(tmp_path / "data"),
        ONDECK_PORT=str(free_port()),
    )
    _loaded(env, repo, "session-start", "s0")  # makes the tables: the slow way, once
    more = {}
    for verb in VERBS:
        claude = _loaded(env, repo, verb, "s1")
        for agent in ("codex", "gemini-cli"):
            loaded = _loaded(env, repo, verb, f"s-{agent}", ("--agent", agent))
            if loaded - claude:
                more[f"{agent} {verb}"] = sorted(loaded - claude)
    assert not more, f"loaded beyond Claude Code's hook: {more}"
