"""The memory routes a client-mode `ondeck` needs, on both stores: a note with
its history, supersede by a session, a note moved to another side, memory exported (JSONL
or Markdown) and imported all or nothing, one bad line naming its number."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from conftest import NOW
from ondeck.db.tables import notes
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings, load_settings
from support.memory import make_session

API = "/api/v1"
SIDES = {"work": ["/w"], "personal": ["/p"]}


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    sided = load_settings(**{**settings.model_dump(), "sides": SIDES})
    with time_machine.travel(NOW, tick=False), TestClient(create_app(sided, engine)) as c:
        yield c


def ok(answer: Any, status: int = 200) -> Any:
    assert answer.status_code == status, answer.text
    return answer.json()


def note(client: TestClient, text: str, side: str = "work", **more: Any) -> Any:
    body = {"text": text, "side": side, "project": "api", **more}
    return ok(client.post(f"{API}/notes", json=body), 201)


def count(engine: Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(notes)).scalar_one()


def test_it_gives_a_note_with_its_history(client: TestClient) -> None:
    made = note(client, "deploys only Mon-Thu")
    ok(client.post(f"{API}/notes/{made['id']}/pin", params={"side": "work"}))
    shown = ok(client.get(f"{API}/notes/{made['id']}/history", params={"side": "work"}))
    assert shown["pinned"] is True
    assert [e["kind"] for e in shown["history"]] == ["note.added", "note.pinned"]
    missing = client.get(f"{API}/notes/{made['id']}/history", params={"side": "personal"})
    assert ok(missing, 404)["error"]["code"] == "not_found"


def test_a_session_supersedes_as_an_agent(client: TestClient, engine: Engine) -> None:
    with engine.begin() as conn:
        make_session(conn, NOW, external_id="abcdef12-3456", side="work", project="api")
    made = note(client, "deploys only Mon-Thu")
    body = {"text": "deploys only Mon-Wed", "session": "abcdef12"}
    answer = client.post(f"{API}/notes/{made['id']}/supersede", params={"side": "work"}, json=body)
    new = ok(answer)["note"]
    assert new["origin"] == "agent:abcdef12-3456" and new["session_id"] is not None


def test_a_note_moves_to_another_side(client: TestClient) -> None:
    made = note(client, "the VPN is split-tunnel")
    moved = client.patch(
        f"{API}/notes/{made['id']}", params={"side": "work"}, json={"to_side": "personal"}
    )
    assert ok(moved)["side"] == "personal"
    assert ok(client.get(f"{API}/notes", params={"side": "work"}))["notes"] == []


def test_wrong_without_a_reason_is_refused_in_the_services_words(client: TestClient) -> None:
    made = note(client, "deploys only Mon-Thu")
    answer = client.post(f"{API}/notes/{made['id']}/wrong", params={"side": "work"}, json={})
    assert "give the reason" in ok(answer, 422)["error"]["message"]


def test_export_then_import_round_trips(client: TestClient, engine: Engine) -> None:
    note(client, "배포는 목요일까지", kind="decision", pinned=True)
    note(client, "a personal thing", side="personal")
    exported = client.get(f"{API}/export", params={"format": "jsonl", "side": "work"})
    assert exported.status_code == 200 and exported.headers["content-type"].startswith(
        "application/x-ndjson"
    )
    lines = exported.text.splitlines(keepends=True)
    assert json.loads(lines[0])["format"] == "ondeck-memory" and len(lines) == 3
    assert json.loads(lines[-1])["type"] == "end"
    markdown = ok(client.get(f"{API}/export", params={"format": "markdown"}))["files"]
    assert set(markdown) == {"work/api.md"} and "배포는 목요일까지" in markdown["work/api.md"]
    again = ok(client.post(f"{API}/import", json={"lines": lines}))
    assert again == {"notes": 0, "sessions": 0, "skipped": 1, "updated": 0, "warnings": [],
                     "changed": {"wrong": [], "superseded": [], "expired": [], "updated": []},
                     "kept": []}  # fmt: skip
    bad = ok(client.get(f"{API}/export", params={"format": "pdf"}), 422)
    assert bad["error"]["code"]


def _sealed(lines: list[str]) -> list[str]:
    """Lines changed by hand, with their end line made again (its digest covers them)."""
    import hashlib

    *body, last = lines
    end = {**json.loads(last), "sha256": hashlib.sha256("".join(body).encode()).hexdigest()}
    return [*body, json.dumps(end) + "\n"]


def test_one_bad_line_refuses_the_whole_import(client: TestClient, engine: Engine) -> None:
    note(client, "kept")
    lines = client.get(f"{API}/export", params={"format": "jsonl"}).text.splitlines(True)
    fresh = _sealed([line.replace('"kept"', '"new one"') for line in lines])
    before = count(engine)
    refused = client.post(f"{API}/import", json={"lines": [*fresh, "{not json\n"]})
    assert ok(refused, 422)["error"]["message"].startswith(f"line {len(fresh) + 1}:")
    assert count(engine) == before
    assert ok(client.post(f"{API}/import", json={"lines": fresh}))["notes"] == 1


def test_an_unconfigured_side_is_refused(client: TestClient) -> None:
    answer = client.get(f"{API}/export", params={"format": "jsonl", "side": "elsewhere"})
    assert "not configured" in ok(answer, 422)["error"]["message"]
