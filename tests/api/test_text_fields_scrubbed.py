"""Every API body field that takes a text stores it scrubbed.

The fields are found by walking the app's own OpenAPI document (a string field of a write's
JSON body that is not a date, a lease length, a rule or a fixed choice), so a field added
later is walked too; each gets a text with secrets in it, and the database is read back,
every table and column, with raw SQL. A refusal (4xx) stores nothing, which passes too.
Records and imports (lists of objects) are walked by tests/cli/test_hook_fields_scrubbed.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings
from support.scrub_walk import assert_scrubbed, markers, text_for, token
from support.walks import openapi_document, resolve

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
API = "/api/v1"
# Not free text: a rule the parser accepts, a lease length; enums are found by `enum`.
NOT_TEXT = {"rule", "for"}
# Fields whose values are names (a project, a side, a session's id): a token alone.
NAMES = {"project", "side", "to_side", "session"}


def _is_text(doc: dict[str, Any], schema: dict[str, Any]) -> bool:
    variants = [resolve(doc, s) for s in resolve(doc, schema).get("anyOf", [schema])]
    strings = [s for s in variants if s.get("type") == "string"]
    return bool(strings) and not any("format" in s or "enum" in s for s in strings)


def _fields() -> list[tuple[str, str, str, dict[str, Any]]]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        doc = openapi_document(tmp)
    found = []
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            if method not in ("post", "patch", "put"):
                continue
            content = op.get("requestBody", {}).get("content", {})
            body = content.get("application/json", {}).get("schema")
            if body is None:
                continue
            body = resolve(doc, resolve(doc, body).get("anyOf", [body])[0])
            for name, prop in body.get("properties", {}).items():
                if name not in NOT_TEXT and _is_text(doc, prop):
                    found.append((method, path, name, body))
    return found


FIELDS = _fields()


def _id(field: tuple[str, str, str, dict[str, Any]]) -> str:
    return f"{field[0].upper()} {field[1]} {field[2]}"


def test_the_walk_finds_the_text_fields_we_know() -> None:
    assert {
        "POST /api/v1/tasks title",
        "POST /api/v1/tasks body",
        "PATCH /api/v1/tasks/{task_id} title",
        "POST /api/v1/tasks/{task_id}/claim owner",
        "POST /api/v1/tasks/{task_id}/complete note",
        "POST /api/v1/schedules title",
        "PATCH /api/v1/schedules/{schedule_id} body",
        "POST /api/v1/notes text",
        "POST /api/v1/notes/{note_id}/wrong reason",
        "POST /api/v1/handoffs git_root",
    } <= {_id(f) for f in FIELDS}


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        yield c


def _made(client: TestClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(API + path, json=body)
    assert response.status_code in (200, 201), response.text
    return dict(response.json())


def _target(client: TestClient, path: str) -> tuple[str, dict[str, Any]]:
    """A fresh item for `path` to act on, and what its body needs besides the field."""
    extra: dict[str, Any] = {}
    if "{task_id}" in path:
        task = _made(client, "/tasks", {"title": "plain"})
        if path.endswith(("/renew", "/complete", "/complete-and-claim-next", "/release")):
            held = _made(client, f"/tasks/{task['id']}/claim", {"owner": "api:w"})
            extra["token"] = held["lease_token"]
        path = path.replace("{task_id}", str(task["id"]))
    if "{schedule_id}" in path:
        schedule = _made(client, "/schedules", {"title": "plain", "rule": "daily"})
        path = path.replace("{schedule_id}", str(schedule["id"]))
    if "{note_id}" in path:
        note = _made(client, "/notes", {"text": "plain"})
        path = path.replace("{note_id}", str(note["id"]))
    if path.endswith("/claim-next") or path.endswith("/complete-and-claim-next"):
        _made(client, "/tasks", {"title": "next"})
    path = path.replace("{ref}", "1")
    return path, extra


def test_every_text_field_is_stored_scrubbed(client: TestClient, engine: Engine) -> None:
    before = markers(engine)
    accepted = 0
    for method, path, name, body in FIELDS:
        label = f"api {method} {path} {name}"
        url, extra = _target(client, path)
        value = token(label) if name in NAMES else text_for(label)
        required = {k: "x" for k in body.get("required", []) if k != name}
        if "rule" in required:
            required["rule"] = "daily"
        if "owner" in required:
            required["owner"] = "api:w"
        response = client.request(method, url, json={**required, **extra, name: value})
        assert response.status_code < 500, (label, response.text)
        accepted += response.status_code < 300
        before = assert_scrubbed(engine, label, before, accepted=False)
    assert accepted >= 15, accepted
