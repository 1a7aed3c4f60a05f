"""Session records over HTTP: list, show, move, and the hooks' records route (checked,
idempotent, refused for another database). Errors as `{"error": {…}}`, never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from conftest import NOW
from ondeck.db.tables import events, hook_receipts, sessions
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings, load_settings
from ondeck.sessions.classify import Facts, Rules
from support.hooks import SESSION_ID, later, record

API = "/api/v1"


def sent(rec: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps({**rec, "at": rec["at"].isoformat()}))


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        yield c


def post(client: TestClient, *recs: dict[str, Any], **headers: str) -> Any:
    return client.post(
        f"{API}/sessions/records", json={"records": [sent(r) for r in recs]}, headers=headers
    )


def test_records_are_applied_in_order_and_a_replay_changes_nothing(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    start, stop = record("start", NOW), record("stop", later(NOW, minutes=1))
    headers = {"X-Ondeck-Store-Expected": client.get(f"{API}/health").headers["x-ondeck-store"]}
    answer = post(client, start, stop, **headers)
    assert answer.status_code == 200, answer.text
    assert [r["outcome"] for r in answer.json()["results"]] == ["applied", "applied"]
    assert answer.json()["results"][0]["session"]["status"] == "open"
    again = post(client, start, stop, **headers)
    assert [r["outcome"] for r in again.json()["results"]] == ["duplicate", "duplicate"]
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(hook_receipts)).scalar() == 2
        assert conn.execute(select(func.count()).select_from(events)).scalar() == 2


def test_a_hook_of_another_database_is_refused_before_anything_is_written(
    client: TestClient, engine: Engine
) -> None:
    answer = post(client, record("start", NOW), **{"X-Ondeck-Store-Expected": "0" * 16})
    assert answer.status_code == 409
    assert answer.json()["error"]["code"] == "store_mismatch"
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(sessions)).scalar() == 0


def test_a_malformed_record_is_rejected_with_the_reason_and_the_rest_applied(
    client: TestClient,
) -> None:
    bad = {**sent(record("stop", NOW)), "at": "yesterday"}
    answer = client.post(
        f"{API}/sessions/records", json={"records": [bad, sent(record("start", NOW))]}
    )
    results = answer.json()["results"]
    assert [r["outcome"] for r in results] == ["rejected", "applied"]
    assert "ISO-8601" in results[0]["reason"]
    for body in ({}, {"records": "x"}, {"records": [1, None, "x"]}, [], {"records": [{}] * 501}):
        answer = client.post(f"{API}/sessions/records", json=body)
        assert answer.status_code in (200, 422), answer.text
        if answer.status_code == 200:
            assert {r["outcome"] for r in answer.json()["results"]} == {"rejected"}


def test_a_record_of_an_unknown_agent_is_rejected_and_each_known_one_kept(
    client: TestClient,
) -> None:
    codex = {**sent(record("start", NOW)), "agent": "codex"}
    unknown = {**sent(record("start", NOW, session_id="other-1")), "agent": "cursor"}
    answer = client.post(f"{API}/sessions/records", json={"records": [codex, unknown]})
    results = answer.json()["results"]
    assert [r["outcome"] for r in results] == ["applied", "rejected"]
    assert "cursor" in results[1]["reason"] and "codex" in results[1]["reason"]
    assert [s["agent"] for s in client.get(f"{API}/sessions?agent=codex").json()] == ["codex"]
    assert client.get(f"{API}/sessions?agent=gemini-cli").json() == []


def test_list_show_and_move(client: TestClient, engine: Engine, settings: Settings) -> None:
    post(client, record("start", NOW), record("stop", later(NOW, minutes=1)))
    listed = client.get(f"{API}/sessions").json()
    assert [(s["external_id"], s["status"], s["project"]) for s in listed] == [
        (SESSION_ID, "open", None)
    ]
    assert listed[0]["last_word_preview"].startswith("I added the retry")
    shown = client.get(f"{API}/sessions/{SESSION_ID[:8]}")
    assert shown.status_code == 200
    body = shown.json()
    assert body["id"] == listed[0]["id"] and body["classification"]["reason"]
    assert [e["kind"] for e in body["history"]] == ["session.started"], "not every turn"
    moved = client.post(f"{API}/sessions/{body['id']}/move", json={"project": "site"})
    assert moved.status_code == 200, moved.text
    assert (moved.json()["project"], moved.json()["project_rule"]) == ("site", "moved")
    refused = client.post(f"{API}/sessions/{body['id']}/move", json={"side": "work"})
    assert refused.status_code == 422 and "no sides" in refused.json()["error"]["message"]
    assert client.get(f"{API}/sessions", params={"project": "site"}).json()[0]["id"] == body["id"]


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/sessions/999", 404),
        ("/sessions/nope-nope-nope", 404),
        ("/sessions?status=running", 422),
        ("/sessions?side=no%20side", 422),
        ("/sessions?limit=0", 422),
        ("/sessions?before_id=99999999999999999999", 422),
        ("/sessions?agent=cursor", 422),
        ("/context?brief=true&session=s1&agent=codex%27--", 422),
    ],
)
def test_bad_reads_are_4xx_with_the_error_shape(client: TestClient, path: str, status: int) -> None:
    answer = client.get(f"{API}{path}")
    assert answer.status_code == status, answer.text
    assert set(answer.json()["error"]) == {"code", "message"}


def test_move_to_a_side_when_sides_are_configured(
    engine: Engine, db_url: str, tmp_path: Any
) -> None:
    settings = load_settings(
        database_url=db_url, tz="UTC", data_dir=tmp_path / "d", sides={"work": ["/w"], "own": []}
    )
    rules = Rules(sides={"work": ["/w"], "own": ["/w"]})
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        post(c, record("start", NOW, rules=rules, facts=Facts(cwd="/w/x")))
        inbox = c.get(f"{API}/sessions", params={"status": "unclassified"}).json()
        assert len(inbox) == 1 and inbox[0]["unclassified"]
        answer = c.post(f"{API}/sessions/{inbox[0]['id']}/move", json={"side": "own"})
        assert answer.status_code == 200 and answer.json()["side"] == "own"
        assert c.get(f"{API}/sessions", params={"status": "unclassified"}).json() == []
        bad = c.post(f"{API}/sessions/{inbox[0]['id']}/move", json={"side": "hobby"})
        assert bad.status_code == 422 and "not configured" in bad.json()["error"]["message"]
        extra = c.post(f"{API}/sessions/{inbox[0]['id']}/move", json={"side": "own", "x": 1})
        assert extra.status_code == 422


def test_hook_events_are_made_into_records_by_the_server_for_this_machine_only(
    engine: Engine, settings: Settings, tmp_path: Any
) -> None:
    """The hooks' warm path: the event as received, the hook's rules; the server reads the
    place (here a real git repository), classifies, scrubs, stores, and reads git at the end."""
    from support.hooks import commit_file, new_repo, payload

    repo = new_repo(tmp_path / "site")
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    rules = {"projects": {str(repo): "website"}, "sides": {}, "remotes": {}}
    events = [
        {
            "hook": "session-start",
            "payload": payload("start", cwd=str(repo)),
            "at": NOW.isoformat(),
            "context": True,
        },
        {
            "hook": "stop",
            "payload": payload("stop", cwd=str(repo), last_assistant_message=f"rotated {key}"),
            "at": later(NOW, minutes=1).isoformat(),
            "transcript_size": 10,
        },
    ]
    local = ("127.0.0.1", 50000)
    with (
        time_machine.travel(NOW, tick=False),
        TestClient(create_app(settings, engine), client=local) as c,
    ):
        answer = c.post(f"{API}/sessions/hook-events", json={"events": events, "rules": rules})
        assert answer.status_code == 200, answer.text
        results = answer.json()["results"]
        assert [r["outcome"] for r in results] == ["applied", "applied"]
        assert results[0]["classification"]["project"] == {"value": "website"}
        assert results[0]["context"].startswith("# On deck 2026-06-15 (UTC, project website)")
        assert results[1]["context"] is None
        commit_file(repo, "a.txt", "a\n", "a change")
        end = {
            "hook": "session-end",
            "payload": payload("end", cwd=str(repo)),
            "at": later(NOW, minutes=2).isoformat(),
        }
        assert (
            c.post(
                f"{API}/sessions/hook-events", json={"events": [end], "rules": rules}
            ).status_code
            == 200
        )
        shown = c.get(f"{API}/sessions/{SESSION_ID}").json()
        assert shown["project"] == "website" and shown["project_rule"] == "path"
        assert shown["last_word"] == "rotated [redacted:github_token]"
        assert shown["commits"]["total"] == 1 and shown["files"]["paths"] == ["a.txt"]
        bad = c.post(f"{API}/sessions/hook-events", json={"events": events, "rules": {"sides": 1}})
        assert bad.status_code == 422
        odd = c.post(
            f"{API}/sessions/hook-events",
            json={"events": [{"hook": "other"}, {"hook": "stop", "payload": {}}], "rules": {}},
        )
        assert [r["outcome"] for r in odd.json()["results"]] == ["rejected", "rejected"]
    with TestClient(create_app(settings, engine)) as remote:  # not a loopback address
        refused = remote.post(
            f"{API}/sessions/hook-events", json={"events": events, "rules": rules}
        )
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "forbidden"


def test_a_place_of_another_user_is_left_to_the_hook(
    engine: Engine, settings: Settings, tmp_path: Any
) -> None:
    """A server running as another user (a system service) would read another place than
    the hook: it declines, and the hook makes the record itself."""
    import os

    from support.hooks import payload

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, os.getuid() + 1, -1)
    event = {"hook": "stop", "payload": payload("stop", cwd=str(theirs)), "at": NOW.isoformat()}
    with TestClient(create_app(settings, engine), client=("127.0.0.1", 1)) as c:
        answer = c.post(f"{API}/sessions/hook-events", json={"events": [event], "rules": {}})
    [result] = answer.json()["results"]
    assert result["outcome"] == "declined" and "another user" in result["reason"]
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(sessions)).scalar() == 0


def _asked(session: str, **more: str) -> dict[str, str]:
    return {"context": "true", "format": "markdown", "brief": "true", "session": session, **more}


def test_a_start_gets_its_context_in_the_same_answer_knowing_the_session_just_stored(
    client: TestClient,
) -> None:
    start = record("start", NOW)
    answer = client.post(
        f"{API}/sessions/records",
        params=_asked(SESSION_ID, source="startup"),
        json={"records": [sent(start)]},
    )
    assert answer.status_code == 200, answer.text
    number = answer.json()["results"][0]["session"]["id"]
    context = answer.json()["context"]
    assert context.startswith("# On deck"), context
    assert f"This session: session {number} ({SESSION_ID})" in context
    # Not asked: no context is made.
    again = post(client, record("stop", later(NOW, minutes=1)))
    assert again.status_code == 200 and again.json()["context"] is None


def test_a_start_the_server_sends_to_its_inbox_gets_the_inbox_context_not_a_refusal(
    engine: Engine, db_url: str, tmp_path: Any
) -> None:
    settings = load_settings(
        database_url=db_url, tz="UTC", data_dir=tmp_path / "d", sides={"job": [], "home": []}
    )
    rules = Rules(sides={"work": ["/w"]})  # the client's side, unknown to this server
    start = record("start", NOW, rules=rules, facts=Facts(cwd="/w/x"))
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        plain = c.get(f"{API}/context", params={"side": "work", "format": "markdown"})
        assert plain.status_code == 422  # asked alone, the unknown side is refused
        answer = c.post(
            f"{API}/sessions/records",
            params=_asked(SESSION_ID, side="work"),
            json={"records": [sent(start)]},
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["results"][0]["session"]["unclassified"] is True
        context = answer.json()["context"]
        assert context is not None and context.startswith("# On deck"), context
        assert "unclassified" in context.lower(), context
        # A malformed question is refused whole, before anything is stored.
        bad = c.post(
            f"{API}/sessions/records",
            params=_asked("x", project="no spaces allowed"),
            json={"records": [sent(record("stop", later(NOW, minutes=1)))]},
        )
        assert bad.status_code == 422 and bad.json()["error"]["code"]
        assert (
            c.get(f"{API}/sessions/{answer.json()['results'][0]['session']['id']}").json()["status"]
            == "open"
        ), "the stop was not stored"


def test_imported_sessions_are_a_filter_and_a_field(
    client: TestClient, engine: Engine, tmp_path: Any
) -> None:
    from datetime import UTC, timedelta

    from ondeck.host.quick_settings import HookConfig
    from ondeck.sessions.session_import import import_sessions

    post(client, record("start", NOW))
    sid = "0b7e3f52-8c1d-4e6a-9f20-5d4c3b2a1908"
    folder = tmp_path / "projects" / "-w"
    folder.mkdir(parents=True)
    line = {"type": "user", "sessionId": sid, "timestamp": (NOW - timedelta(days=3)).isoformat()}
    (folder / f"{sid}.jsonl").write_text(json.dumps(line) + "\n")
    import_sessions(
        engine, NOW, agent="claude-code", folder=str(tmp_path / "projects"),
        config=HookConfig(), zone=UTC,
    )  # fmt: skip
    every = client.get("/api/v1/sessions").json()
    assert sorted(s["imported"] for s in every) == [False, True]
    [only] = client.get("/api/v1/sessions", params={"status": "imported"}).json()
    assert only["external_id"] == sid and "imported" in only["badges"]
    assert only["end_reason"] == "imported" and only["status"] == "ended"
