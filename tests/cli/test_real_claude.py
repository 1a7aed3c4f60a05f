"""The real Claude Code (npm, pinned in support/claude.py) with ondeck's hooks installed as
`ondeck setup claude-code` installs them, a turn answered by a stand-in for the Messages API:
the session record keeps the last turn's answer, although Claude Code cancels the
backgrounded Stop hook when `claude -p` ends ("Hook Stop (Stop) cancelled"). Both stores.

Claude Code is installed once per test run into pytest's cache folder; without npm or its
registry the tests skip with the reason, unless ONDECK_REQUIRE_CLAUDE=1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from ondeck.db.tables import events, sessions
from ondeck.entrypoints.hooks.claude_settings import install as install_hooks
from support import claude
from support.hooks import ONDECK
from support.pg import free_port

ANSWER = "마지막 답: 테스트는 끝났어요. The last word of the run."


class Run:
    """One Claude Code home (settings with ondeck's hooks), working directory and store."""

    def __init__(self, tmp_path: Path, db_url: str, api: claude.Messages) -> None:
        self.home = tmp_path / "home"
        self.work = tmp_path / "work"
        self.work.mkdir(parents=True)
        install_hooks(self.home / ".claude" / "settings.json", command=ONDECK)
        self.db_url = db_url
        # No server: the hooks store in the database.
        self.env = claude.run_env(
            self.home, tmp_path, db_url, free_port(), ANTHROPIC_BASE_URL=api.url
        )

    def debug_log(self) -> str:
        folder = self.home / ".claude" / "debug"
        return "\n".join(p.read_text() for p in sorted(folder.glob("*.txt")))

    def session(self) -> dict[str, object] | None:
        engine = create_engine(self.db_url)
        try:
            with engine.connect() as conn:
                row = conn.execute(select(sessions)).mappings().first()
                return dict(row) if row else None
        finally:
            engine.dispose()

    def kinds(self) -> list[str]:
        engine = create_engine(self.db_url)
        try:
            with engine.connect() as conn:
                return list(conn.scalars(select(events.c.kind).order_by(events.c.id)))
        finally:
            engine.dispose()


def wait_for(check: Callable[[], object], seconds: float) -> object:
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_a_headless_run_keeps_its_last_answer(
    claude_bin: Path, tmp_path: Path, db_url: str
) -> None:
    with claude.Messages(ANSWER) as api:
        run = Run(tmp_path, db_url, api)
        done = subprocess.run(
            [str(claude_bin), "-p", "hi", "--debug", "hooks"],
            cwd=run.work,
            env=run.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert ANSWER in done.stdout
    assert any(r["path"].startswith("/v1/messages") for r in api.requests)
    log = run.debug_log()
    assert "hook session-end" in log, log[-3000:]
    # Each hook printed only keys Claude Code reads (it logs the others as ignored).
    assert "unrecognized keys" not in log.lower(), log[-3000:]
    # What the test is about, when this version still does it: the Stop never ran.
    print("Stop cancelled by Claude Code:", "Hook Stop (Stop) cancelled" in log)
    # A Stop that was not cancelled may still be finishing in the background.
    row = wait_for(lambda: (s := run.session()) and s["last_word"] and s, 20)
    assert isinstance(row, dict), run.session()
    assert row["status"] == "ended"
    assert row["last_word"] == ANSWER
    assert run.kinds().count("session.last_word") == 1
    # The transcript Claude Code named is kept for the jobs tick
    # (sessions/capture/transcript_tail.py).
    kept = row["transcript_path"]
    assert kept and kept.startswith(os.path.realpath(run.home / ".claude" / "projects")), kept
    assert kept.endswith(".jsonl") and Path(kept).is_file()


def _tmux(*args: str) -> str:
    done = subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=30)
    return done.stdout


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_an_interactive_session_closed_within_a_second_keeps_its_last_answer(
    claude_bin: Path, tmp_path: Path, db_url: str
) -> None:
    with claude.Messages(ANSWER) as api:
        run = Run(tmp_path, db_url, api)
        # Past the first run's questions: onboarding done, this folder trusted, the key
        # approved (Claude Code keeps the last 20 characters of approved keys).
        (run.home / ".claude.json").write_text(
            json.dumps(
                {
                    "hasCompletedOnboarding": True,
                    "theme": "dark",
                    "customApiKeyResponses": {"approved": ["dummy"], "rejected": []},
                    "projects": {
                        str(run.work): {
                            "hasTrustDialogAccepted": True,
                            "hasCompletedProjectOnboarding": True,
                        }
                    },
                }
            )
        )
        socket = str(tmp_path / "tmux.sock")
        env_args = [f"{k}={v}" for k, v in run.env.items()]
        command = ["env", "-i", *env_args, str(claude_bin), "--debug", "hooks"]
        _tmux("-S", socket, "new-session", "-d", "-x", "160", "-y", "50", "-c", str(run.work),
              *command)  # fmt: skip
        try:
            screen = lambda: _tmux("-S", socket, "capture-pane", "-p")  # noqa: E731
            assert wait_for(lambda: "❯" in screen(), 120), screen()
            time.sleep(3)  # the prompt is drawn before it takes keys
            _tmux("-S", socket, "send-keys", "-l", "hi")
            time.sleep(0.5)
            _tmux("-S", socket, "send-keys", "Enter")
            assert wait_for(lambda: "The last word of the run" in screen(), 120), screen()
            time.sleep(0.3)
            _tmux("-S", socket, "send-keys", "C-c")
            time.sleep(0.2)
            _tmux("-S", socket, "send-keys", "C-c")
            row = wait_for(lambda: (s := run.session()) and s["status"] == "ended" and s, 60)
        finally:
            _tmux("-S", socket, "kill-server")
    assert isinstance(row, dict), (run.session(), run.debug_log()[-3000:])
    row = wait_for(lambda: (s := run.session()) and s["last_word"] and s, 20) or row
    assert isinstance(row, dict)
    assert row["last_word"] == ANSWER
    assert run.kinds().count("session.last_word") == 1
