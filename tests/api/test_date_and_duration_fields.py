"""Every API field and query parameter that takes a date or a lease length refuses what it
cannot carry: 422 `{"error": …}` with the reason, nothing written, never a 500.

The inputs are found by walking the app's own OpenAPI document (a date is `format: date`; a
lease length is a body field documented with `15m`, or the `seconds` field next to it), so a
field added later is held to the same rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from ondeck.core.validation import DATE_MAX, DATE_MIN
from ondeck.db.tables import events, notes, schedules, tasks
from ondeck.entrypoints.api.app import create_app
from ondeck.entrypoints.api.models import DAY_PATTERN
from ondeck.host.settings import Settings
from support.bad_inputs import BAD_DATES, BAD_DURATIONS, EDGE_DATES, edge_refusal
from support.walks import openapi_document, resolve

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
API = "/api/v1"
SAMPLES: dict[str, Any] = {"title": "x", "rule": "weekly:MON", "owner": "api:x", "token": 1}


def _variants(doc: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    schema = resolve(doc, schema)
    return [resolve(doc, s) for s in schema.get("anyOf", [schema])]


def _is_date(doc: dict[str, Any], schema: dict[str, Any]) -> bool:
    return any(s.get("format") == "date" for s in _variants(doc, schema))


def _inputs(doc: dict[str, Any]) -> Iterator[tuple[str, str, str, str, dict[str, Any]]]:
    """(kind, method, path, where:name, the operation's body schema or {}) for every input."""
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            for param in op.get("parameters", []):
                if param["in"] == "query" and _is_date(doc, param["schema"]):
                    yield "date", method, path, f"query:{param['name']}", {}
            content = op.get("requestBody", {}).get("content", {})
            body = content.get("application/json", {}).get("schema")
            if body is None:
                continue
            body = _variants(doc, body)[0]
            for name, prop in body.get("properties", {}).items():
                if _is_date(doc, prop):
                    yield "date", method, path, f"body:{name}", body
                elif "15m" in prop.get("description", ""):
                    yield "duration", method, path, f"body:{name}", body


def _found() -> list[tuple[str, str, str, str, dict[str, Any]]]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return list(_inputs(openapi_document(tmp)))


INPUTS = _found()
DATES = [i[1:] for i in INPUTS if i[0] == "date"]
DURATIONS = [i[1:] for i in INPUTS if i[0] == "duration"]


def _id(item: tuple[str, str, str, dict[str, Any]]) -> str:
    return f"{item[0].upper()} {item[1]} {item[2]}"


def test_the_walk_finds_the_inputs_we_know() -> None:
    """Not vacuous: the known date fields and lease lengths are among those found."""
    found = {_id(item) for item in DATES}
    assert {
        "POST /api/v1/tasks body:due_on",
        "PATCH /api/v1/tasks/{task_id} body:due_on",
        "GET /api/v1/tasks query:due_before",
        "POST /api/v1/schedules body:start_on",
        "PATCH /api/v1/schedules/{schedule_id} body:start_on",
        "GET /api/v1/rules/check query:start",
        "POST /api/v1/notes body:expires_on",
        "PATCH /api/v1/notes/{note_id} body:expires_on",
    } <= found
    assert {
        "POST /api/v1/tasks/{task_id}/claim body:for",
        "POST /api/v1/tasks/claim-next body:for",
        "POST /api/v1/tasks/{task_id}/renew body:for",
        "POST /api/v1/tasks/{task_id}/complete-and-claim-next body:for",
    } <= {_id(item) for item in DURATIONS}


def test_the_documented_pattern_is_the_range() -> None:
    """The OpenAPI pattern says the same range the validator enforces."""
    pattern = re.compile(DAY_PATTERN)
    assert pattern.match(DATE_MIN.isoformat()) and pattern.match(DATE_MAX.isoformat())
    for outside in ("1899-12-31", "9000-01-01", "0001-01-01", "9999-12-31"):
        assert not pattern.match(outside)


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    """Task 1 (RUNNING with token 1), task 2 (READY), schedule 1 and note 1 exist."""
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        for path, body in (
            ("/tasks", {"title": "held"}),
            ("/tasks", {"title": "ready"}),
            ("/tasks/1/claim", {"owner": "api:x"}),
            ("/schedules", {"title": "weekly", "rule": "weekly:MON"}),
            ("/notes", {"text": "kept"}),
        ):
            assert c.post(API + path, json=body).status_code in (200, 201)
        yield c


def _request(client: TestClient, method: str, path: str, where: str, body: dict, value: Any):
    url = path.replace("{task_id}", "1").replace("{schedule_id}", "1").replace("{note_id}", "1")
    source, name = where.split(":")
    payload = {k: SAMPLES.get(k, "x") for k in body.get("required", [])}
    if source == "query":
        rule = {"rule": "weekly:MON"} if path.endswith("/rules/check") else {}
        return client.request(method, url, params={**rule, name: value})
    return client.request(method, url, json={**payload, name: value})


def _counts(engine: Engine) -> tuple[int, ...]:
    with engine.connect() as conn:
        return tuple(
            conn.execute(select(func.count()).select_from(table)).scalar_one()
            for table in (events, tasks, schedules, notes)
        )


@pytest.mark.parametrize(("method", "path", "where", "body"), DATES, ids=map(_id, DATES))
def test_every_date_input_refuses_dates_it_cannot_carry(
    method: str, path: str, where: str, body: dict, client: TestClient, engine: Engine
) -> None:
    before = _counts(engine)
    for value, expected in BAD_DATES:
        response = _request(client, method, path, where, body, value)
        assert response.status_code == 422, (value, response.text)
        error = response.json()["error"]
        assert error["code"] == "invalid_input" and expected in error["message"], (value, error)
    assert _counts(engine) == before


@pytest.mark.parametrize(("method", "path", "where", "body"), DATES, ids=map(_id, DATES))
def test_every_date_input_takes_the_edges_of_the_range(
    method: str, path: str, where: str, body: dict, client: TestClient
) -> None:
    for value in EDGE_DATES:
        response = _request(client, method, path, where, body, value)
        refusal = edge_refusal(where, value)
        if refusal is not None:
            assert response.status_code == 422 and refusal in response.text, response.text
            continue
        assert response.status_code in (200, 201), (value, response.text)


@pytest.mark.parametrize(("method", "path", "where", "body"), DURATIONS, ids=map(_id, DURATIONS))
def test_every_lease_length_refuses_what_a_lease_cannot_be(
    method: str, path: str, where: str, body: dict, client: TestClient, engine: Engine
) -> None:
    before = _counts(engine)
    for value, expected in BAD_DURATIONS:
        response = _request(client, method, path, where, body, value)
        assert response.status_code == 422, (value, response.text)
        assert expected in response.json()["error"]["message"], (value, response.text)
    for seconds in (0, 7 * 86400 + 1, 10**30):
        response = _request(client, method, path, "body:seconds", body, seconds)
        assert response.status_code == 422, (seconds, response.text)
    assert _counts(engine) == before
