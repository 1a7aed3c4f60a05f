"""The server scrubs every record it receives: a hook is not trusted to
have scrubbed what it sends, so `POST /api/v1/sessions/records` stores no `<private>` span
and no secret whatever the record says it already removed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from conftest import NOW
from ondeck.db.tables import session_compactions, sessions
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings
from support.hooks import later, record

SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
RAW = f"배포 끝 <private>현관 비밀번호 4711</private> 토큰 {SECRET} done"


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        yield c


def _raw(rec: dict[str, Any]) -> dict[str, Any]:
    """What a hook that did not scrub would send: the raw text, claiming nothing removed."""
    sent = json.loads(json.dumps({**rec, "at": rec["at"].isoformat()}))
    sent["text"] = {"value": RAW, "chars": len(RAW), "redactions": 0, "kinds": {}}
    return sent


def test_a_record_holding_a_private_span_and_a_secret_is_stored_scrubbed(
    client: TestClient, engine: Engine
) -> None:
    start = json.loads(json.dumps({**(r := record("start", NOW)), "at": r["at"].isoformat()}))
    stop = _raw(record("stop", later(NOW, minutes=1)))
    compact = _raw(record("compact", later(NOW, minutes=2)))
    answer = client.post("/api/v1/sessions/records", json={"records": [start, stop, compact]})
    assert answer.status_code == 200, answer.text
    assert [r["outcome"] for r in answer.json()["results"]] == ["applied"] * 3
    with engine.connect() as conn:
        row = conn.execute(select(sessions)).one()
        [summary] = conn.execute(select(session_compactions)).all()
    stored = json.dumps([row.last_word, summary.summary], ensure_ascii=False)
    assert "배포 끝" in row.last_word and "done" in row.last_word
    assert "4711" not in stored and "현관" not in stored and SECRET not in stored
    assert row.redactions >= 2
