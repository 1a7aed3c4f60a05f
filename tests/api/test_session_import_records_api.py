"""Import records at the hooks' intake (`POST /api/v1/sessions/records`, `"kind": "import"`:
a client's `session import`): each checked as a hook's record is, its texts scrubbed again
by the server, stored as a local import stores it; a malformed one is rejected with the
reason and nothing of it stored, the others applied. Both stores."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from conftest import NOW
from ondeck.db.tables import session_compactions, sessions
from ondeck.entrypoints.api.app import create_app
from ondeck.host.quick_settings import HookConfig
from ondeck.host.settings import Settings
from ondeck.sessions.imported_session import SessionImport
from ondeck.sessions.transcript_read import Transcript

API = "/api/v1"
TOKEN = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        yield c


def made(tmp_path: Path, session: str = "5e1f0c2a-7b3d-4e8f-9a60-1c2d3e4f5a6b") -> dict[str, Any]:
    """An import record as a client makes it (SessionImport.to_record)."""
    found = Transcript(
        path=str(tmp_path / f"{session}.jsonl"),
        session_id=session,
        first_at=NOW - timedelta(days=3),
        last_at=NOW - timedelta(days=2),
        cwd=str(tmp_path),
        branch="main",
        version="2.1.332",
        last_word={"text": "끝났어요", "at": None},
        summaries=[{"at": NOW - timedelta(days=2, hours=1), "trigger": "auto", "text": "요약"}],
    )
    record = SessionImport("claude-code", found, HookConfig(), NOW).to_record()
    return json.loads(json.dumps(record))


def post(client: TestClient, *records: Any) -> list[dict[str, Any]]:
    answer = client.post(f"{API}/sessions/records", json={"records": list(records)})
    assert answer.status_code == 200, answer.text
    return list(answer.json()["results"])


def stored(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        return [dict(r) for r in conn.execute(select(sessions)).mappings()]


def test_an_import_record_is_stored_as_a_local_import_and_twice_changes_nothing(
    client: TestClient, engine: Engine, tmp_path: Path
) -> None:
    record = made(tmp_path)
    # A client that did not scrub: the server does.
    record["text"]["value"] = f"끝났어요 {TOKEN}"
    [result] = post(client, record)
    assert (result["outcome"], result["imported"]) == ("applied", "sessions"), result
    assert result["redactions"] >= 1
    [row] = stored(engine)
    assert row["imported"] is True and row["end_reason"] == "imported"
    assert TOKEN not in row["last_word"] and row["agent_version"] == "2.1.332"
    assert row["side"] is None  # no sides here: one pool
    with engine.connect() as conn:
        [summary] = conn.execute(select(session_compactions)).mappings()
    assert (summary["trigger"], summary["summary"]) == ("auto", "요약")
    [again] = post(client, record)
    assert (again["outcome"], again["imported"]) == ("duplicate", "unchanged")
    assert len(stored(engine)) == 1


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"version": "\u001b[2J2.1"}, "record version must be a short word"),
        ({"started_at": (NOW + timedelta(days=1)).isoformat()}, "started_at is after at"),
        ({"at": (NOW + timedelta(days=9)).isoformat()}, "at is in the future"),
        ({"summaries": [{"value": "x", "trigger": "a\nb"}]}, "summary trigger"),
        ({"summaries": "many"}, "summaries must be a list"),
        ({"text": {"value": "x" * 5_000}}, "record text must be at most 4000"),
        ({"capture": False}, "capture and its classification's capture differ"),
        ({"facts": {"cwd": 7}}, "facts.cwd"),
        ({"sidechain_entries": -1}, "sidechain_entries must be a count"),
        ({"session": ""}, "record session must be a session id"),
        ({"summaries": [1]}, "summaries must be objects"),
        ({"text": "끝"}, "record text must be an object"),
        ({"unknown_records": {"x": -1}}, "must be a count"),
        ({"v": 2}, "record version '2' is not 1"),
        ({"at": "yesterday"}, "ISO-8601"),
    ],
)
def test_a_malformed_import_record_is_rejected_alone_with_the_reason(
    client: TestClient, engine: Engine, tmp_path: Path, change: dict[str, Any], said: str
) -> None:
    good = made(tmp_path, "6f2a1d3b-8c4e-4f90-a1b2-c3d4e5f6a7b8")
    bad, ok = post(client, {**made(tmp_path), **change}, good)
    assert bad["outcome"] == "rejected" and said in bad["reason"], bad
    assert ok["imported"] == "sessions"
    assert [r["external_id"] for r in stored(engine)] == [good["session"]]


def test_a_lone_surrogate_in_an_import_record_is_rejected_not_a_500(
    client: TestClient, engine: Engine, tmp_path: Path
) -> None:
    record = made(tmp_path)
    body = (
        json.dumps({"records": [record]})
        .replace("끝났어요", "")
        .replace('"value": "\\ub05d\\ub0ac\\uc5b4\\uc694"', '"value": "\\ud800 끝"')
    )
    assert "\\ud800" in body
    answer = client.post(
        f"{API}/sessions/records", content=body, headers={"Content-Type": "application/json"}
    )
    assert answer.status_code in (200, 422), answer.text
    if answer.status_code == 200:
        [result] = answer.json()["results"]
        assert result["outcome"] == "rejected" and "not valid text" in result["reason"]
    assert stored(engine) == []
