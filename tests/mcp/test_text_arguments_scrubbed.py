"""Every MCP tool argument that takes a text stores it scrubbed.

The arguments are found from the tools' own input schemas (a string that is not a date, a
lease length, a rule or a fixed choice), so an argument added later is walked too; each gets
a text with secrets in it, the MCP client's name too, and the database is then read back,
every table and column, with raw SQL. A tool error stores nothing, which passes too.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import Engine

from mcp import Client
from ondeck.entrypoints.mcp.tools import build_server
from ondeck.host.settings import Settings
from support.scrub_walk import assert_scrubbed, markers, text_for, token

NOT_TEXT = {"rule", "duration", "for"}
NAMES = {"project", "side", "session", "to_side"}
READS = {"get_context", "list_tasks", "list_schedules", "recall_memory", "list_notes"}


def _is_text(prop: dict[str, Any]) -> bool:
    variants = prop.get("anyOf", [prop])
    strings = [v for v in variants if v.get("type") == "string"]
    described = prop.get("description", "")
    dated = "YYYY-MM-DD" in described or "15m" in described
    return bool(strings) and not dated and not any("enum" in v for v in strings)


async def _walk(client: Client, engine: Engine) -> tuple[list[str], int]:
    found: list[str] = []
    accepted = 0
    before = markers(engine)
    listed = await client.list_tools()
    for tool in listed.tools:
        if tool.name in READS:
            continue
        schema = tool.input_schema
        for name, prop in schema.get("properties", {}).items():
            if name in NOT_TEXT or not _is_text(prop):
                continue
            label = f"mcp {tool.name}.{name}"
            found.append(f"{tool.name}.{name}")
            task = await client.call_tool("add_task", {"title": "plain"})
            task_id = task.structured_content["id"]
            if tool.name in ("complete_and_claim_next", "claim_task"):
                await client.call_tool("add_task", {"title": "next"})
            held = await client.call_tool("claim_task", {"task_id": task_id})
            lease = (held.structured_content or {}).get("lease_token", 1)
            samples = {"title": "x", "rule": "daily", "text": "x", "task_id": task_id}
            samples.update(token=lease, schedule_id=1, note_id=1, query="x")
            if tool.name == "claim_task":
                samples["task_id"] = task_id + 1
            required = {k: samples.get(k, "x") for k in schema.get("required", [])}
            value = token(label) if name in NAMES else text_for(label)
            result = await client.call_tool(tool.name, {**required, name: value})
            accepted += not result.is_error
            before = assert_scrubbed(engine, label, before, accepted=False)
    return found, accepted


def test_every_text_argument_is_stored_scrubbed(engine: Engine, settings: Settings) -> None:
    async def main() -> tuple[list[str], int]:
        async with Client(build_server(settings, engine)) as client:
            await client.call_tool("add_schedule", {"title": "plain", "rule": "daily"})
            return await _walk(client, engine)

    found, accepted = asyncio.run(main())
    assert {
        "add_task.title",
        "add_task.body",
        "add_schedule.title",
        "add_schedule.body",
        "complete_task.note",
        "remember.text",
    } <= set(found), found
    assert accepted >= 6, (accepted, found)
