"""The real Codex CLI (npm, pinned in support/agents.py) with ondeck set up by `ondeck setup
codex --user`, one turn answered by a stand-in for the Responses API on loopback: the hooks
run ondeck's commands, the record appears (agent `codex`, classified, scrubbed, ended), and
the brief reaches the model as the SessionStart hook's additional context.

Codex runs a new hook only once a person trusted it in `/hooks`; this run passes
`--dangerously-bypass-hook-trust` instead (that decision is the person's, and setup never
writes it). One scenario for the module, on SQLite (the scenario costs some 20 s of ondeck
processes on a shared machine, a Codex turn itself under a second); the hook-level tests
(test_agent_hooks.py) run on both stores.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select

from ondeck.db.tables import events, sessions
from support import agents
from support.hooks import ONDECK, new_repo

SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
ANSWER = f"코덱스의 마지막 답: 끝났어요. The token was {SECRET} and that is all."
MARKER = "codex-brief-표식-7731"


@pytest.fixture(scope="module")
def codex_bin(request: pytest.FixtureRequest) -> Path:
    folder = Path(request.config.cache.mkdir("codex-cli"))
    found = agents.install(folder, agents.CODEX)
    if isinstance(found, str):
        if os.environ.get("ONDECK_REQUIRE_AGENTS") == "1":
            pytest.fail(found)
        pytest.skip(found)
    return found


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> str:
    path = tmp_path_factory.mktemp("codex-db") / "ondeck.db"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite:///{path}"


@pytest.fixture(scope="module")
def run(codex_bin: Path, tmp_path_factory: pytest.TempPathFactory, store: str) -> dict[str, Any]:
    """One `codex exec` turn; what it printed, what the API received, what ondeck stored."""
    root = tmp_path_factory.mktemp("codex")
    db_url = store
    work = new_repo(root / "codex-work")
    home = root / "codex-home"
    home.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root),
        "CODEX_HOME": str(home),
        "STANDIN_KEY": "dummy",
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_DATA_DIR": str(root / "data"),
        "ONDECK_CONFIG": str(root / "no-config.toml"),
        "ONDECK_TZ": "UTC",
        "ONDECK_PORT": "9",  # no server: the hooks store in the database
    }
    added = subprocess.run(
        [ONDECK, "task", "add", MARKER], cwd=work, env=env, capture_output=True, text=True
    )
    assert added.returncode == 0, added.stderr
    with agents.ModelApi(ANSWER) as api:
        (home / "config.toml").write_text(
            'model = "gpt-5"\nmodel_provider = "standin"\n\n'
            "[model_providers.standin]\n"
            f'name = "standin"\nbase_url = "{api.url}/v1"\nwire_api = "responses"\n'
            'env_key = "STANDIN_KEY"\n'
        )
        setup = subprocess.run(
            [ONDECK, "setup", "codex", "--user"], env=env, capture_output=True, text=True
        )
        turn = [str(codex_bin), "exec", "--skip-git-repo-check"]
        # Not yet trusted: Codex skips the hooks, without a word.
        untrusted = subprocess.run(
            [*turn, "say hi"],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        recorded_untrusted = _count(db_url)
        api.requests.clear()
        done = subprocess.run(
            [*turn, "--dangerously-bypass-hook-trust", "say hi"],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        bodies = api.bodies()
    # Codex's own reading of the MCP server setup wrote.
    servers = subprocess.run(
        [str(codex_bin), "mcp", "list", "--json"], env=env, capture_output=True, text=True
    )
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = [dict(r) for r in conn.execute(select(sessions)).mappings()]
            kinds = list(conn.scalars(select(events.c.kind).order_by(events.c.id)))
    finally:
        engine.dispose()
    listed = subprocess.run(
        [ONDECK, "session", "list", "--agent", "codex", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    others = subprocess.run(
        [ONDECK, "session", "list", "--agent", "claude-code", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    return {
        "setup": setup,
        "done": done,
        "bodies": bodies,
        "rows": rows,
        "kinds": kinds,
        "work": work,
        "home": home,
        "listed": listed,
        "others": others,
        "servers": servers,
        "untrusted": (untrusted, recorded_untrusted),
    }


def _count(db_url: str) -> int:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return len(list(conn.execute(select(sessions.c.id))))
    finally:
        engine.dispose()


def test_codex_runs_no_hook_a_person_has_not_trusted(run: dict[str, Any]) -> None:
    untrusted, recorded = run["untrusted"]
    assert untrusted.returncode == 0, untrusted.stderr[-2000:]
    assert "hook: SessionStart" not in untrusted.stderr
    assert recorded == 0


def test_setup_installs_the_hooks_and_the_mcp_server_for_codex(run: dict[str, Any]) -> None:
    assert run["setup"].returncode == 0, run["setup"].stderr
    assert "trust" in run["setup"].stdout  # the person is told Codex asks for trust
    config = (run["home"] / "config.toml").read_text()
    assert "[model_providers.standin]" in config  # the person's settings stay
    assert "[mcp_servers.ondeck]" in config
    hooks = json.loads((run["home"] / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "Stop", "PostCompact", "SessionEnd"}
    assert run["servers"].returncode == 0, run["servers"].stderr
    servers = {s["name"]: s for s in json.loads(run["servers"].stdout)}
    assert servers["ondeck"]["enabled"] is True
    assert servers["ondeck"]["transport"]["args"] == ["-I", "-m", "ondeck", "mcp"]


def test_a_codex_turn_runs_the_hooks(run: dict[str, Any]) -> None:
    done = run["done"]
    assert done.returncode == 0, done.stderr[-3000:]
    assert "코덱스의 마지막 답" in done.stdout
    # (Codex runs SessionEnd as it shuts down, unannounced: the record says it came.)
    for event in ("SessionStart", "Stop"):
        assert f"hook: {event} Completed" in done.stderr, done.stderr[-3000:]
    assert "hook: SessionStart Failed" not in done.stderr


def test_the_record_is_codex_s_classified_scrubbed_and_ended(run: dict[str, Any]) -> None:
    assert len(run["rows"]) == 1, run["rows"]
    row = run["rows"][0]
    assert row["agent"] == "codex"
    assert row["status"] == "ended"
    assert row["start_source"] == "startup"
    assert row["end_reason"] == "other"
    assert row["project"] == "codex-work"
    assert row["cwd"] == str(run["work"])
    assert row["branch"] == "main"
    assert "코덱스의 마지막 답" in row["last_word"]
    assert SECRET not in row["last_word"]
    assert row["redactions"] >= 1
    for kind in ("session.started", "session.last_word", "session.ended"):
        assert kind in run["kinds"]


def test_the_brief_reaches_the_model(run: dict[str, Any]) -> None:
    # The SessionStart hook's additionalContext is a developer message of the turn.
    assert any(MARKER in body for body in run["bodies"]), run["bodies"][:1]


def test_session_list_filters_by_agent(run: dict[str, Any]) -> None:
    assert run["listed"].returncode == 0, run["listed"].stderr
    listed = json.loads(run["listed"].stdout)
    assert [s["agent"] for s in listed] == ["codex"]
    assert json.loads(run["others"].stdout) == []
