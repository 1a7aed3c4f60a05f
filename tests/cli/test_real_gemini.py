"""The real Gemini CLI (npm, pinned in support/agents.py) with ondeck set up by `ondeck setup
gemini --user`, one headless turn answered by a stand-in for the Gemini API on loopback
(GOOGLE_GEMINI_BASE_URL, an API key's auth type, a dummy key): `gemini mcp list` connects
to ondeck's MCP server, the hooks run ondeck's commands, the record appears (agent
`gemini-cli`, classified, scrubbed, ended), and the brief reaches the model (headless,
Gemini puts the SessionStart hook's additional context before the prompt).

One scenario for the module, on SQLite; the hook-level tests (test_agent_hooks.py) run on
both stores.
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

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
ANSWER = f"제미니의 마지막 답: 끝났어요. The token was {SECRET} and that is all."
MARKER = "gemini-brief-표식-5519"


@pytest.fixture(scope="module")
def gemini_bin(request: pytest.FixtureRequest) -> Path:
    folder = Path(request.config.cache.mkdir("gemini-cli"))
    found = agents.install(folder, agents.GEMINI)
    if isinstance(found, str):
        if os.environ.get("ONDECK_REQUIRE_AGENTS") == "1":
            pytest.fail(found)
        pytest.skip(found)
    return found


@pytest.fixture(scope="module")
def run(
    gemini_bin: Path, tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path
) -> dict[str, Any]:
    """One `gemini -p` turn; what it printed, what the API received, what ondeck stored."""
    root = tmp_path_factory.mktemp("gemini")
    shutil.copyfile(sqlite_template, root / "ondeck.db")
    db_url = f"sqlite:///{root / 'ondeck.db'}"
    work = new_repo(root / "gemini-work")
    home = root / "home"
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    # The person's own settings, which setup must keep: an API key's auth, no telemetry.
    settings.write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "privacy": {"usageStatisticsEnabled": False},
            }
        )
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "GEMINI_API_KEY": "dummy",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
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
    setup = subprocess.run(
        [ONDECK, "setup", "gemini", "--user"], env=env, capture_output=True, text=True
    )
    with agents.ModelApi(ANSWER) as api:
        done = subprocess.run(
            # A named model: "auto" would first ask the API to route the prompt.
            [str(gemini_bin), "-m", "gemini-2.5-flash", "-p", "say hi"],
            cwd=work,
            env={**env, "GOOGLE_GEMINI_BASE_URL": api.url},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        bodies = api.bodies()
    # Gemini starts the MCP server setup wrote and says whether it answered.
    servers = subprocess.run(
        [str(gemini_bin), "mcp", "list"],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = [dict(r) for r in conn.execute(select(sessions)).mappings()]
            kinds = list(conn.scalars(select(events.c.kind).order_by(events.c.id)))
    finally:
        engine.dispose()
    listed = subprocess.run(
        [ONDECK, "session", "list", "--agent", "gemini-cli", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    return {
        "setup": setup,
        "settings": json.loads(settings.read_text()),
        "done": done,
        "bodies": bodies,
        "rows": rows,
        "kinds": kinds,
        "work": work,
        "listed": listed,
        "servers": servers,
    }


def test_setup_installs_the_hooks_and_the_mcp_server_for_gemini(run: dict[str, Any]) -> None:
    assert run["setup"].returncode == 0, run["setup"].stderr
    settings = run["settings"]
    assert settings["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert set(settings["hooks"]) == {"SessionStart", "AfterAgent", "SessionEnd"}
    assert settings["mcpServers"]["ondeck"]["args"][-1] == "mcp"
    listed = run["servers"].stdout + run["servers"].stderr
    assert "ondeck:" in listed and "mcp (stdio) - Connected" in listed, listed


def test_a_gemini_turn_runs_the_hooks(run: dict[str, Any]) -> None:
    done = run["done"]
    assert done.returncode == 0, done.stderr[-3000:]
    assert "제미니의 마지막 답" in done.stdout


def test_the_record_is_gemini_s_classified_scrubbed_and_ended(run: dict[str, Any]) -> None:
    assert len(run["rows"]) == 1, run["rows"]
    row = run["rows"][0]
    assert row["agent"] == "gemini-cli"
    assert row["status"] == "ended"
    assert row["start_source"] == "startup"
    assert row["end_reason"] == "exit"
    assert row["project"] == "gemini-work"
    assert row["cwd"] == str(run["work"])
    assert "제미니의 마지막 답" in row["last_word"]
    assert SECRET not in row["last_word"]
    assert row["redactions"] >= 1
    for kind in ("session.started", "session.last_word", "session.ended"):
        assert kind in run["kinds"]


def test_the_brief_reaches_the_model(run: dict[str, Any]) -> None:
    assert any(MARKER in body for body in run["bodies"]), run["bodies"][:1]


def test_session_list_shows_the_gemini_session(run: dict[str, Any]) -> None:
    assert run["listed"].returncode == 0, run["listed"].stderr
    assert [s["agent"] for s in json.loads(run["listed"].stdout)] == ["gemini-cli"]
