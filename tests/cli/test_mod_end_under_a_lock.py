"""The mod's session end while SQLite is write-locked (a long import): the real server
writes the end in this machine's spool within the lock's wait and answers `spooled`, so the
mod hands it to no hook that would wait for the same lock again past Claude Code's budget
for a session end (issue 36 item 1); the jobs tick stores it once the lock is gone, with
what git says the session did."""

from __future__ import annotations

import json
import sqlite3
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from support.hooks import commit_file, new_repo
from support.machines import ADMIN_TOKEN, HomeServer

SESSION = "0f2b6a8e-1ock-4c1d-9a77-5d2f0e1c3b4a"


def mod_event(hook: str, cwd: Path, at: datetime, **fields: str) -> dict[str, Any]:
    """As the mod's `hookEvent` makes it (claude_plugin/hooks/words.ts)."""
    names = {"session-start": "SessionStart", "session-end": "SessionEnd"}
    when = at.isoformat()
    payload = {"session_id": SESSION, "cwd": str(cwd), "hook_event_name": names[hook],
               "event_at": when, **fields}  # fmt: skip
    return {"hook": hook, "payload": payload, "at": when, "transcript_size": -1}


def post(server: HomeServer, event: dict[str, Any]) -> dict[str, Any]:
    asked = urllib.request.Request(
        f"{server.url}/api/v1/sessions/hook-events",
        data=json.dumps({"events": [event]}).encode(),
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(asked, timeout=30) as answer:
        result: dict[str, Any] = json.loads(answer.read())["results"][0]
        return result


def spooled(spool: Path) -> list[str]:
    """The kinds of the records waiting in the spool."""
    if not spool.exists():
        return []
    return [json.loads(line)["kind"] for line in spool.read_text().splitlines() if line]


def test_the_mods_end_under_a_write_lock_is_spooled_by_the_server_then_stored(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    server = HomeServer(home)
    repo = new_repo(home / "사이트", commits=2)
    now = datetime.now(UTC)
    server.start()
    try:
        assert post(server, mod_event("session-start", repo, now, source="startup"))["outcome"] == (
            "applied"
        )
        commit_file(repo, "jobs.py", "x = 1\n", "작업 추가 (add jobs)")
        spool = home / ".local" / "share" / "ondeck" / "spool" / "events.jsonl"
        holder = sqlite3.connect(server.db_url.removeprefix("sqlite:///"), isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            began = time.monotonic()
            end = mod_event("session-end", repo, now + timedelta(seconds=5), reason="logout")
            answered = post(server, end)
            waited = time.monotonic() - began
            # The git changes, read after the answer, meet the lock too: it is held until
            # they are spooled (or long enough that they should have been).
            deadline = time.monotonic() + 30
            while len(spooled(spool)) < 2 and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            holder.close()
        assert answered["outcome"] == "spooled", answered
        # The lock's 5 s wait, then the spool: inside the 10 s the mod's end is given.
        assert waited < 8, waited
        kinds = spooled(spool)
        assert kinds == ["end", "changes"], kinds
        server.ondeck("jobs", "--once")  # the tick drains the spool
        s = server.get(f"/api/v1/sessions/{SESSION}")
    finally:
        server.stop()
    assert (s["status"], s["end_reason"]) == ("ended", "logout"), s
    assert s["commits"] is not None, s["git_note"]
    assert [c[1] for c in s["commits"]["items"]] == ["작업 추가 (add jobs)"], s
