"""The side partition over MCP: `ondeck mcp` started in a work directory
sees and writes the work side's tasks and schedules only, on both stores. A personal task
("call the divorce lawyer") is never claimed, listed or shown there, and a task with no
side (the inbox) is shown to no session."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Engine, select

from mcp import Client
from ondeck.core import clock
from ondeck.db.tables import tasks
from ondeck.work import backlog, schedules
from support.hooks import new_repo
from support.mcp_stdio import params

LAWYER = "call the divorce lawyer"
UTCZ = ZoneInfo("UTC")


def seed(engine: Engine) -> dict[str, int]:
    now = clock.now()
    with engine.begin() as conn:
        lawyer = backlog.create_task(conn, now, title=LAWYER, side="personal", actor="t")
        inbox = backlog.create_task(conn, now, title="상자 속 할 일 (no side yet)", actor="t")
        reminder = schedules.create_schedule(
            conn, now, UTCZ, title="개인 약 먹기 reminder", rule="daily", kind="remind",
            side="personal", actor="t",
        )  # fmt: skip
    return {"lawyer": lawyer.id, "inbox": inbox.id, "reminder": reminder.id}


def text_of(result: Any) -> str:
    return " ".join(getattr(part, "text", "") for part in result.content)


async def _work_session(client: Client, seeded: dict[str, int]) -> dict[str, Any]:
    call = client.call_tool
    got: dict[str, Any] = {}
    got["claim_next"] = await call("claim_task", {})
    got["claim_lawyer"] = await call("claim_task", {"task_id": seeded["lawyer"]})
    got["claim_inbox"] = await call("claim_task", {"task_id": seeded["inbox"]})
    got["complete_lawyer"] = await call("complete_task", {"task_id": seeded["lawyer"]})
    got["list"] = await call("list_tasks", {"status": "all"})
    got["schedules"] = await call("list_schedules", {})
    got["context"] = await call("get_context", {})
    got["add"] = await call("add_task", {"title": "회의 준비 prepare the review"})
    got["add_personal"] = await call("add_task", {"title": "x", "side": "personal"})
    got["add_schedule"] = await call("add_schedule", {"title": "standup", "rule": "daily"})
    got["claim_own"] = await call("claim_task", {})
    return got


def test_a_work_directory_never_claims_lists_or_shows_a_personal_task(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    work, own = tmp_path / "work", tmp_path / "own"
    repo = new_repo(work / "api")
    own.mkdir()
    seeded = seed(engine)
    sides = {"work": [str(work)], "personal": [str(own)]}

    async def main() -> dict[str, Any]:
        async with Client(params(db_url, repo, sides)) as client:
            return await _work_session(client, seeded)

    got = asyncio.run(main())
    # claim_task {} from a work directory: the personal task is not the next one, nor is
    # the inbox's; nothing of the work side is READY yet.
    assert got["claim_next"].is_error
    assert "nothing_claimable" in text_of(got["claim_next"])
    assert "side work" in text_of(got["claim_next"])
    for name in ("claim_lawyer", "claim_inbox", "complete_lawyer"):
        assert got[name].is_error and "not_found" in text_of(got[name]), name
    assert got["list"].structured_content["tasks"] == []
    assert got["schedules"].structured_content["schedules"] == []
    shown = json.dumps(got["context"].structured_content, ensure_ascii=False)
    assert LAWYER not in shown and "개인 약" not in shown and "상자" not in shown
    assert got["context"].structured_content["data"]["side"] == "work"
    made = got["add"].structured_content
    assert made["side"] == "work"
    assert got["add_personal"].is_error and "not this session's" in text_of(got["add_personal"])
    assert got["add_schedule"].structured_content["side"] == "work"
    assert got["claim_own"].structured_content["id"] == made["id"]
    with engine.connect() as conn:
        lawyer = conn.execute(select(tasks).where(tasks.c.id == seeded["lawyer"])).one()
        by_title = dict(conn.execute(select(tasks.c.title, tasks.c.side)).all())
    assert (lawyer.status, lawyer.side, lawyer.lease_owner) == ("READY", "personal", None)
    assert "x" not in by_title


def test_a_directory_of_no_side_sees_no_task_and_writes_to_the_inbox(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    work, own, elsewhere = tmp_path / "work", tmp_path / "own", tmp_path / "elsewhere"
    work.mkdir()
    own.mkdir()
    elsewhere.mkdir()
    seeded = seed(engine)
    with engine.begin() as conn:
        backlog.create_task(conn, clock.now(), title="work: ship it", side="work", actor="t")
    sides = {"work": [str(work)], "personal": [str(own)]}

    async def main() -> dict[str, Any]:
        async with Client(params(db_url, elsewhere, sides)) as client:
            got = {"claim_next": await client.call_tool("claim_task", {})}
            got["list"] = await client.call_tool("list_tasks", {"status": "all"})
            got["context"] = await client.call_tool("get_context", {})
            got["add"] = await client.call_tool("add_task", {"title": "where does this go"})
            got["claim_inbox"] = await client.call_tool("claim_task", {"task_id": seeded["inbox"]})
            return got

    got = asyncio.run(main())
    assert got["claim_next"].is_error
    assert got["list"].structured_content["tasks"] == []
    data = got["context"].structured_content["data"]
    assert data["side_closed"] is True
    assert data["tasks"] == {"running": [], "due": [], "backlog": []} and not data["reminders"]
    assert "belongs to no side" in got["context"].structured_content["markdown"]
    assert got["add"].structured_content["side"] is None  # waits in the inbox
    assert got["claim_inbox"].is_error
