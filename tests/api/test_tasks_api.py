"""The tasks and events API: the same objects as the CLI, errors as `{"error": {…}}`, no 500s."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from sqlalchemy import Engine, func, select

from ondeck.core.models import TASK_JSON_FIELDS
from ondeck.db.tables import events, tasks
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings, load_settings

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
API = "/api/v1"


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        yield c


def add(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post(f"{API}/tasks", json={"title": "t", **body})
    assert response.status_code == 201, response.text
    return response.json()


def counts(engine: Engine) -> tuple[int, int, list[Any]]:
    with engine.connect() as conn:
        n_tasks = conn.execute(select(func.count()).select_from(tasks)).scalar_one()
        n_events = conn.execute(select(func.count()).select_from(events)).scalar_one()
        rows = [tuple(r) for r in conn.execute(select(tasks).order_by(tasks.c.id))]
    return n_tasks, n_events, rows


def test_claim_renew_complete_over_http(client: TestClient) -> None:
    task = add(client, title="write it", priority=1, due_on="2026-06-16", project="ondeck")
    assert list(task) == [*TASK_JSON_FIELDS, "lease"]  # the lease as it stands, last
    assert task["status"] == "READY" and task["due_on"] == "2026-06-16"

    claimed = client.post(f"{API}/tasks/{task['id']}/claim", json={"owner": "api:x", "for": "2h"})
    assert claimed.status_code == 200
    held = claimed.json()
    assert held["status"] == "RUNNING"
    assert held["lease_owner"] == "api:x"
    assert held["lease_until"] == "2026-06-15T11:00:00+00:00"
    assert held["expired"] is False

    renewed = client.post(
        f"{API}/tasks/{task['id']}/renew", json={"token": held["lease_token"], "seconds": 600}
    )
    assert renewed.json()["lease_until"] == "2026-06-15T09:10:00+00:00"

    done = client.post(
        f"{API}/tasks/{task['id']}/complete", json={"token": held["lease_token"], "note": "ok"}
    )
    assert done.status_code == 200
    assert done.json()["status"] == "DONE"
    assert done.json()["done_at"] == "2026-06-15T09:00:00+00:00"

    history = client.get(f"{API}/events", params={"subject": f"task:{task['id']}"}).json()
    assert [e["kind"] for e in history] == [
        "task.completed",
        "task.renewed",
        "task.claimed",
        "task.created",
    ]
    assert set(history[0]) == {"id", "at", "actor", "kind", "subject", "details"}
    assert {e["actor"] for e in history} == {"api"}
    only_claims = client.get(f"{API}/events", params={"kind": "task.claimed", "limit": 1}).json()
    assert [e["kind"] for e in only_claims] == ["task.claimed"]


def test_claim_next_and_nothing_claimable(client: TestClient) -> None:
    add(client, title="later", priority=5)
    first = add(client, title="first", priority=0)
    got = client.post(f"{API}/tasks/claim-next", json={"owner": "api:x"})
    assert got.status_code == 200
    assert got.json()["id"] == first["id"]
    client.post(f"{API}/tasks/claim-next", json={"owner": "api:x"})
    none = client.post(f"{API}/tasks/claim-next", json={"owner": "api:x", "project": "p"})
    assert none.status_code == 409
    assert none.json() == {
        "error": {"code": "nothing_claimable", "message": "no READY task to claim in project p"}
    }


def test_a_stale_holder_gets_409_lease_lost_naming_the_current_state(
    client: TestClient, engine: Engine
) -> None:
    task = add(client)
    old = client.post(f"{API}/tasks/{task['id']}/claim", json={"owner": "claude:one"}).json()
    forced = client.post(f"{API}/tasks/{task['id']}/release", json={"force": True})
    assert forced.status_code == 200 and forced.json()["status"] == "READY"
    client.post(f"{API}/tasks/{task['id']}/claim", json={"owner": "claude:two"})
    before = counts(engine)
    for action, body in (
        ("complete", {"token": old["lease_token"]}),
        ("release", {"token": old["lease_token"]}),
        ("renew", {"token": old["lease_token"]}),
    ):
        response = client.post(f"{API}/tasks/{task['id']}/{action}", json=body)
        assert response.status_code == 409, action
        error = response.json()["error"]
        assert error["code"] == "lease_lost"
        assert "RUNNING, held by claude:two" in error["message"]
    assert counts(engine) == before


def test_list_get_patch_and_cancel(client: TestClient) -> None:
    a = add(client, title="a", project="x")
    b = add(client, title="b", due_on="2026-06-20")
    client.post(f"{API}/tasks/{b['id']}/cancel", json={"note": "dropped"})
    listed = client.get(f"{API}/tasks").json()
    assert [t["id"] for t in listed] == [a["id"]], "open tasks by default"
    everything = client.get(f"{API}/tasks", params={"status": "all"}).json()
    assert [t["id"] for t in everything] == [b["id"], a["id"]]
    assert client.get(f"{API}/tasks", params={"status": "cancelled"}).json()[0]["id"] == b["id"]
    assert client.get(f"{API}/tasks", params={"project": "y"}).json() == []
    assert client.get(f"{API}/tasks/{a['id']}").json() == a

    patched = client.patch(
        f"{API}/tasks/{a['id']}", json={"title": "a2", "project": None, "due_on": "2026-07-01"}
    )
    assert patched.status_code == 200
    body = patched.json()
    assert (body["title"], body["project"], body["due_on"]) == ("a2", None, "2026-07-01")
    assert body["priority"] == 2, "fields not sent stay as they were"


def test_cancel_without_a_body(client: TestClient) -> None:
    task = add(client)
    assert client.post(f"{API}/tasks/{task['id']}/cancel").json()["status"] == "CANCELLED"


def test_instants_are_shown_in_the_configured_zone(engine: Engine, tmp_path: Any) -> None:
    settings = load_settings(
        database_url=str(engine.url.render_as_string(hide_password=False)),
        tz="Asia/Seoul",
        data_dir=tmp_path / "data",
    )
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as client:
        task = add(client)
        held = client.post(f"{API}/tasks/{task['id']}/claim", json={"owner": "x"}).json()
        event = client.get(f"{API}/events").json()[0]
    assert task["created_at"] == "2026-06-15T18:00:00+09:00"
    assert held["lease_until"] == "2026-06-15T19:00:00+09:00"
    assert event["at"] == "2026-06-15T18:00:00+09:00"


def test_expired_uses_the_request_time(engine: Engine, settings: Settings) -> None:
    app = create_app(settings, engine)
    with time_machine.travel(NOW, tick=False), TestClient(app) as client:
        task = add(client)
        client.post(f"{API}/tasks/{task['id']}/claim", json={"owner": "x", "for": "1h"})
    with time_machine.travel(NOW + timedelta(hours=2), tick=False), TestClient(app) as client:
        shown = client.get(f"{API}/tasks/{task['id']}").json()
    assert shown["status"] == "RUNNING"
    assert shown["expired"] is True


BIG = 2**63
BAD: list[tuple[str, str, Any, int, str]] = [
    ("post", "/tasks", {}, 422, "title: Field required"),
    ("post", "/tasks", {"title": ""}, 422, "title"),
    ("post", "/tasks", {"title": "x" * 501}, 422, "title"),
    ("post", "/tasks", {"title": "a\nb"}, 422, "one line"),
    ("post", "/tasks", {"title": "t", "body": "b" * 20_001}, 422, "body"),
    ("post", "/tasks", {"title": "t", "body": "\x00"}, 422, "NUL"),
    ("post", "/tasks", {"title": "t", "priority": 10}, 422, "priority"),
    ("post", "/tasks", {"title": "t", "priority": "high"}, 422, "priority"),
    ("post", "/tasks", {"title": "t", "project": "no spaces"}, 422, "project"),
    ("post", "/tasks", {"title": "t", "due_on": "2026-02-30"}, 422, "due_on"),
    ("post", "/tasks", {"title": "t", "due_on": 1_700_000_000}, 422, "YYYY-MM-DD"),
    ("post", "/tasks", {"title": "t", "extra": 1}, 422, "extra"),
    ("post", "/tasks", [1, 2], 422, "valid dictionary"),
    ("get", "/tasks?status=paused", None, 422, "unknown status"),
    ("get", "/tasks?limit=0", None, 422, "limit"),
    ("get", "/tasks?project=a%20b", None, 422, "project"),
    ("get", "/tasks?due_before=soon", None, 422, "due_before"),
    ("get", "/tasks/0", None, 422, "task_id"),
    ("get", f"/tasks/{BIG}", None, 422, "task_id"),
    ("get", "/tasks/abc", None, 422, "task_id"),
    ("get", "/tasks/999", None, 404, "no task 999"),
    ("patch", "/tasks/1", {}, 422, "nothing to change"),
    ("patch", "/tasks/1", {"title": None}, 422, "title cannot be null"),
    ("patch", "/tasks/1", {"priority": -1}, 422, "priority"),
    ("patch", "/tasks/999", {"title": "x"}, 404, "no task 999"),
    ("post", "/tasks/1/claim", {}, 422, "owner"),
    ("post", "/tasks/1/claim", {"owner": ""}, 422, "owner"),
    ("post", "/tasks/1/claim", {"owner": "o" * 201}, 422, "owner"),
    ("post", "/tasks/1/claim", {"owner": "x", "for": "8d"}, 422, "at most 7d"),
    ("post", "/tasks/1/claim", {"owner": "x", "for": "soon"}, 422, "not a duration"),
    ("post", "/tasks/1/claim", {"owner": "x", "for": "0s"}, 422, "more than 0"),
    ("post", "/tasks/1/claim", {"owner": "x", "for": "999999999d999999999d"}, 422, "too long"),
    ("post", "/tasks/1/claim", {"owner": "a\x00"}, 422, "owner"),
    ("post", "/tasks/1/claim", {"owner": "x", "seconds": 0}, 422, "seconds"),
    ("post", "/tasks/1/claim", {"owner": "x", "for": "1h", "seconds": 60}, 422, "not both"),
    ("post", "/tasks/999/claim", {"owner": "x"}, 404, "no task 999"),
    ("post", "/tasks/claim-next", {"owner": "x", "project": "a b"}, 422, "project"),
    ("post", "/tasks/1/renew", {}, 422, "token"),
    ("post", "/tasks/1/renew", {"token": -1}, 422, "token"),
    ("post", "/tasks/1/renew", {"token": BIG}, 422, "token"),
    ("post", "/tasks/1/renew", {"token": 1}, 409, "lease lost: task 1 is READY"),
    ("post", "/tasks/1/complete", {"token": "one"}, 422, "token"),
    ("post", "/tasks/1/complete", {"note": "n" * 2001}, 422, "note"),
    ("post", "/tasks/1/release", {}, 422, "lease token, or force"),
    ("post", "/tasks/1/release", {"token": 1, "force": True}, 422, "not both"),
    ("post", "/tasks/1/release", {"force": True}, 409, "no lease to release"),
    ("post", "/tasks/999/release", {"force": True}, 404, "no task 999"),
    ("post", "/tasks/999/cancel", None, 404, "no task 999"),
    ("get", "/events?limit=501", None, 422, "limit"),
    ("get", "/events?subject=task%3A1%00", None, 422, "NUL"),
    ("get", f"/events?before_id={BIG}", None, 422, "before_id"),
    ("get", "/events?subject=" + "s" * 201, None, 422, "subject"),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "message"), BAD)
def test_bad_input_gets_the_error_shape_and_writes_nothing(
    client: TestClient,
    engine: Engine,
    method: str,
    path: str,
    body: Any,
    status: int,
    message: str,
) -> None:
    add(client)  # task 1, READY
    before = counts(engine)
    kwargs = {} if body is None else {"json": body}
    response = client.request(method.upper(), f"{API}{path}", **kwargs)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"code", "message"}
    assert message in error["message"]
    assert "\n" not in error["message"]
    assert counts(engine) == before


def test_the_openapi_document_describes_the_error_shape(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    claim = doc["paths"]["/api/v1/tasks/{task_id}/claim"]["post"]
    assert claim["responses"]["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorOut"
    }
    assert "409" in claim["responses"] and "404" in claim["responses"]
    claim_body = doc["components"]["schemas"]["ClaimIn"]["properties"]
    assert "for" in claim_body, "the lease length is sent as `for`"


@hyp_settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    title=st.text(max_size=30),
    owner=st.text(max_size=30),
    project=st.one_of(st.none(), st.text(max_size=10)),
    lease=st.one_of(st.none(), st.text(max_size=12), st.integers()),
)
def test_any_text_is_answered_with_a_4xx_or_success_never_a_500(
    client: TestClient, title: str, owner: str, project: str | None, lease: Any
) -> None:
    created = client.post(f"{API}/tasks", json={"title": title, "project": project})
    assert created.status_code in (201, 422), created.text
    claim = client.post(f"{API}/tasks/claim-next", json={"owner": owner, "for": lease})
    assert claim.status_code in (200, 409, 422), claim.text
    if claim.status_code != 200:
        assert set(claim.json()["error"]) == {"code", "message"}


def test_complete_and_claim_next_over_http(client: TestClient) -> None:
    first = add(client, title="first", priority=0)
    second = add(client, title="second", priority=1)
    held = client.post(f"{API}/tasks/claim-next", json={"owner": "api:x"}).json()
    body = {"token": held["lease_token"], "owner": "api:x", "for": "30m", "note": "ok"}
    got = client.post(f"{API}/tasks/{first['id']}/complete-and-claim-next", json=body)
    assert got.status_code == 200, got.text
    assert got.json()["done"]["status"] == "DONE"
    assert got.json()["next"]["id"] == second["id"]
    assert got.json()["next"]["lease_until"] == "2026-06-15T09:30:00+00:00"
    again = client.post(f"{API}/tasks/{first['id']}/complete-and-claim-next", json=body)
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "lease_lost"
    token = got.json()["next"]["lease_token"]
    last = client.post(
        f"{API}/tasks/{second['id']}/complete-and-claim-next",
        json={"token": token, "owner": "api:x"},
    )
    assert (last.status_code, last.json()["next"]) == (200, None)
