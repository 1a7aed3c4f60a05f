"""Schedules over HTTP: every route, its shapes, and refusals that write nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from ondeck.core import clock
from ondeck.db.tables import schedules, tasks
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings
from ondeck.work import firing

API = "/api/v1/schedules"


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings, engine)) as client:
        yield client


def _add(client: TestClient, **body: Any) -> dict[str, Any]:
    body.setdefault("title", "weekly check")
    body.setdefault("rule", "daily")
    response = client.post(API, json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_create_list_show_and_fires(client: TestClient, engine: Engine, settings: Settings) -> None:
    created = _add(client, rule="weekly: mon,thu", kind="remind", project="ondeck", priority=0)
    assert created["rule"] == "weekly:MON,THU"
    assert created["rule_text"] == "every Monday and Thursday"
    assert created["enabled"] is True
    assert created["missed"] == "latest"
    listed = client.get(API).json()
    assert [s["id"] for s in listed] == [created["id"]]
    assert client.get(API, params={"kind": "task"}).json() == []

    daily = _add(client)
    firing.fire_due(engine, clock.now(), settings.zone)
    shown = client.get(f"{API}/{daily['id']}").json()
    assert set(shown) == {"schedule", "fires", "next", "skipped"}
    assert shown["schedule"]["last_fired_on"] == clock.today(clock.now(), settings.zone).isoformat()
    assert len(shown["next"]) == 5
    [fire] = client.get(f"{API}/{daily['id']}/fires").json()
    assert fire == shown["fires"][0]
    assert fire["task_id"] is not None


def test_an_invalid_rule_is_422_with_the_rules_message_and_nothing_written(
    client: TestClient, engine: Engine
) -> None:
    response = client.post(API, json={"title": "x", "rule": "monthly:31"})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_rule"
    assert "not every month has a day 31" in error["message"]
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(schedules)).scalar() == 0


@pytest.mark.parametrize(
    "body",
    [
        {"title": "", "rule": "daily"},
        {"title": "x", "rule": "daily", "priority": 10},
        {"title": "x", "rule": "daily", "kind": "email"},
        {"title": "x", "rule": "daily", "missed": "sometimes"},
        {"title": "x", "rule": "daily", "start_on": 1718000000},
        {"title": "x", "rule": "daily", "project": "has space"},
        {"title": "x", "rule": "daily", "surprise": True},
        {"rule": "daily"},
    ],
)
def test_bad_bodies_are_422(client: TestClient, body: dict[str, Any]) -> None:
    response = client.post(API, json=body)
    assert response.status_code == 422
    assert response.json()["error"]["code"] in ("invalid_input", "invalid_rule")


def test_patch_changes_what_is_sent(client: TestClient) -> None:
    created = _add(client, project="p")
    response = client.patch(f"{API}/{created['id']}", json={"rule": "every:2", "project": None})
    assert response.status_code == 200
    edited = response.json()
    assert (edited["rule"], edited["project"], edited["title"]) == ("every:2", None, "weekly check")
    assert client.patch(f"{API}/{created['id']}", json={"title": None}).status_code == 422
    bad = client.patch(f"{API}/{created['id']}", json={"rule": "0 9 * * *"})
    assert bad.status_code == 422
    assert bad.json()["error"]["code"] == "invalid_rule"


def test_now_pause_resume_and_delete(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    created = _add(client, rule="weekly:MON,TUE,WED,THU,FRI,SAT,SUN")
    sid = created["id"]
    pulled = client.post(f"{API}/{sid}/now").json()
    assert pulled["next_due"] == clock.today(clock.now(), settings.zone).isoformat()
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(tasks)).scalar() == 0
    assert client.post(f"{API}/{sid}/pause").json()["enabled"] is False
    assert client.post(f"{API}/{sid}/now").status_code == 409
    assert client.post(f"{API}/{sid}/resume").json()["enabled"] is True
    assert client.delete(f"{API}/{sid}").status_code == 204
    for method, path in [
        ("get", f"{API}/{sid}"),
        ("patch", f"{API}/{sid}"),
        ("delete", f"{API}/{sid}"),
        ("post", f"{API}/{sid}/now"),
        ("get", f"{API}/{sid}/fires"),
    ]:
        response = client.request(method, path, json={} if method == "patch" else None)
        assert response.status_code == 404, (method, path)
        assert response.json()["error"]["code"] == "not_found"
    assert client.get(f"{API}/0").status_code == 422


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("kind", "REMIND"),
        ("kind", " remind"),
        ("kind", 1),
        ("kind", ["remind"]),
        ("kind", None),
        ("missed", "ALL"),
        ("missed", True),
        ("missed", {"all": 1}),
    ],
)
def test_a_kind_or_policy_is_its_exact_word_in_a_strict_body(
    client: TestClient, engine: Engine, field: str, value: Any
) -> None:
    """The bodies are strict (no "2" for 2), yet an enum's own JSON text must be accepted:
    anything else is one line naming the words, on create and on edit, and nothing changes."""
    words = "'task', 'remind' or 'backup'" if field == "kind" else "'latest', 'all' or 'skip'"
    refused = client.post(API, json={"title": "x", "rule": "daily", field: value})
    assert refused.status_code == 422
    assert refused.json()["error"] == {
        "code": "invalid_input",
        "message": f"{field}: Input should be {words}",
    }
    created = _add(client, missed="skip", kind="backup")
    if field == "missed":
        edited = client.patch(f"{API}/{created['id']}", json={"missed": value})
        assert edited.status_code == 422
        assert edited.json()["error"]["message"] == f"missed: Input should be {words}"
        assert client.get(f"{API}/{created['id']}").json()["schedule"]["missed"] == "skip"
    assert client.patch(f"{API}/{created['id']}", json={"missed": "all"}).json()["missed"] == "all"
    with engine.connect() as conn:
        assert conn.execute(select(schedules.c.kind, schedules.c.missed)).all() == [
            ("backup", "all")
        ]


def test_a_kind_filter_takes_the_exact_word(client: TestClient) -> None:
    _add(client, kind="remind")
    assert [s["kind"] for s in client.get(API, params={"kind": "remind"}).json()] == ["remind"]
    refused = client.get(API, params={"kind": "Remind"})
    assert refused.status_code == 422
    assert "'task', 'remind' or 'backup'" in refused.json()["error"]["message"]


def test_the_openapi_document_names_each_state_and_its_words(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    assert schemas["TaskStatus"]["enum"] == ["READY", "RUNNING", "DONE", "CANCELLED"]
    assert schemas["ScheduleKind"]["enum"] == ["task", "remind", "backup"]
    assert schemas["MissedPolicy"]["enum"] == ["latest", "all", "skip"]
    assert schemas["TaskOut"]["properties"]["status"] == {"$ref": "#/components/schemas/TaskStatus"}
    assert schemas["ScheduleIn"]["properties"]["kind"] == {
        "$ref": "#/components/schemas/ScheduleKind",
        "default": "task",
    }
