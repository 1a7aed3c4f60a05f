"""`ondeck context`, the Claude Code hooks as real processes, and settings.json install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ondeck.core import clock
from ondeck.core.clock import UTC
from ondeck.core.models import TaskStatus
from ondeck.entrypoints.cli import run
from ondeck.entrypoints.hooks.claude_settings import install, uninstall
from ondeck.work import backlog, backlog_leases

ONDECK = str(Path(sys.executable).with_name("ondeck"))

# The stdin Claude Code gives its hooks (shapes from its hooks documentation).
SESSION_START = {
    "session_id": "7f1c2d3e-aaaa-bbbb-cccc-0123456789ab",
    "transcript_path": "/home/me/.claude/projects/-home-me-site/7f1c2d3e.jsonl",
    "cwd": "",
    "hook_event_name": "SessionStart",
    "source": "startup",
}
SESSION_END = {
    "session_id": "7f1c2d3e-aaaa-bbbb-cccc-0123456789ab",
    "transcript_path": "/home/me/.claude/projects/-home-me-site/7f1c2d3e.jsonl",
    "cwd": "",
    "hook_event_name": "SessionEnd",
    "reason": "prompt_input_exit",
}


def _hook(verb: str, payload: dict, db_url: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ONDECK, "hook", verb],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ONDECK_DATABASE_URL": db_url, "ONDECK_TZ": "UTC", **env},
        check=False,
    )


def test_session_start_prints_hook_json_scoped_to_the_git_project(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    repo = tmp_path / "site"
    (repo / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    with engine.begin() as conn:
        backlog.create_task(conn, clock.now(), title="site task", project="site", actor="cli")
        backlog.create_task(conn, clock.now(), title="shop task", project="shop", actor="cli")
    result = _hook("session-start", {**SESSION_START, "cwd": str(repo / "src")}, db_url)
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = output["hookSpecificOutput"]["additionalContext"]
    assert "project site" in context
    assert "site task" in context and "shop task" not in context


def test_session_start_never_fails_the_session_when_the_database_is_gone() -> None:
    result = _hook(
        "session-start", {**SESSION_START, "cwd": "/"}, "postgresql+psycopg://x@127.0.0.1:1/none"
    )
    assert result.returncode == 0
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "could not read its database" in context


def test_session_start_survives_garbage_on_stdin(db_url: str) -> None:
    result = subprocess.run(
        [ONDECK, "hook", "session-start"],
        input="not json{",
        capture_output=True,
        text=True,
        env={**os.environ, "ONDECK_DATABASE_URL": db_url},
        timeout=60,
        check=False,
    )
    assert result.returncode == 0
    assert "On deck" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def test_session_end_releases_what_that_session_held(engine: Engine, db_url: str) -> None:
    owner = f"claude:{SESSION_END['session_id']}"
    with engine.begin() as conn:
        mine = backlog.create_task(conn, clock.now(), title="mine", actor="cli")
        other = backlog.create_task(conn, clock.now(), title="other", actor="cli")
        backlog_leases.claim_task(conn, clock.now(), mine.id, owner=owner, actor="cli")
        backlog_leases.claim_task(conn, clock.now(), other.id, owner="claude:someone", actor="cli")
    result = _hook("session-end", SESSION_END, db_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "", "Claude Code reads no lease ids from a SessionEnd hook"
    with engine.connect() as conn:
        assert backlog.get_task(conn, mine.id).status is TaskStatus.READY
        assert backlog.get_task(conn, other.id).status is TaskStatus.RUNNING


def test_context_command_formats(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with engine.begin() as conn:
        backlog.create_task(
            conn,
            clock.now(),
            title="overdue",
            due_on=clock.today(clock.now(), UTC) - timedelta(days=2),
            actor="cli",
        )
    assert run(["--db", db_url, "context"]) == 0
    markdown = capsys.readouterr().out
    assert "## Due" in markdown and "overdue" in markdown and "2 days overdue" in markdown
    assert run(["--db", db_url, "context", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tasks"]["due"][0]["overdue_days"] == 2
    assert run(["--db", db_url, "context", "--format", "hook"]) == 0
    assert "hookSpecificOutput" in json.loads(capsys.readouterr().out)
    assert run(["--db", db_url, "context", "--project", "bad project!"]) == 2
    assert "project" in capsys.readouterr().err


def test_install_merges_and_uninstall_removes_exactly_ours(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    theirs = {
        "model": "opus",
        "permissions": {"allow": ["Bash(git status)"]},
        "hooks": {
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
            ],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}],
        },
    }
    path.write_text(json.dumps(theirs))
    changes = install(path, command="/opt/ondeck/bin/ondeck")
    assert len(changes) == 4
    data = json.loads(path.read_text())
    assert data["model"] == "opus" and data["permissions"] == theirs["permissions"]
    assert data["hooks"]["PreToolUse"] == theirs["hooks"]["PreToolUse"]
    assert data["hooks"]["SessionStart"][0] == theirs["hooks"]["SessionStart"][0]
    assert data["hooks"]["SessionStart"][1]["hooks"][0]["command"] == (
        "/opt/ondeck/bin/ondeck hook session-start"
    )
    end = data["hooks"]["SessionEnd"][0]["hooks"][0]
    assert end["command"].endswith("hook session-end")
    # Claude Code gives SessionEnd hooks 1.5 s unless a hook sets its own timeout.
    assert end["timeout"] >= 5
    stop = data["hooks"]["Stop"][0]["hooks"][0]
    assert stop == {
        "type": "command",
        "command": "/opt/ondeck/bin/ondeck hook stop",
        "async": True,
    }
    assert data["hooks"]["PostCompact"][0]["hooks"][0]["command"].endswith("hook post-compact")
    assert install(path, command="/opt/ondeck/bin/ondeck") == [], "installing twice adds nothing"
    assert len(uninstall(path)) == 4
    assert json.loads(path.read_text()) == theirs


def test_install_over_an_earlier_install_adds_what_it_lacks(tmp_path: Path) -> None:
    """An install of the version before (SessionStart and SessionEnd, no timeout) is brought
    up to date: the missing hooks added, SessionEnd given its timeout, nothing doubled."""
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    command = "/opt/ondeck/bin/ondeck"
    earlier = {
        "hooks": {
            event: [{"hooks": [{"type": "command", "command": f"{command} hook {verb}"}]}]
            for event, verb in (("SessionStart", "session-start"), ("SessionEnd", "session-end"))
        }
    }
    path.write_text(json.dumps(earlier))
    changes = install(path, command=command)
    assert sorted(c.split(":")[0] for c in changes) == [
        "added hooks.PostCompact",
        "added hooks.Stop",
        "updated hooks.SessionEnd",
    ]
    data = json.loads(path.read_text())
    assert [len(data["hooks"][e]) for e in ("SessionStart", "SessionEnd")] == [1, 1]
    assert data["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] >= 5
    assert len(uninstall(path)) == 4
    assert json.loads(path.read_text()) == {}


def test_install_refuses_a_broken_settings_file(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{not json")
    assert run(["hook", "install", "--project-dir", str(tmp_path)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert path.read_text() == "{not json"


@pytest.mark.slow
def test_session_start_asks_a_running_server_of_the_same_database(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    """Warm server, fast hook; a server on another database is never trusted."""
    from support.pg import free_port
    from support.served import serving

    with engine.begin() as conn:
        backlog.create_task(conn, clock.now(), title="from the server", actor="cli")
    port = free_port()
    env = {
        **os.environ,
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_TZ": "UTC",
        "ONDECK_PORT": str(port),
    }
    with serving(env, "--no-jobs", url=f"http://127.0.0.1:{port}"):
        same = _hook(
            "session-start", SESSION_START, db_url, ONDECK_PORT=str(port), ONDECK_DEBUG="1"
        )
        assert (
            "context from " in same.stderr and f"/run/server-{port}.sock" in same.stderr
        )  # the owner's socket, never the TCP port
        assert (
            "from the server" in json.loads(same.stdout)["hookSpecificOutput"]["additionalContext"]
        )
        other_db = f"sqlite:///{tmp_path / 'other.db'}"
        other = _hook(
            "session-start", SESSION_START, other_db, ONDECK_PORT=str(port), ONDECK_DEBUG="1"
        )
        assert "context from the database" in other.stderr
        assert "from the server" not in other.stdout
