"""What the Claude Code mod asks of the server (entrypoints/api/sessions.py, context.py): its
events without rules are classified by the server's own settings and a resend is the same
event; its status line counts what is due, today's reminders and this session's lease, and
warns when the jobs loop is silent. Both stores; Korean titles."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from conftest import NOW
from ondeck.core.session_terms import session_owner
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings
from support.hooks import new_repo

API = "/api/v1"
SESSION = "0f2b6a8e-mod0-4c1d-9a77-5d2f0e1c3b4a"
LOCAL = ("127.0.0.1", 50000)


def mod_event(hook: str, cwd: Path, at: str, **fields: str) -> dict[str, object]:
    """As the mod's `hookEvent` makes it (claude_plugin/hooks/words.ts)."""
    names = {"session-start": "SessionStart", "stop": "Stop", "session-end": "SessionEnd"}
    payload = {
        "session_id": SESSION,
        "cwd": str(cwd),
        "hook_event_name": names[hook],
        "event_at": at,
        **fields,
    }
    event: dict[str, object] = {"hook": hook, "payload": payload, "at": at, "transcript_size": -1}
    return {**event, "context": True} if hook == "session-start" else event


def test_mod_events_use_the_servers_rules_and_a_resend_is_one_event(
    engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    repo = new_repo(tmp_path / "웹사이트")
    mine = settings.model_copy(update={"projects": {str(repo): "website"}})
    start = mod_event("session-start", repo, NOW.isoformat(), source="startup")
    answer = "끝났어요: the plugin is done."
    stop = mod_event("stop", repo, NOW.isoformat(), last_assistant_message=answer, turn_id="t1")
    with (
        time_machine.travel(NOW, tick=False),
        TestClient(create_app(mine, engine), client=LOCAL) as c,
    ):
        first = c.post(f"{API}/sessions/hook-events", json={"events": [start, stop]})
        assert first.status_code == 200, first.text
        results = first.json()["results"]
        assert [r["outcome"] for r in results] == ["applied", "applied"]
        assert results[0]["classification"]["project"] == {"value": "website"}
        assert results[0]["context"].startswith("# On deck")
        again = c.post(f"{API}/sessions/hook-events", json={"events": [stop]})
        assert again.json()["results"][0]["outcome"] == "duplicate"
        other = mod_event(
            "stop", repo, NOW.isoformat(), last_assistant_message=answer, turn_id="t2"
        )
        assert (
            c.post(f"{API}/sessions/hook-events", json={"events": [other]}).json()["results"][0][
                "outcome"
            ]
            == "applied"
        )
        # A resumed session ends again with the same reason: another event (its own instant).
        ends = [
            mod_event("session-end", repo, at.isoformat(), reason="other")
            for at in (NOW, NOW + timedelta(minutes=5))
        ]
        outcomes = [
            c.post(f"{API}/sessions/hook-events", json={"events": [end]}).json()["results"][0][
                "outcome"
            ]
            for end in (ends[0], ends[0], ends[1])
        ]
        assert outcomes == ["applied", "duplicate", "applied"]
        [row] = c.get(f"{API}/sessions").json()
        shown = c.get(f"{API}/sessions/{row['id']}").json()
        assert shown["project"] == "website" and shown["last_word"] == answer


def test_the_status_line_says_what_is_on_deck_for_this_session(
    engine: Engine, settings: Settings
) -> None:
    with (
        time_machine.travel(NOW, tick=False),
        TestClient(create_app(settings, engine), client=LOCAL) as c,
    ):
        empty = c.get(f"{API}/context/status").json()["line"]
        assert empty.startswith("ondeck · nothing due")
        today = NOW.date().isoformat()
        for title in ("보고서 쓰기", "Ship the plugin"):
            assert c.post(f"{API}/tasks", json={"title": title, "due_on": today}).status_code == 201
        claimed = c.post(
            f"{API}/tasks/1/claim", json={"owner": session_owner(SESSION), "seconds": 45 * 60}
        )
        assert claimed.status_code == 200, claimed.text
        line = c.get(f"{API}/context/status", params={"session": SESSION}).json()["line"]
        assert "lease #1 (45 min left)" in line, line
        assert "⚠ jobs loop silent" in line  # no jobs loop runs in this test
        assert len(line) <= 120
        other = c.get(f"{API}/context/status", params={"session": "someone-else"}).json()["line"]
        assert "lease" not in other and "1 due" in other
        bad = c.get(f"{API}/context/status", params={"side": "nowhere"})
        assert bad.status_code == 422 and bad.json()["error"]["code"]
    with (
        time_machine.travel(NOW + timedelta(hours=2), tick=False),
        TestClient(create_app(settings, engine), client=LOCAL) as c,
    ):
        line = c.get(f"{API}/context/status", params={"session": SESSION}).json()["line"]
        assert "lease #1 EXPIRED" in line, line
