"""Every MCP tool argument that takes a date or a lease length refuses what it cannot carry:
a tool error with the reason (the server keeps running), nothing written.

The arguments are found from the tools' own input schemas (a date is documented
`YYYY-MM-DD`, a lease length `15m` or named `duration`), so an argument added later is
held to the same rules.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from mcp import Client
from ondeck.db.tables import events, schedules, tasks
from ondeck.entrypoints.mcp.tools import build_server
from ondeck.host.settings import Settings
from support.bad_inputs import BAD_DATES, BAD_DURATIONS, EDGE_DATES, edge_refusal

SAMPLES: dict[str, Any] = {
    "title": "x",
    "rule": "weekly:MON",
    "task_id": 1,
    "token": 1,
    "schedule_id": 1,
}


def _counts(engine: Engine) -> tuple[int, ...]:
    with engine.connect() as conn:
        return tuple(
            conn.execute(select(func.count()).select_from(table)).scalar_one()
            for table in (events, tasks, schedules)
        )


async def _walk(client: Client, engine: Engine) -> dict[str, Any]:
    """Seed task 1 (RUNNING, token 1), task 2 and schedule 1; then try every bad value on
    every date and lease-length argument, and the edge dates on every date argument."""
    await client.call_tool("add_task", {"title": "held"})
    await client.call_tool("add_task", {"title": "ready"})
    await client.call_tool("claim_task", {"task_id": 1})
    await client.call_tool("add_schedule", {"title": "weekly", "rule": "weekly:MON"})
    found: dict[str, list[str]] = {"date": [], "duration": []}
    refusals: list[tuple[str, str, bool, str]] = []
    edges: list[tuple[str, str | None, bool, str]] = []
    counts_before = _counts(engine)
    listed = await client.list_tools()
    for tool in listed.tools:
        schema = tool.input_schema
        required = {k: SAMPLES.get(k, "x") for k in schema.get("required", [])}
        for name, prop in schema.get("properties", {}).items():
            text = prop.get("description", "")
            is_duration = "15m" in text or name == "duration"
            kind = "date" if "YYYY-MM-DD" in text else "duration" if is_duration else None
            if kind is None:
                continue
            found[kind].append(f"{tool.name}.{name}")
            bad = BAD_DATES if kind == "date" else BAD_DURATIONS
            for value, expected in bad:
                result = await client.call_tool(tool.name, {**required, name: value})
                message = result.content[0].text if result.content else ""
                refusals.append((f"{tool.name}.{name}={value}", expected, result.is_error, message))
    counts_after = _counts(engine)
    for tool in listed.tools:
        schema = tool.input_schema
        required = {k: SAMPLES.get(k, "x") for k in schema.get("required", [])}
        for name, prop in schema.get("properties", {}).items():
            if "YYYY-MM-DD" in prop.get("description", ""):
                for value in EDGE_DATES:
                    result = await client.call_tool(tool.name, {**required, name: value})
                    message = result.content[0].text if result.content else ""
                    expected = edge_refusal(name, value)
                    edges.append(
                        (f"{tool.name}.{name}={value}", expected, result.is_error, message)
                    )
    return {
        "found": found,
        "refusals": refusals,
        "edges": edges,
        "unchanged": counts_before == counts_after,
    }


@pytest.fixture
def walked(engine: Engine, settings: Settings) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        async with Client(build_server(settings, engine)) as client:
            return await _walk(client, engine)

    return asyncio.run(main())


def test_the_walk_finds_the_arguments_we_know(walked: dict[str, Any]) -> None:
    assert {"add_task.due_on", "add_schedule.start_on"} <= set(walked["found"]["date"])
    assert {
        "claim_task.duration",
        "renew_lease.duration",
        "complete_and_claim_next.duration",
    } <= set(walked["found"]["duration"])


def test_every_date_and_lease_argument_refuses_with_the_reason(walked: dict[str, Any]) -> None:
    wrong = [r for r in walked["refusals"] if not (r[2] and r[1] in r[3])]
    assert not wrong, wrong
    assert all("invalid_input" in r[3] for r in walked["refusals"]), walked["refusals"]
    assert walked["unchanged"], "a refused argument writes nothing"


def test_every_date_argument_takes_the_edges_of_the_range(walked: dict[str, Any]) -> None:
    failed = [e for e in walked["edges"] if e[2] != (e[1] is not None)]
    assert not failed, failed
    refused = [e for e in walked["edges"] if e[1] is not None]
    assert all(e[1] in e[3] for e in refused), refused
