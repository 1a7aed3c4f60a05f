"""The API's health answer, its error shape, and the bearer token."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from ondeck.core import clock
from ondeck.db.migrate import HEAD
from ondeck.entrypoints.api.app import create_app
from ondeck.entrypoints.jobs.loop import Jobs
from ondeck.host.settings import Settings, load_settings


def test_health_says_the_database_is_ok_and_no_jobs_yet(engine: Engine, settings: Settings) -> None:
    with TestClient(create_app(settings, engine)) as client:
        body = client.get("/api/v1/health").json()
    assert body["database"] == "ok"
    assert body["database_kind"] == engine.dialect.name
    assert body["schema_version"] == HEAD
    assert body["jobs_last_tick_at"] is None
    assert body["jobs_ticking"] is False


def test_health_reports_the_heartbeat_age(engine: Engine, settings: Settings) -> None:
    Jobs(engine=engine, settings=settings, steps=[]).tick(clock.now())
    with TestClient(create_app(settings, engine)) as client:
        body = client.get("/api/v1/health").json()
    assert body["jobs_ticking"] is True
    assert 0 <= body["jobs_heartbeat_age_seconds"] < 60


def test_unknown_routes_and_methods_get_the_error_shape(engine: Engine, settings: Settings) -> None:
    with TestClient(create_app(settings, engine)) as client:
        missing = client.get("/api/v1/nothing-here")
        wrong = client.delete("/api/v1/health")
    assert missing.status_code == 404
    assert missing.json() == {"error": {"code": "not_found", "message": "Not Found"}}
    assert wrong.status_code == 405
    assert wrong.json()["error"]["code"] == "method_not_allowed"


def test_an_unreachable_database_is_a_503_json_error(settings: Settings) -> None:
    from ondeck.db.engine import make_engine

    dead = make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")
    with TestClient(create_app(settings, dead)) as client:
        response = client.get("/api/v1/health")
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "unavailable"


@pytest.fixture
def token_settings(db_url: str) -> Settings:
    return load_settings(
        database_url=db_url, tz="UTC", token="s3cret-token-0123456789abcdef0123456789abcdef"
    )


def test_with_a_token_the_api_needs_the_bearer(engine: Engine, token_settings: Settings) -> None:
    with TestClient(create_app(token_settings, engine)) as client:
        none = client.get("/api/v1/health")
        wrong = client.get("/api/v1/health", headers={"Authorization": "Bearer nope"})
        right = client.get(
            "/api/v1/health",
            headers={"Authorization": "Bearer s3cret-token-0123456789abcdef0123456789abcdef"},
        )
    assert none.status_code == 401
    assert none.json()["error"]["code"] == "unauthorized"
    assert wrong.status_code == 401
    assert right.status_code == 200


def test_bodies_over_one_mebibyte_are_refused(engine: Engine, settings: Settings) -> None:
    with TestClient(create_app(settings, engine)) as client:
        response = client.post("/api/v1/health", content=b"x" * (1024 * 1024 + 1))
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"


def test_the_api_description_says_every_body_may_be_refused_with_413(
    engine: Engine, settings: Settings
) -> None:
    """The limit is the middleware's, not a route's: the description still names its answer
    for every operation that takes a body, so a client (and the fuzz test) expects it."""
    with TestClient(create_app(settings, engine)) as client:
        document = client.get("/openapi.json").json()
        refused = client.post(
            "/api/v1/sessions/records",
            content=b"x" * (1024 * 1024 + 1),
            headers={"Content-Type": "application/json"},
        )
    with_body = [
        (path, method, operation["responses"])
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if "requestBody" in operation
    ]
    assert len(with_body) >= 15
    for path, method, responses in with_body:
        assert responses["413"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorOut"
        }, (method, path)
    assert refused.status_code == 413 and refused.json()["error"]["code"] == "too_large"
