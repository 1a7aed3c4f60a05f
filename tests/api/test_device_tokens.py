"""The API with device tokens: scopes, revocation at once, the actor of each change, and
refusing a burst of wrong tokens from one address (the dashboard's login and calendar feed
too)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from ondeck.db.tables import events, tokens
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import load_settings
from ondeck.system import tokens as device_tokens

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
ADMIN = "s3cret-admin-token-0123456789abcdef0123456789abcdef"
HERE = ("10.0.0.9", 5000)
THERE = ("10.0.0.10", 5000)


@pytest.fixture
def app(engine: Engine, db_url: str, tmp_path) -> FastAPI:  # type: ignore[no-untyped-def]
    settings = load_settings(database_url=db_url, tz="UTC", token=ADMIN, data_dir=tmp_path)
    return create_app(settings, engine)


@pytest.fixture
def at() -> Iterator[time_machine.Coordinates]:
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


@pytest.fixture
def client(app: FastAPI, at: time_machine.Coordinates) -> Iterator[TestClient]:
    with TestClient(app, client=HERE) as client:
        yield client


def _token(engine: Engine, name: str, scope: str = "write", **kw: object) -> str:
    with engine.begin() as conn:
        made = device_tokens.create(conn, NOW, name, scope, actor="cli", **kw)  # type: ignore[arg-type]
    return made.secret


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _add_task(client: TestClient, token: str, title: str = "from the laptop"):  # type: ignore[no-untyped-def]
    return client.post("/api/v1/tasks", json={"title": title}, headers=_bearer(token))


def test_a_read_token_reads_but_cannot_write(client: TestClient, engine: Engine) -> None:
    phone = _token(engine, "phone", "read")
    assert client.get("/api/v1/tasks", headers=_bearer(phone)).status_code == 200
    assert client.get("/api/v1/context", headers=_bearer(phone)).status_code == 200
    refused = _add_task(client, phone)
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["code"] == "forbidden" and "'phone'" in error["message"]
    assert client.get("/api/v1/tasks", headers=_bearer(phone)).json() == []


def test_changes_are_recorded_with_the_token_name(client: TestClient, engine: Engine) -> None:
    laptop = _token(engine, "laptop")
    assert _add_task(client, laptop).status_code == 201
    assert _add_task(client, ADMIN, "from the admin").status_code == 201
    with engine.connect() as conn:
        actors = conn.execute(
            select(events.c.actor).where(events.c.kind == "task.created").order_by(events.c.id)
        ).scalars()
        assert list(actors) == ["api:laptop", "api"]


def test_a_revoked_token_is_refused_at_once(client: TestClient, engine: Engine) -> None:
    laptop = _token(engine, "laptop")
    assert client.get("/api/v1/tasks", headers=_bearer(laptop)).status_code == 200
    with engine.begin() as conn:
        device_tokens.revoke(conn, NOW, "laptop", actor="cli")
    refused = client.get("/api/v1/tasks", headers=_bearer(laptop))
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthorized"


def test_an_expired_or_unknown_token_is_refused(
    client: TestClient, engine: Engine, at: time_machine.Coordinates
) -> None:
    brief = _token(engine, "brief", expires_in=timedelta(hours=1))
    assert client.get("/api/v1/tasks", headers=_bearer(brief)).status_code == 200
    at.shift(timedelta(hours=1))
    assert client.get("/api/v1/tasks", headers=_bearer(brief)).status_code == 401
    assert client.get("/api/v1/tasks", headers=_bearer("odk_nope")).status_code == 401
    assert client.get("/api/v1/tasks").status_code == 401


def test_last_used_is_written_once_a_minute(
    client: TestClient, engine: Engine, at: time_machine.Coordinates
) -> None:
    laptop = _token(engine, "laptop")

    def last_used() -> datetime | None:
        with engine.connect() as conn:
            return conn.execute(select(tokens.c.last_used_at)).scalar_one()

    client.get("/api/v1/tasks", headers=_bearer(laptop))
    assert last_used() == NOW
    at.shift(timedelta(seconds=30))
    client.get("/api/v1/tasks", headers=_bearer(laptop))
    assert last_used() == NOW
    at.shift(timedelta(seconds=31))
    client.get("/api/v1/tasks", headers=_bearer(laptop))
    assert last_used() == NOW + timedelta(seconds=61)


def test_a_burst_of_wrong_tokens_is_refused_from_that_address_only(
    app: FastAPI,
    client: TestClient,
    engine: Engine,
    at: time_machine.Coordinates,
    caplog: pytest.LogCaptureFixture,
) -> None:
    laptop = _token(engine, "laptop")
    with caplog.at_level(logging.WARNING, logger="ondeck"):
        for _ in range(10):
            assert client.get("/api/v1/tasks", headers=_bearer("odk_guess")).status_code == 401
    assert "refusing 10.0.0.9" in caplog.text
    refused = client.get("/api/v1/tasks", headers=_bearer(laptop))
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "60"
    assert refused.json()["error"]["code"] == "too_many_attempts"
    with TestClient(app, client=THERE) as elsewhere:
        assert elsewhere.get("/api/v1/tasks", headers=_bearer(laptop)).status_code == 200
    at.shift(timedelta(seconds=45))
    assert client.get("/api/v1/tasks", headers=_bearer(ADMIN)).headers["Retry-After"] == "15"
    at.shift(timedelta(seconds=15))
    assert client.get("/api/v1/tasks", headers=_bearer(laptop)).status_code == 200


def test_missing_tokens_are_not_counted_as_wrong(client: TestClient) -> None:
    for _ in range(12):
        assert client.get("/api/v1/tasks").status_code == 401
    assert client.get("/api/v1/tasks", headers=_bearer(ADMIN)).status_code == 200


_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def test_the_dashboard_login_refuses_a_burst_too(client: TestClient) -> None:
    page = client.get("/login")
    found = _CSRF.search(page.text)
    assert found
    form = {"next": "/", "csrf_token": found.group(1)}
    for _ in range(10):
        assert client.post("/login", data={**form, "token": "guess"}).status_code == 401
    refused = client.post("/login", data={**form, "token": ADMIN}, follow_redirects=False)
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "60"
    assert "too many wrong tokens" in refused.text
    # The same window as the API's: this address is refused there as well.
    assert client.get("/api/v1/tasks", headers=_bearer(ADMIN)).status_code == 429


def test_the_calendar_feed_takes_a_read_token(client: TestClient, engine: Engine) -> None:
    phone = _token(engine, "phone", "read")
    assert client.get("/calendar.ics", params={"token": phone}).status_code == 200
    assert client.get("/calendar.ics", params={"token": ADMIN}).status_code == 200
    assert client.get("/calendar.ics", params={"token": "odk_nope"}).status_code == 401
