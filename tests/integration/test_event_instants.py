"""Instants inside an event's details (`lease_until`) are shown in ONDECK_TZ like every other
instant, never in UTC: on the CLI, in the API, on the dashboard."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from ondeck.entrypoints.api.app import create_app
from ondeck.entrypoints.cli import run
from ondeck.host.settings import load_settings
from ondeck.system import events
from ondeck.work import backlog, backlog_leases, reaper

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
# The claim's lease ends at 10:00 UTC: 19:00 in Seoul.
SEOUL_END = "2026-06-15T19:00:00+09:00"
UTC_END = "2026-06-15T10:00:00+00:00"


@pytest.fixture
def history(engine: Engine) -> Engine:
    """Task 1 claimed (lease until 10:00 UTC), then reaped after its grace."""
    with engine.begin() as conn:
        task = backlog.create_task(conn, NOW, title="held", actor="cli")
        backlog_leases.claim_task(conn, NOW, task.id, owner="cli:x", duration="1h", actor="cli")
    with engine.begin() as conn:
        reaped = reaper.reap_stale_leases(conn, NOW + timedelta(hours=8), timedelta(hours=6))
    assert [r.task_id for r in reaped] == [1]
    return engine


def test_the_stored_details_stay_utc(history: Engine) -> None:
    """Stored as UTC (an instant), converted only when shown."""
    with history.connect() as conn:
        stored = [e.details.get("lease_until") for e in events.list_events(conn, subject="task:1")]
    assert UTC_END in stored


def test_task_show_gives_them_in_the_zone(
    history: Engine,
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ONDECK_TZ", "Asia/Seoul")
    assert run(["--db", db_url, "task", "show", "1"]) == 0
    shown = capsys.readouterr().out.replace("\n", "").replace("│", "").replace(" ", "")
    assert shown.count(f"lease_until={SEOUL_END}") == 2, shown  # claimed, reaped
    assert "+00:00" not in shown
    assert run(["--db", db_url, "task", "show", "1", "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count(f'"lease_until": "{SEOUL_END}"') == 2 and UTC_END not in out


def test_the_api_and_the_dashboard_give_them_in_the_zone(
    history: Engine, db_url: str, tmp_path: Path
) -> None:
    seoul = load_settings(database_url=db_url, tz="Asia/Seoul", data_dir=tmp_path / "data")
    with time_machine.travel(NOW, tick=False), TestClient(create_app(seoul, history)) as c:
        api = c.get("/api/v1/events", params={"subject": "task:1"}).json()
        page = c.get("/tasks/1").text
        activity = c.get("/activity").text
    until = [e["details"]["lease_until"] for e in api if "lease_until" in e["details"]]
    assert until == [SEOUL_END, SEOUL_END]
    for html in (page, activity):
        assert html.count(f"lease_until={SEOUL_END}") == 2 and UTC_END not in html
