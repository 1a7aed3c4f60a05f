"""The dashboard with sides configured: the Backlog and Today pages show
one side at a time (a selector) and the inbox of tasks with no side, a new task's side is a
required choice, and the owner gives an inbox task its side."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from ondeck.db.tables import tasks
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import load_settings
from ondeck.work import backlog

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
SIDES = {"work": ["/w"], "personal": ["/p"]}
LAWYER = "call the divorce lawyer"


def _seed(engine: Engine) -> dict[str, int]:
    with engine.begin() as conn:
        lawyer = backlog.create_task(conn, NOW, title=LAWYER, side="personal", actor="t")
        work = backlog.create_task(
            conn, NOW, title="회의록 정리 work notes", side="work", actor="t"
        )
        inbox = backlog.create_task(conn, NOW, title="옛 할 일 old task", actor="t")
    return {"lawyer": lawyer.id, "work": work.id, "inbox": inbox.id}


def test_the_dashboard_lists_one_side_shows_the_inbox_and_requires_a_side(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    seeded = _seed(engine)
    settings = load_settings(database_url=db_url, tz="UTC", data_dir=tmp_path, sides=SIDES)
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as client:
        _pages(client, engine, seeded)


def _pages(client: TestClient, engine: Engine, seeded: dict[str, int]) -> None:
    work = client.get("/tasks?side=work").text
    assert "회의록 정리" in work and LAWYER not in work and "옛 할 일" not in work
    inbox = client.get("/tasks?side=(inbox)").text
    assert "옛 할 일 old task" in inbox and LAWYER not in inbox
    today = client.get("/?side=work").text
    assert LAWYER not in today and "회의록 정리" in today
    assert LAWYER in client.get("/?side=personal").text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', work)
    assert csrf
    token = csrf.group(1)
    page = client.post("/tasks", data={"csrf_token": token, "title": "no side given"})
    assert page.status_code == 422 and "give a side" in page.text
    added = client.post(
        "/tasks", data={"csrf_token": token, "title": "개인 일", "side": "personal"},
        follow_redirects=False,
    )  # fmt: skip
    assert added.status_code == 303
    moved = client.post(
        f"/tasks/{seeded['inbox']}/edit",
        data={"csrf_token": token, "title": "옛 할 일 old task", "priority": "2",
              "side": "work"},
        follow_redirects=False,
    )  # fmt: skip
    assert moved.status_code == 303, moved.text
    with engine.connect() as conn:
        sides = dict(conn.execute(select(tasks.c.title, tasks.c.side)).all())
    assert sides["개인 일"] == "personal" and sides["옛 할 일 old task"] == "work"
    assert "no side given" not in sides


def test_the_schedules_page_lists_one_side_and_its_form_requires_one(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    from zoneinfo import ZoneInfo

    from ondeck.db.tables import schedules as schedules_table
    from ondeck.work import schedules

    with engine.begin() as conn:
        for side in ("work", "personal"):
            schedules.create_schedule(
                conn, NOW, ZoneInfo("UTC"), title=f"{side} 주간 weekly", rule="weekly:MON",
                side=side, actor="t",
            )  # fmt: skip
    settings = load_settings(database_url=db_url, tz="UTC", data_dir=tmp_path, sides=SIDES)
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as client:
        page = client.get("/schedules?side=work").text
        assert "work 주간" in page and "personal 주간" not in page
        assert 'href="/calendar.ics?side=work"' in page
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
        assert csrf
        token = csrf.group(1)
        refused = client.post(
            "/schedules", data={"csrf_token": token, "title": "no side", "rule": "daily"}
        )
        assert refused.status_code == 422 and "give a side" in refused.text
        added = client.post(
            "/schedules",
            data={"csrf_token": token, "title": "개인 daily", "rule": "daily", "side": "personal"},
            follow_redirects=False,
        )
        assert added.status_code == 303, added.text
    with engine.connect() as conn:
        made = dict(conn.execute(select(schedules_table.c.title, schedules_table.c.side)).all())
    assert made["개인 daily"] == "personal" and "no side" not in made
