"""Every place that shows a lease or the jobs heartbeat, read at one instant.

The truth tests ask each of them the same question (is this lease released, will it be,
is the loop alive) and compare the answers: the context as Markdown, JSON and hook JSON;
`ondeck task list`, `task show` and their `--json`; the dashboard's Today, Backlog, task,
Schedules and System pages; the HTTP API's task, context and health; the MCP tools.
Each is the real entry point (Typer in-process, the ASGI app under TestClient, the
official MCP client in-process), with the clock moved by time-machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from datetime import datetime
from typing import Any

import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from mcp import Client
from ondeck.context.build import context_for
from ondeck.context.render import render
from ondeck.entrypoints.api.app import create_app
from ondeck.entrypoints.cli import run
from ondeck.entrypoints.mcp.tools import build_server
from ondeck.host.settings import Settings

API = "/api/v1"


def cli(db_url: str, *args: str) -> str:
    """`ondeck --db URL …` in-process: its stdout (wide, so a table cell is one line)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run(["--db", db_url, *args])
    assert code == 0, out.getvalue()
    return out.getvalue()


def _mcp(settings: Settings, engine: Engine, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def main() -> list[Any]:
        async with Client(build_server(settings, engine)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    found = asyncio.run(main())
    for result in found:
        assert not result.is_error, result.content
    return [r.structured_content for r in found]


def read_all(
    engine: Engine, settings: Settings, db_url: str, now: datetime, *, task_id: int
) -> dict[str, Any]:
    """Every surface's text (str) or JSON object, keyed by where it came from."""
    zone = settings.zone
    found: dict[str, Any] = {}
    with time_machine.travel(now, tick=False):
        with engine.connect() as conn:
            ctx = context_for(conn, now, settings)
        found["context.markdown"] = render(ctx, zone, "markdown")
        found["context.json"] = json.loads(render(ctx, zone, "json"))
        found["context.hook"] = json.loads(render(ctx, zone, "hook"))
        found["cli task list"] = cli(db_url, "task", "list")
        found["cli task show"] = cli(db_url, "task", "show", str(task_id))
        found["cli task list --json"] = json.loads(cli(db_url, "task", "list", "--json"))
        found["cli task show --json"] = json.loads(
            cli(db_url, "task", "show", str(task_id), "--json")
        )
        found["cli context"] = cli(db_url, "context")
        with TestClient(create_app(settings, engine)) as client:
            for page in ("/", "/tasks", f"/tasks/{task_id}", "/schedules", "/system"):
                response = client.get(page)
                assert response.status_code == 200, response.text
                found[f"web {page}"] = response.text
            found["api task"] = client.get(f"{API}/tasks/{task_id}").json()
            found["api tasks"] = client.get(f"{API}/tasks").json()
            found["api context"] = client.get(f"{API}/context").json()
            found["api context markdown"] = client.get(f"{API}/context?format=markdown").text
            found["api health"] = client.get(f"{API}/health").json()
        mcp_tasks, mcp_context = _mcp(settings, engine, [("list_tasks", {}), ("get_context", {})])
        found["mcp list_tasks"] = mcp_tasks
        found["mcp get_context"] = mcp_context
    return found


def task_objects(found: dict[str, Any], task_id: int) -> dict[str, dict[str, Any]]:
    """The task object each JSON surface gives for `task_id`."""

    def pick(items: list[dict[str, Any]]) -> dict[str, Any]:
        [item] = [t for t in items if t["id"] == task_id]
        return item

    return {
        "context.json": pick(found["context.json"]["tasks"]["running"]),
        "cli task list --json": pick(found["cli task list --json"]),
        "cli task show --json": found["cli task show --json"]["task"],
        "api task": found["api task"],
        "api tasks": pick(found["api tasks"]),
        "api context": pick(found["api context"]["tasks"]["running"]),
        "mcp list_tasks": pick(found["mcp list_tasks"]["tasks"]),
        "mcp get_context": pick(found["mcp get_context"]["data"]["tasks"]["running"]),
    }


def texts(found: dict[str, Any]) -> dict[str, str]:
    """The surfaces meant for people (and agents), as text."""
    return {
        "context.markdown": found["context.markdown"],
        "context.hook": json.dumps(found["context.hook"], ensure_ascii=False),
        "cli context": found["cli context"],
        "api context markdown": found["api context markdown"],
        "mcp get_context": found["mcp get_context"]["markdown"],
        "cli task show": found["cli task show"],
        "web /": found["web /"],
        "web /tasks": found["web /tasks"],
    }
