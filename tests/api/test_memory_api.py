"""Memory over HTTP on both stores: notes' lifecycle, handoffs, recall; a side must be
named when sides are configured and nothing of another side is ever returned; errors as
`{"error": {…}}` with 4xx, nothing written."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from conftest import NOW
from ondeck.db.tables import events, notes
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings, load_settings
from support.memory import make_session

API = "/api/v1"
SIDES = {"work": ["/w"], "personal": ["/p"]}


@pytest.fixture
def sided(settings: Settings) -> Settings:
    return load_settings(**{**settings.model_dump(), "sides": SIDES})


@pytest.fixture
def client(engine: Engine, sided: Settings) -> Iterator[TestClient]:
    with time_machine.travel(NOW, tick=False), TestClient(create_app(sided, engine)) as c:
        yield c


def ok(answer: Any, status: int = 200) -> Any:
    assert answer.status_code == status, answer.text
    return answer.json()


def counts(engine: Engine) -> tuple[int, int]:
    with engine.connect() as conn:
        return (
            conn.execute(select(func.count()).select_from(notes)).scalar_one(),
            conn.execute(select(func.count()).select_from(events)).scalar_one(),
        )


def test_a_note_s_life_over_http(client: TestClient) -> None:
    made = ok(
        client.post(
            f"{API}/notes",
            json={"text": "배포는 목요일까지", "kind": "decision", "side": "work",
                  "project": "api", "pinned": True, "expires_on": "2026-07-01"},
        ),
        201,
    )  # fmt: skip
    assert (made["kind"], made["status"], made["pinned"], made["origin"]) == (
        "decision", "active", True, "person",
    )  # fmt: skip
    listed = ok(client.get(f"{API}/notes", params={"side": "work"}))["notes"]
    assert [n["id"] for n in listed] == [made["id"]]
    replaced = ok(
        client.post(
            f"{API}/notes/{made['id']}/supersede", params={"side": "work"},
            json={"text": "배포는 수요일까지"},
        )
    )  # fmt: skip
    new = replaced["note"]
    assert replaced["superseded"]["superseded_by"] == new["id"]
    wrong = ok(
        client.post(
            f"{API}/notes/{new['id']}/wrong", params={"side": "work"},
            json={"reason": "no deploy freeze this year"},
        )
    )  # fmt: skip
    assert wrong["status"] == "wrong" and wrong["pinned"] is False
    found = ok(client.get(f"{API}/recall", params={"q": "배포", "side": "work"}))
    assert found["results"] == []
    found = ok(client.get(f"{API}/recall", params={"q": "배포", "side": "work", "all": "true"}))
    assert {r["status"] for r in found["results"]} == {"superseded", "wrong"}
    assert all(r["true"] is False and r["label"] for r in found["results"])
    edited = ok(
        client.patch(f"{API}/notes/{made['id']}", params={"side": "work"}, json={"text": "again"}),
        409,
    )
    assert edited["error"]["code"] == "conflict"
    gone = ok(client.delete(f"{API}/notes/{new['id']}", params={"side": "work"}))
    assert gone["id"] == new["id"]
    assert ok(client.get(f"{API}/notes/{new['id']}", params={"side": "work"}), 404)["error"]


def test_handoffs_over_http(client: TestClient, engine: Engine) -> None:
    with engine.begin() as conn:
        make_session(conn, NOW, external_id="abcdef12-3456", side="work", project="api")
    first = ok(
        client.post(
            f"{API}/handoffs",
            json={"session": "abcdef12", "text": "next: tests", "head": "a" * 40, "branch": "main"},
        )
    )
    assert first["replaced"] is False and first["note"]["kind"] == "handoff"
    again = ok(client.post(f"{API}/handoffs", json={"session": "abcdef12", "text": "next: docs"}))
    assert again["replaced"] is True and again["note"]["id"] == first["note"]["id"]
    context = ok(
        client.get(
            f"{API}/context",
            params={"brief": "true", "side": "work", "project": "api", "format": "json"},
        )
    )
    assert context["brief"]["handoff"]["note"]["text"] == "next: docs"
    markdown = client.get(
        f"{API}/context",
        params={"brief": "true", "side": "work", "project": "api", "format": "markdown"},
    ).text
    assert "next: docs" in markdown and "not instructions" in markdown


def test_a_personal_note_never_comes_back_to_a_work_query(client: TestClient) -> None:
    personal = ok(
        client.post(f"{API}/notes", json={"text": "deploy my blog", "side": "personal"}), 201
    )
    ok(client.post(f"{API}/notes", json={"text": "deploy the api", "side": "work"}), 201)
    work = ok(client.get(f"{API}/recall", params={"q": "deploy", "side": "work"}))
    assert [r["snippet"] for r in work["results"]] == ["deploy the api"]
    assert personal["id"] not in [
        n["id"] for n in ok(client.get(f"{API}/notes", params={"side": "work"}))["notes"]
    ]
    answer = client.get(f"{API}/notes/{personal['id']}", params={"side": "work"})
    assert answer.status_code == 404
    for path in (f"/notes/{personal['id']}/pin", f"/notes/{personal['id']}/unpin"):
        assert client.post(f"{API}{path}", params={"side": "work"}).status_code == 404
    brief = ok(
        client.get(f"{API}/context", params={"brief": "true", "side": "work", "format": "json"})
    )["brief"]
    assert "blog" not in str(brief)


@pytest.mark.parametrize(
    "method, path, kw, status, words",
    [
        ("get", "/recall", {"params": {"q": "deploy"}}, 422, "give side"),
        ("get", "/recall", {"params": {"q": "deploy", "side": "hobby"}}, 422, "not configured"),
        ("get", "/recall", {"params": {"q": "a", "side": "work"}}, 422, "nothing to look for"),
        ("get", "/recall", {"params": {"q": "x", "side": "work", "kind": "memo"}}, 422, "not one"),
        ("get", "/notes", {}, 422, "give side"),
        ("post", "/notes", {"json": {"text": "x"}}, 422, "give the side"),
        ("post", "/notes", {"json": {"text": "", "side": "work"}}, 422, "text"),
        ("post", "/notes", {"json": {"text": "x" * 8001, "side": "work"}}, 422, "text"),
        ("post", "/notes", {"json": {"text": "x", "side": "work", "kind": "handoff"}}, 422, "kind"),
        ("post", "/notes", {"json": {"text": "x", "side": "work", "pinned": "yes"}}, 422, "pinned"),
        ("post", "/notes", {"json": {"text": "x", "side": "work", "extra": 1}}, 422, "extra"),
        ("post", "/notes", {"json": {"text": "x", "side": "work", "expires_on": "2020-01-01"}},
         422, "before today"),
        ("get", "/notes/0", {"params": {"side": "work"}}, 422, "note_id"),
        ("get", "/notes/99", {"params": {"side": "work"}}, 404, "no note 99"),
        ("post", "/notes/99/wrong", {"params": {"side": "work"}, "json": {"reason": ""}}, 422,
         "reason"),
        ("post", "/handoffs", {"json": {"session": "nope-nope", "text": "x"}}, 404, "no session"),
        ("post", "/handoffs", {"json": {"session": "x", "text": "y", "head": "--exec"}}, 422,
         "head"),
    ],
)  # fmt: skip
def test_bad_input_is_a_4xx_error_and_nothing_is_written(
    client: TestClient, engine: Engine, method: str, path: str, kw: dict[str, Any],
    status: int, words: str,
) -> None:  # fmt: skip
    before = counts(engine)
    answer = getattr(client, method)(f"{API}{path}", **kw)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert set(error) == {"code", "message"} and words in error["message"]
    assert counts(engine) == before


def test_without_sides_there_is_one_pool(engine: Engine, settings: Settings) -> None:
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        made = ok(c.post(f"{API}/notes", json={"text": "one pool"}), 201)
        assert made["side"] is None
        found = ok(c.get(f"{API}/recall", params={"q": "pool"}))
        assert [r["id"] for r in found["results"]] == [made["id"]]
        assert ok(c.get(f"{API}/recall", params={"q": "pool", "side": "work"}), 422)
