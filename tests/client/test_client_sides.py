"""Sides the server does not know: a client whose sides are `work` while
the server's are `job, home`, and a client with no sides at all. Their sessions wait in the
server's inbox (and their handoffs with them), and both machines are told: the hook in the
session's context and messages, the server in its context's inbox warning. Real server
processes, both stores."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.hooks import ONDECK, payload
from support.machines import Machine, Server

SERVER_SIDES = """
[sides]
job = ["~/job"]
home = ["~/home"]
"""
CLIENT_SIDES = """
[projects]
"~/work/site" = "site"

[sides]
work = ["~/work"]
"""
SESSION = "7b1c2d3e-5b6a-4c7d-8e9f-0123456789ab"


def configured(home: Path, text: str | None) -> None:
    folder = home / ".config" / "ondeck"
    folder.mkdir(parents=True, exist_ok=True)
    if text is not None:
        (folder / "config.toml").write_text(text)
    (home / "work" / "site").mkdir(parents=True, exist_ok=True)


@pytest.fixture
def server(tmp_path: Path, db_url: str):  # type: ignore[no-untyped-def]
    home = tmp_path / "server"
    configured(home, SERVER_SIDES)
    with Server.start(home, database_url=db_url) as running:
        yield running


def laptop(server: Server, tmp_path: Path, config: str | None) -> Machine:
    home = tmp_path / "laptop"
    configured(home, config)
    return server.client(home, server.token("laptop"))


def run_hook(verb: str, data: dict[str, Any], machine: Machine) -> Any:
    """A hook as Claude Code runs it on `machine` (its environment alone: its config file)."""
    return subprocess.run(
        [ONDECK, "hook", verb],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        timeout=60,
        env=machine.env,
        check=False,
    )


def inbox(server: Server) -> list[dict[str, object]]:
    found = server.json("session", "list", "--status", "unclassified", "--json")
    assert isinstance(found, list)
    return found


@pytest.mark.parametrize(
    ("config", "said"),
    [
        (CLIENT_SIDES, "side 'work' (project 'site') is not one of this server's sides: home, job"),
        (None, "the hook gave this session no side, and this server's sides are home, job"),
    ],
    ids=["sides-work", "no-sides"],
)
def test_a_side_the_server_does_not_know_waits_in_its_inbox_and_both_are_told(
    server: Server, tmp_path: Path, config: str | None, said: str
) -> None:
    client = laptop(server, tmp_path, config)
    place = str(client.home / "work" / "site")
    start = run_hook("session-start", payload("start", session_id=SESSION, cwd=place), client)
    assert start.returncode == 0, start.stderr
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert said in context, context
    assert "This session is unclassified" in context
    stop = run_hook(
        "stop",
        payload("stop", session_id=SESSION, cwd=place, last_assistant_message="끝났어요"),
        client,
    )
    assert stop.returncode == 0, stop.stderr
    assert said in json.loads(stop.stdout)["systemMessage"]
    # The server: in its inbox, with the reason, and said in its context.
    [waiting] = inbox(server)
    assert waiting["external_id"] == SESSION
    assert (waiting["side"], waiting["project"], waiting["unclassified"]) == (None, None, True)
    shown = server.json("session", "show", SESSION, "--json")
    assert shown["classification"]["reason"] == said
    assert shown["last_word"] == "끝났어요"
    warnings = server.json("context", "--format", "json", "--side", "job")["warnings"]
    assert any(w["code"] == "sessions_unclassified" for w in warnings)
    # Its handoff waits with it (no side, no project), and follows it when it is moved.
    written = client.json("handoff", "다음: 사이드 정리", "--session", SESSION, "--json")
    assert (written["side"], written["project"]) == (None, None)
    moved = server.json("session", "move", SESSION, "--side", "job", "--json")
    assert moved["side"] == "job", moved
    note = server.json("note", "show", str(written["id"]), "--side", "job", "--json")
    assert note["side"] == "job"
