"""The side partition over the API, the calendar feed and the dashboard, on both stores:
tasks and schedules are made in a side (required while sides are configured), listed one
side at a time, and a device token limited to a side sees and writes that side only."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from ondeck.db.tables import tasks
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import load_settings
from ondeck.system import tokens as device_tokens
from ondeck.work import backlog, schedules

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
ADMIN = "s3cret-admin-token-for-sides-0123456789"
SIDES = {"work": ["/w"], "personal": ["/p"]}
LAWYER = "call the divorce lawyer"


@pytest.fixture
def app(engine: Engine, db_url: str, tmp_path) -> FastAPI:  # type: ignore[no-untyped-def]
    settings = load_settings(
        database_url=db_url, tz="UTC", token=ADMIN, data_dir=tmp_path, sides=SIDES
    )
    return create_app(settings, engine)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with time_machine.travel(NOW, tick=False), TestClient(app, client=("10.0.0.9", 5)) as c:
        yield c


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _seed(engine: Engine) -> dict[str, int]:
    from zoneinfo import ZoneInfo

    with engine.begin() as conn:
        lawyer = backlog.create_task(conn, NOW, title=LAWYER, side="personal", actor="t")
        work = backlog.create_task(
            conn, NOW, title="회의록 정리 work notes", side="work", actor="t"
        )
        inbox = backlog.create_task(conn, NOW, title="old task, no side yet", actor="t")
        for side in ("work", "personal"):
            schedules.create_schedule(
                conn, NOW, ZoneInfo("UTC"), title=f"{side} weekly", rule="weekly:MON",
                side=side, actor="t",
            )  # fmt: skip
    return {"lawyer": lawyer.id, "work": work.id, "inbox": inbox.id}


def _titles(response: Any) -> list[str]:
    assert response.status_code == 200, response.text
    return [item["title"] for item in response.json()]


def test_lists_are_of_one_side_and_a_new_task_needs_one(client: TestClient, engine: Engine) -> None:
    seeded = _seed(engine)
    admin = _bearer(ADMIN)
    assert _titles(client.get("/api/v1/tasks?side=work", headers=admin)) == [
        "회의록 정리 work notes"
    ]
    assert _titles(client.get("/api/v1/tasks?side=personal", headers=admin)) == [LAWYER]
    assert _titles(client.get("/api/v1/tasks?unclassified=true", headers=admin)) == [
        "old task, no side yet"
    ]
    refused = client.get("/api/v1/tasks", headers=admin)
    assert refused.status_code == 422 and "give side" in refused.json()["error"]["message"]
    assert _titles(client.get("/api/v1/schedules?side=work", headers=admin)) == ["work weekly"]
    # claim-next in the work side never takes the personal task.
    taken = client.post(
        "/api/v1/tasks/claim-next", json={"owner": "a", "side": "work"}, headers=admin
    )
    assert taken.json()["id"] == seeded["work"]
    none_left = client.post(
        "/api/v1/tasks/claim-next", json={"owner": "a", "side": "work"}, headers=admin
    )
    assert none_left.status_code == 409 or none_left.status_code == 404, none_left.text
    # A new task names its side; none, or one not configured, is refused and writes nothing.
    for body in ({"title": "x"}, {"title": "x", "side": "nope"}):
        answer = client.post("/api/v1/tasks", json=body, headers=admin)
        assert answer.status_code == 422, answer.text
    made = client.post("/api/v1/tasks", json={"title": "y", "side": "work"}, headers=admin)
    assert made.status_code == 201 and made.json()["side"] == "work"
    # The owner gives the inbox's task a side.
    moved = client.patch(
        f"/api/v1/tasks/{seeded['inbox']}", json={"side": "personal"}, headers=admin
    )
    assert moved.status_code == 200 and moved.json()["side"] == "personal"
    with engine.connect() as conn:
        titles = set(conn.execute(select(tasks.c.title)).scalars())
    assert "x" not in titles


def test_a_token_limited_to_a_side_sees_and_writes_that_side_only(
    client: TestClient, engine: Engine
) -> None:
    seeded = _seed(engine)
    with engine.begin() as conn:
        made = device_tokens.create(conn, NOW, "work-laptop", "write", actor="t", side="work")
    work = _bearer(made.secret)
    assert _titles(client.get("/api/v1/tasks", headers=work)) == ["회의록 정리 work notes"]
    assert _titles(client.get("/api/v1/schedules", headers=work)) == ["work weekly"]
    for url in ("/api/v1/tasks?side=personal", "/api/v1/tasks?unclassified=true"):
        answer = client.get(url, headers=work)
        assert answer.status_code == 403, answer.text
        assert "side 'work' only" in answer.json()["error"]["message"]
    assert client.get(f"/api/v1/tasks/{seeded['lawyer']}", headers=work).status_code == 404
    for path, body in (
        (f"/api/v1/tasks/{seeded['lawyer']}/claim", {"owner": "w"}),
        (f"/api/v1/tasks/{seeded['lawyer']}/complete", {}),
        (f"/api/v1/tasks/{seeded['lawyer']}/cancel", {}),
    ):
        assert client.post(path, json=body, headers=work).status_code == 404, path
    assert (
        client.patch(
            f"/api/v1/tasks/{seeded['work']}", json={"side": "personal"}, headers=work
        ).status_code
        == 403
    )
    wrote = client.post("/api/v1/tasks", json={"title": "from work"}, headers=work)
    assert wrote.status_code == 201 and wrote.json()["side"] == "work"
    other = client.post("/api/v1/tasks", json={"title": "sneak", "side": "personal"}, headers=work)
    assert other.status_code == 403
    taken = client.post("/api/v1/tasks/claim-next", json={"owner": "w"}, headers=work)
    assert taken.status_code == 200 and taken.json()["side"] == "work"
    with engine.connect() as conn:
        lawyer = conn.execute(select(tasks).where(tasks.c.id == seeded["lawyer"])).one()
        titles = set(conn.execute(select(tasks.c.title)).scalars())
    assert lawyer.status == "READY" and "sneak" not in titles
    # The context it reads is the work side's.
    context = client.get("/api/v1/context?format=json", headers=work).json()
    assert LAWYER not in str(context) and context["side"] == "work"
    # The calendar feed with that token: the work side's schedules only.
    feed = client.get(f"/calendar.ics?token={made.secret}")
    assert feed.status_code == 200 and "work weekly" in feed.text
    assert "personal weekly" not in feed.text
    assert client.get(f"/calendar.ics?token={made.secret}&side=personal").status_code == 403


def test_the_calendar_feed_is_of_one_side(client: TestClient, engine: Engine) -> None:
    _seed(engine)
    work = client.get(f"/calendar.ics?token={ADMIN}&side=work")
    assert work.status_code == 200
    assert "work weekly" in work.text and "personal weekly" not in work.text
    assert client.get(f"/calendar.ics?token={ADMIN}").status_code == 422
