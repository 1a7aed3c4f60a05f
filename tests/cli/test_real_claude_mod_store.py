"""The mod files a session into the hooks' database only (issue 36 item 5), with the real
Claude Code: this machine's server was started on another database (its own
ONDECK_DATABASE_URL) while Claude Code's hooks are set for the first, on the same owner
socket. The mod sends the id of the hooks' database (written by `ondeck setup claude-code`)
with each event; the server refuses them (409), the mod hands them to `ondeck hook`, and the
whole session is in the hooks' database, nothing of it in the server's; the status line says
the server serves another database, not that it is unreachable.

Without npm or its registry the test skips with the reason, unless ONDECK_REQUIRE_CLAUDE=1.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, select

from ondeck.db.tables import sessions
from support import claude
from support.pg import free_port
from support.served import ONDECK, start, stop

ANSWER = "끝: the mod's answer."


def rows(db_url: str) -> list[dict[str, Any]]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return [dict(r) for r in conn.execute(select(sessions)).mappings()]
    finally:
        engine.dispose()


def test_the_mod_files_nothing_into_a_server_serving_another_database(
    claude_bin: Path, tmp_path: Path
) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    (home / ".claude").mkdir(parents=True)
    hooks_db = f"sqlite:///{tmp_path / 'hooks.db'}"
    other_db = f"sqlite:///{tmp_path / 'other.db'}"
    port = free_port()
    env = claude.run_env(home, tmp_path, hooks_db, port)

    def ondeck(*args: str, given: dict[str, str] = env) -> str:
        done = subprocess.run(
            [ONDECK, *args], env=given, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    other = {**env, "ONDECK_DATABASE_URL": other_db}
    ondeck("db", "upgrade")
    ondeck("db", "upgrade", given=other)
    server = start(other, "--no-jobs", url=f"http://127.0.0.1:{port}", log=tmp_path / "serve.log")
    try:
        with claude.Messages("") as idle:
            said = ondeck("setup", "claude-code", "--claude", str(claude_bin),
                          given={**env, "ANTHROPIC_BASE_URL": idle.url})  # fmt: skip
        assert "plugin ondeck@ondeck installed" in said, said
        with claude.Messages(ANSWER) as api:
            done = subprocess.run(
                [str(claude_bin), "-p", "hi", "--output-format", "stream-json", "--verbose"],
                cwd=work,
                env={**env, "ANTHROPIC_BASE_URL": api.url},
                capture_output=True,
                text=True,
                timeout=300,
            )
    finally:
        stop(server)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    statuses = [str(x.get("text")) for x in lines
                if x.get("subtype") == "ui_status" and x.get("plugin") == "ondeck"]  # fmt: skip
    assert rows(other_db) == []  # nothing of the session in the server's database
    [row] = rows(hooks_db)
    assert (row["status"], row["last_word"]) == ("ended", ANSWER), row
    assert any("serves another database" in s for s in statuses), statuses
    assert not any("unreachable" in s for s in statuses), statuses
