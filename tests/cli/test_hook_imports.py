"""The session hook runs at every agent session start: it must not load the heavy parts of
ondeck (web framework, MCP SDK, Typer and its console, Alembic) on its way to an answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from support.pg import free_port

HEAVY = ("fastapi", "starlette", "mcp", "uvicorn", "typer", "click", "rich", "alembic")

# The real entry point (`ondeck hook session-start` is `ondeck.entrypoints.cli:main`), which
# ends the process with `os._exit`: report what was imported on the way out.
PROBE = f"""
import json, os, sys
real_exit = os._exit
def exit_reporting(code):
    loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY!r}))
    sys.stderr.write("LOADED " + json.dumps(loaded) + "\\n")
    sys.stderr.flush()
    real_exit(code)
os._exit = exit_reporting
sys.argv = ["ondeck", "hook", "session-start"]
from ondeck.entrypoints.cli import main
main()
"""


def test_session_start_reads_the_database_without_heavy_imports(db_url: str) -> None:
    payload = {"session_id": "s", "cwd": "/", "hook_event_name": "SessionStart"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
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
    loaded = [line for line in result.stderr.splitlines() if line.startswith("LOADED ")]
    assert loaded == ["LOADED []"], result.stderr
