"""The boundary every route shares (api/boundary.py), request by request, on both stores:
Host, Origin and Referer, Sec-Fetch-Site, and JSON bodies for the API. The browser's own
behaviour is tests/web/test_cross_origin.py; these are the rules, over every route.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from ondeck.db.tables import events, schedules, tasks
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings
from security.test_security import concrete, routes
from web.conftest import csrf_of


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings, engine)) as made:
        made.post("/api/v1/tasks", json={"title": "할 일"})
        made.post("/api/v1/schedules", json={"title": "회의", "rule": "daily"})
        yield made


def _counts(engine: Engine) -> tuple[int, ...]:
    with engine.connect() as conn:
        return tuple(
            conn.execute(select(func.count()).select_from(t)).scalar_one()
            for t in (tasks, schedules, events)
        )


def test_every_route_refuses_a_foreign_host_before_routing(
    client: TestClient, engine: Engine
) -> None:
    before = _counts(engine)
    found = routes(client.app)  # type: ignore[arg-type]
    assert ("GET", "/api/v1/export") in found and ("POST", "/mcp") in found
    for method, path in [*found, ("GET", "/no/such/page")]:
        for host in ("rebind.attacker.example", "testserver.attacker.example", "testserver:81"):
            answer = client.request(method, concrete(path), headers={"Host": host}, json={})
            assert answer.status_code == 421, (method, path, host, answer.status_code)
            assert answer.json()["error"]["code"] == "misdirected_request"
    assert _counts(engine) == before


def test_loopback_names_and_the_own_address_are_answered(client: TestClient) -> None:
    for host in ("testserver", "localhost", "127.0.0.1", "127.0.0.2", "[::1]", "LocalHost"):
        assert client.get("/api/v1/health", headers={"Host": host}).status_code == 200, host


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://127.0.0.1:9000"},
        {"Origin": "http://testserver:8080"},
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Referer": "http://evil.example/page"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
    ids=["other-port", "same-host-other-port", "other-site", "null", "referer", "xsite", "ssite"],
)
def test_a_write_from_another_origin_is_refused_and_changes_nothing(
    client: TestClient, engine: Engine, headers: dict[str, str]
) -> None:
    before = _counts(engine)
    api = client.post("/api/v1/schedules/1/pause", headers=headers, json={})
    assert api.status_code == 403 and api.json()["error"]["code"] == "forbidden"
    added = client.post("/api/v1/tasks", headers=headers, json={"title": "위조"})
    assert added.status_code == 403
    token = csrf_of(client)
    form = client.post(
        "/schedules/1/pause", headers=headers, data={"csrf_token": token}, follow_redirects=False
    )
    assert form.status_code == 403
    assert _counts(engine) == before


def test_a_write_from_the_same_origin_passes(client: TestClient, engine: Engine) -> None:
    same = {"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"}
    assert client.post("/api/v1/schedules/1/pause", headers=same, json={}).status_code == 200
    token = csrf_of(client)
    form = client.post(
        "/schedules/1/resume", headers=same, data={"csrf_token": token}, follow_redirects=False
    )
    assert form.status_code == 303
    with engine.connect() as conn:
        assert conn.execute(select(schedules.c.enabled)).scalar_one()


def test_api_bodies_must_be_json_unless_a_header_no_form_can_send(
    client: TestClient, engine: Engine
) -> None:
    before = _counts(engine)
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        answer = client.post(
            "/api/v1/tasks", content=b'{"title": "simple"}', headers={"Content-Type": kind}
        )
        assert answer.status_code == 415, kind
        assert answer.json()["error"]["code"] == "unsupported_media_type"
    untyped = client.post("/api/v1/tasks", content=b'{"title": "a blob"}')
    assert untyped.status_code == 415, "a Blob body of a no-cors fetch has no type"
    assert _counts(engine) == before
    # A client that sends a header no form can (a bearer, the CLI's own) is not a browser's.
    marked = client.post(
        "/api/v1/tasks",
        content=b'{"title": "marked"}',
        headers={"Content-Type": "text/plain", "X-Ondeck-Client": "cli"},
    )
    assert marked.status_code != 415
    # No body at all (pause, resume) needs no type.
    assert client.post("/api/v1/schedules/1/pause").status_code == 200


def test_a_page_of_another_site_may_link_but_not_load(client: TestClient) -> None:
    embedded = client.get(
        "/calendar.ics", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
    )
    assert embedded.status_code == 403
    linked = client.get("/", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"})
    assert linked.status_code == 200
    framed = client.get(
        "/",
        headers={
            "Sec-Fetch-Site": "cross-site",
            "Sec-Fetch-Mode": "navigate",
            "Sec-Fetch-Dest": "iframe",
        },
    )
    assert framed.status_code == 403
    assert client.get("/", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200
