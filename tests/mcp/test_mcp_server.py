"""The MCP tools, driven by the official client in-process and over stdio as a subprocess."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters
from sqlalchemy import Engine, select

from mcp import Client
from ondeck.db.engine import make_engine
from ondeck.db.tables import events, tasks
from ondeck.entrypoints.mcp.tools import build_server
from ondeck.host.settings import Settings, load_settings

ONDECK = str(Path(sys.executable).with_name("ondeck"))

TOOLS = {
    "get_context",
    "list_tasks",
    "add_task",
    "claim_task",
    "renew_lease",
    "complete_task",
    "complete_and_claim_next",
    "release_task",
    "list_schedules",
    "add_schedule",
    "pull_schedule_now",
}


async def _session(client: Client) -> dict[str, Any]:
    listed = await client.list_tools()
    names = {tool.name for tool in listed.tools}
    added = await client.call_tool("add_task", {"title": "write the report", "priority": 1})
    claimed = await client.call_tool("claim_task", {})
    token = claimed.structured_content["lease_token"]
    task_id = claimed.structured_content["id"]
    wrong = await client.call_tool("complete_task", {"task_id": task_id, "token": token + 7})
    done = await client.call_tool("complete_task", {"task_id": task_id, "token": token})
    await client.call_tool("add_task", {"title": "one"})
    await client.call_tool("add_task", {"title": "two"})
    one = (await client.call_tool("claim_task", {})).structured_content
    done_next = await client.call_tool(
        "complete_and_claim_next", {"task_id": one["id"], "token": one["lease_token"]}
    )
    bad_rule = await client.call_tool("add_schedule", {"title": "eom", "rule": "monthly:31"})
    bad_kind = await client.call_tool(
        "add_schedule", {"title": "x", "rule": "daily", "kind": "Remind"}
    )
    schedule = await client.call_tool(
        "add_schedule", {"title": "weekly check", "rule": "weekly: mon", "kind": "remind"}
    )
    pulled = await client.call_tool(
        "pull_schedule_now", {"schedule_id": schedule.structured_content["id"]}
    )
    context = await client.call_tool("get_context", {})
    return {
        "names": names,
        "added": added,
        "claimed": claimed,
        "wrong": wrong,
        "done": done,
        "done_next": done_next,
        "bad_rule": bad_rule,
        "bad_kind": bad_kind,
        "add_schedule": next(t for t in listed.tools if t.name == "add_schedule"),
        "schedule": schedule,
        "pulled": pulled,
        "context": context,
    }


def _check(results: dict[str, Any], engine: Engine, owner_prefix: str) -> None:
    assert results["names"] >= TOOLS
    assert results["added"].structured_content["title"] == "write the report"
    claimed = results["claimed"].structured_content
    assert claimed["status"] == "RUNNING"
    assert claimed["lease_owner"].startswith(owner_prefix)
    assert results["wrong"].is_error
    assert "lease_lost" in results["wrong"].content[0].text
    assert results["done"].structured_content["status"] == "DONE"
    both = results["done_next"].structured_content
    assert both["done"]["status"] == "DONE"
    assert both["next"]["title"] == "two"
    assert both["next"]["lease_owner"].startswith("mcp:")
    assert results["bad_rule"].is_error
    assert "not every month" in results["bad_rule"].content[0].text
    assert results["bad_kind"].is_error
    assert "Input should be 'task', 'remind' or 'backup'" in results["bad_kind"].content[0].text
    schema = results["add_schedule"].input_schema
    assert schema["$defs"]["ScheduleKind"]["enum"] == ["task", "remind", "backup"]
    assert schema["properties"]["kind"]["default"] == "task"
    assert results["schedule"].structured_content["rule"] == "weekly:MON"
    assert results["pulled"].structured_content["schedule"]["next_due"] is not None
    context = results["context"].structured_content
    assert "# On deck" in context["markdown"]
    assert context["data"]["reminders"][0]["status"] == "pending"
    with engine.connect() as conn:
        statuses = conn.execute(select(tasks.c.status).order_by(tasks.c.id)).scalars().all()
        actors = set(conn.execute(select(events.c.actor)).scalars())
    assert statuses == ["DONE", "DONE", "RUNNING"]
    assert all(actor.startswith("mcp:") for actor in actors)


def test_tools_in_process(engine: Engine, settings: Settings) -> None:
    async def main() -> dict[str, Any]:
        async with Client(build_server(settings, engine)) as client:
            return await _session(client)

    _check(asyncio.run(main()), engine, "mcp:")


@pytest.mark.slow
def test_tools_over_stdio_as_a_subprocess(engine: Engine, db_url: str) -> None:
    params = StdioServerParameters(
        command=ONDECK,
        args=["mcp"],
        env={**os.environ, "ONDECK_DATABASE_URL": db_url, "ONDECK_TZ": "UTC"},
    )

    async def main() -> dict[str, Any]:
        async with Client(params) as client:
            return await _session(client)

    _check(asyncio.run(main()), engine, "mcp:")


def test_servers_of_one_process_share_their_tools_and_serve_each_its_own_store(
    engine: Engine, settings: Settings, sqlite_template: Path, tmp_path: Path
) -> None:
    """The tools are made once a process (entrypoints/mcp/toolbox.py): two servers over two
    databases, called at once, each write and read their own."""
    other_path = tmp_path / "other.db"
    shutil.copyfile(sqlite_template, other_path)
    other_engine = make_engine(f"sqlite:///{other_path}")
    other = load_settings(database_url=f"sqlite:///{other_path}", tz="UTC")

    async def use(server: Any, title: str) -> list[str]:
        async with Client(server) as client:
            for n in range(5):
                await client.call_tool("add_task", {"title": f"{title} {n}"})
                await asyncio.sleep(0)
            listed = await client.call_tool("list_tasks", {})
            return [t["title"] for t in listed.structured_content["tasks"]]

    async def main() -> tuple[list[str], list[str]]:
        one, two = build_server(settings, engine), build_server(other, other_engine)
        return await asyncio.gather(use(one, "한국어 일"), use(two, "other work"))

    try:
        here, there = asyncio.run(main())
    finally:
        other_engine.dispose()
    assert sorted(here) == [f"한국어 일 {n}" for n in range(5)]
    assert sorted(there) == [f"other work {n}" for n in range(5)]
