"""The real Claude Code's mod while SQLite is write-locked for the whole session (a long
import in another process), issue 36 item 1. The server writes each event it cannot store in
this machine's spool within the lock's wait and answers `spooled`, so no event is handed to
an `ondeck hook` that would wait for the same lock past Claude Code's budget for a session
end; once the lock is gone, a jobs tick stores the session whole: started, its last word,
ended with Claude Code's reason, never "lost". Before, the end was in neither the database
nor the spool. SQLite only: the lock is SQLite's (tests/cli/test_mod_end_under_a_lock.py
drives the same server route without Claude Code)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

from sqlalchemy import create_engine, select

from ondeck.db.tables import sessions
from support import claude
from support.pg import free_port
from support.served import ONDECK, start, stop

ANSWER = "잠긴 동안의 답: answered while the store was locked."


def test_the_mods_session_under_a_write_lock_is_stored_whole_once_it_is_gone(
    claude_bin: Path, tmp_path: Path
) -> None:
    home, work, data = tmp_path / "home", tmp_path / "작업", tmp_path / "data"
    work.mkdir()
    (home / ".claude").mkdir(parents=True)
    database = tmp_path / "ondeck.db"
    port = free_port()
    env = claude.run_env(home, tmp_path, f"sqlite:///{database}", port)

    def ondeck(*args: str, api: str = "http://127.0.0.1:9") -> str:
        given = {**env, "ANTHROPIC_BASE_URL": api}
        done = subprocess.run([ONDECK, *args], env=given, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    ondeck("db", "upgrade")
    server = start(env, "--no-jobs", url=f"http://127.0.0.1:{port}", log=tmp_path / "serve.log")
    try:
        with claude.Messages("") as idle:
            ondeck("setup", "claude-code", "--claude", str(claude_bin), api=idle.url)
        holder = sqlite3.connect(database, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")  # held for the whole session
        try:
            with claude.Messages(ANSWER) as api:
                done = subprocess.run(
                    [str(claude_bin), "-p", "안녕", "--output-format", "stream-json",
                     "--verbose", "--debug"],
                    cwd=work, env={**env, "ANTHROPIC_BASE_URL": api.url},
                    capture_output=True, text=True, timeout=300,
                )  # fmt: skip
        finally:
            holder.close()
        assert done.returncode == 0, done.stderr[-3000:]
        said = json.dumps(
            [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")],
            ensure_ascii=False,
        )
        session_id = json.loads(done.stdout.splitlines()[0])["session_id"]
        debug = "\n".join(
            p.read_text(errors="replace") for p in (home / ".claude" / "debug").glob("*.txt")
        )
        # No event went to a hook process: the server kept each one.
        assert "'ondeck', 'hook'" not in debug and '"hook",' not in debug, said[-2000:]
        spool = data / "spool" / "events.jsonl"
        kept = [json.loads(x)["kind"] for x in spool.read_text().splitlines() if x.strip()]
        assert "start" in kept and "end" in kept, kept  # the lock held: the server kept them
        ondeck("jobs", "--once")  # the tick drains the spool the server wrote
    finally:
        stop(server)
    engine = create_engine(f"sqlite:///{database}")
    try:
        with engine.connect() as conn:
            query = select(sessions).where(sessions.c.external_id == session_id)
            row = dict(conn.execute(query).mappings().one())
    finally:
        engine.dispose()
    assert row["status"] == "ended" and row["end_reason"] not in (None, "lost"), row
    assert row["last_word"] == ANSWER and row["cwd"] == os.path.realpath(work), row
