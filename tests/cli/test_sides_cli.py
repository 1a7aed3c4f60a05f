"""The side partition on the CLI and in the session hook: a work session
with no project, `ondeck context` and `ondeck task …` in a work directory see the work side's
tasks and reminders only; a task made there is of the work side; a task with no side (the
inbox) is shown to no session."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import time_machine
from sqlalchemy import Engine, select

from ondeck.core import clock
from ondeck.db.tables import tasks
from ondeck.entrypoints.cli import run
from ondeck.work import backlog, schedules
from support.hooks import ONDECK

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
LAWYER = "call the divorce lawyer"


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    work, own, elsewhere = tmp_path / "work", tmp_path / "own", tmp_path / "elsewhere"
    for folder in (work / "notes", own, elsewhere):
        folder.mkdir(parents=True)
    sides = {"work": [str(work)], "personal": [str(own)]}
    monkeypatch.setenv("ONDECK_SIDES", json.dumps(sides))
    monkeypatch.setenv("ONDECK_TZ", "UTC")
    return {"work": work / "notes", "own": own, "elsewhere": elsewhere}


def _seed(engine: Engine, now: datetime) -> None:
    with engine.begin() as conn:
        backlog.create_task(conn, now, title=LAWYER, side="personal", actor="t")
        backlog.create_task(conn, now, title="받은 편지함 inbox task", actor="t")
        backlog.create_task(conn, now, title="work: 배포 준비", side="work", actor="t")
        schedules.create_schedule(
            conn, now, ZoneInfo("UTC"), title="personal pill reminder", rule="daily",
            kind="remind", side="personal", actor="t",
        )  # fmt: skip


@pytest.fixture
def ondeck(db_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    def call(*args: str, cwd: Path) -> tuple[int, str, str]:
        monkeypatch.chdir(cwd)
        with time_machine.travel(NOW, tick=False):
            code = run(["--db", db_url, *args])
        out, err = capsys.readouterr()
        return code, out, err

    return call


def test_context_and_task_commands_in_a_work_directory_see_the_work_side(
    ondeck: Any, engine: Engine, place: dict[str, Path]
) -> None:
    _seed(engine, NOW)
    for brief in ("--brief", "--no-brief"):
        code, out, err = ondeck("context", brief, cwd=place["work"])
        assert code == 0, err
        assert "배포 준비" in out and LAWYER not in out, out
        assert "pill" not in out and "받은 편지함" not in out
        assert "side work" in out
    code, out, err = ondeck("context", "--format", "json", cwd=place["elsewhere"])
    assert code == 0 and json.loads(out)["side_closed"] is True
    assert LAWYER not in out and "배포" not in out
    code, out, err = ondeck("task", "list", "--status", "all", "--json", cwd=place["work"])
    assert code == 0, err
    assert [t["title"] for t in json.loads(out)] == ["work: 배포 준비"]
    code, out, _ = ondeck("task", "list", "--unclassified", "--json", cwd=place["work"])
    assert [t["title"] for t in json.loads(out)] == ["받은 편지함 inbox task"]
    code, out, err = ondeck("task", "list", cwd=place["elsewhere"])
    assert code == 2 and "belongs to no side" in err
    code, out, err = ondeck("task", "add", "메모 write it up", "--json", cwd=place["work"])
    assert code == 0 and json.loads(out)["side"] == "work"
    code, out, err = ondeck("task", "add", "stray", cwd=place["elsewhere"])
    assert code == 2 and "give --side" in err
    code, out, err = ondeck("task", "claim", "--owner", "me", "--json", cwd=place["work"])
    assert code == 0 and json.loads(out)["title"] == "work: 배포 준비"
    code, out, err = ondeck("task", "claim", "--owner", "me", "--json", cwd=place["work"])
    assert code == 0 and json.loads(out)["title"] == "메모 write it up"
    code, out, err = ondeck("task", "claim", "--owner", "me", cwd=place["work"])
    assert code != 0 and "no READY task" in err
    code, out, err = ondeck("schedule", "list", "--json", cwd=place["own"])
    assert [s["title"] for s in json.loads(out)] == ["personal pill reminder"]
    with engine.connect() as conn:
        lawyer = conn.execute(select(tasks).where(tasks.c.title == LAWYER)).one()
        titles = set(conn.execute(select(tasks.c.title)).scalars())
    assert lawyer.status == "READY" and "stray" not in titles


def test_the_brief_of_a_work_session_with_no_project_has_no_personal_task(
    engine: Engine, db_url: str, place: dict[str, Path]
) -> None:
    """The session hook's own path (the bare driver): a work session with no project."""
    _seed(engine, clock.now())
    payload = {
        "session_id": "s-work-1",
        "hook_event_name": "SessionStart",
        "source": "startup",
        "cwd": str(place["work"]),
    }
    env = {
        **os.environ,  # ONDECK_SIDES as `place` set it
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_TZ": "UTC",
    }
    env.pop("ONDECK_SERVER_URL", None)
    result = subprocess.run(
        [ONDECK, "hook", "session-start"], input=json.dumps(payload), capture_output=True,
        text=True, timeout=60, env=env, check=False, cwd=place["work"],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "배포 준비" in context, context
    assert LAWYER not in context and "pill" not in context and "받은 편지함" not in context
