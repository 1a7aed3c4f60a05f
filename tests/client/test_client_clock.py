"""A client whose clock is 13 hours behind the server's:
a real server, the client's hooks under libfaketime. Its live session stays open, is never
lost nor reopened, and the hook is told, with both instants. Both stores."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from support.hooks import ONDECK, payload
from support.machines import Machine, Server
from support.procs import faketime_lib

SESSION = "9c1c2d3e-5b6a-4c7d-8e9f-0123456789ab"


def behind(machine: Machine) -> dict[str, str]:
    """The machine's environment with its clock 13 hours behind (libfaketime, relative)."""
    return {**machine.env, "LD_PRELOAD": faketime_lib(), "FAKETIME": "-13h"}


def hook(env: dict[str, str], verb: str, data: dict[str, Any]) -> Any:
    done = subprocess.run(
        [ONDECK, "hook", verb],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def test_a_client_13_hours_behind_keeps_its_session_open_and_is_told(
    tmp_path: Path, db_url: str
) -> None:
    home = tmp_path / "server"
    with Server.start(home, database_url=db_url, session_grace="12h") as server:
        client_home = tmp_path / "laptop"
        (client_home / "site").mkdir(parents=True)
        client = server.client(client_home, server.token("laptop"))
        env = behind(client)
        place = str(client_home / "site")
        start = hook(env, "session-start", payload("start", session_id=SESSION, cwd=place))
        context = start["hookSpecificOutput"]["additionalContext"]
        assert "13 h 0 min behind the server's" in context, context
        for turn in ("첫 번째", "두 번째"):
            said = hook(
                env,
                "stop",
                payload("stop", session_id=SESSION, cwd=place, last_assistant_message=turn),
            )
            assert "behind the server's" in said["systemMessage"]
        done = server.ondeck("jobs", "--once")
        assert done.returncode == 0, done.stderr
        shown = server.json("session", "show", SESSION, "--json")
    assert (shown["status"], shown["presumed_lost"], shown["last_word"]) == (
        "open",
        False,
        "두 번째",
    )
    kinds = [e["kind"] for e in shown["history"]]
    assert "session.lost" not in kinds and "session.reopened" not in kinds
    skew = [e for e in shown["history"] if e["kind"] == "session.clock_skew"]
    assert skew and {"hook_clock", "server_clock"} <= set(skew[0]["details"])
