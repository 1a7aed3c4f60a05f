"""Every entry point reaches the services the same way (entrypoints/gateway.py): one instant
per call, read transactions for reads, the in-process jobs loop woken after a committed
"now" whoever pressed it, and the same context in each format whichever door it leaves by."""

from __future__ import annotations

import asyncio
import io
import json
import re
import shutil
import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select
from starlette.requests import Request

from mcp import Client
from ondeck.context.render import Format, hook_output
from ondeck.core import clock
from ondeck.db.engine import make_engine
from ondeck.db.tables import fires, tasks
from ondeck.entrypoints.api.app import create_app
from ondeck.entrypoints.cli import run
from ondeck.entrypoints.gateway import Store, call_of
from ondeck.entrypoints.hooks.verbs import session_start
from ondeck.entrypoints.jobs.loop import Jobs
from ondeck.entrypoints.mcp.tools import build_server
from ondeck.host.settings import Settings, load_settings
from ondeck.work import backlog, schedules
from support.pg import free_port

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def _schedule(engine: Engine, now: datetime, zone: Any, **values: Any) -> schedules.Schedule:
    values = {"title": "water the plants", "rule": "daily", **values}
    with engine.begin() as conn:
        return schedules.create_schedule(conn, now, zone, actor="cli", **values)


# --- one instant per call ---------------------------------------------------------------


def test_a_call_reads_the_clock_once(engine: Engine, settings: Settings) -> None:
    store = Store(settings=settings, engine=engine)
    with time_machine.travel(NOW, tick=False) as traveller:
        call = store.call()
        traveller.shift(timedelta(hours=3))
        assert call.now() == NOW
        assert call.today() == NOW.date()
        assert store.call().now() == NOW + timedelta(hours=3)


def test_an_http_request_has_one_call_shared_by_its_route_and_its_page(
    engine: Engine, settings: Settings
) -> None:
    app = create_app(settings, engine)
    request = Request({"type": "http", "app": app, "state": {}, "headers": []})
    other = Request({"type": "http", "app": app, "state": {}, "headers": []})
    with time_machine.travel(NOW, tick=True):
        first = call_of(request)
        time.sleep(0.01)
        assert call_of(request) is first
        assert call_of(other).now() > first.now()


# --- waking the jobs loop ---------------------------------------------------------------


def test_a_committed_now_wakes_the_loop_and_nothing_else_does(
    engine: Engine, settings: Settings
) -> None:
    jobs = Jobs(engine=engine, settings=settings, steps=[])
    store = Store(settings=settings, engine=engine, jobs=jobs)
    s = _schedule(engine, NOW, settings.zone, rule="weekly:FRI")

    with store.call(NOW).write() as conn:
        backlog.create_task(conn, NOW, title="not a reason to tick", actor="cli")
    assert not jobs.wake_event.is_set()

    with pytest.raises(RuntimeError), store.call(NOW).write() as conn:
        schedules.pull_now(conn, NOW, settings.zone, s.id)
        raise RuntimeError("the request failed after the change")
    assert not jobs.wake_event.is_set(), "a rolled-back now woke the loop"
    # ...and the request it made is not left on the pooled connection for the next one.
    with store.call(NOW).write() as conn:
        schedules.get_schedule(conn, s.id)
    assert not jobs.wake_event.is_set()

    with store.call(NOW).write() as conn:
        schedules.pull_now(conn, NOW, settings.zone, s.id)
        assert not jobs.wake_event.is_set(), "woken before the commit"
    assert jobs.wake_event.is_set()


def _ticks(engine: Engine) -> int:
    with engine.connect() as conn:
        from ondeck.db.tables import workers

        return int(conn.execute(select(func.coalesce(func.sum(workers.c.ticks), 0))).scalar_one())


def _wait(predicate: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


def _press_now(client: TestClient, via: str, schedule_id: int) -> None:
    if via == "api":
        response = client.post(f"/api/v1/schedules/{schedule_id}/now")
    else:
        token = CSRF.search(client.get("/schedules").text)
        assert token, "the schedules page has a form with a CSRF token"
        response = client.post(
            f"/schedules/{schedule_id}/now",
            data={"csrf_token": token.group(1), "next": "/schedules"},
            follow_redirects=False,
        )
    assert response.status_code in (200, 303), response.text


@pytest.mark.parametrize("via", ["api", "dashboard"])
def test_now_wakes_the_servers_own_jobs_loop_from_every_door(
    engine: Engine, settings: Settings, via: str
) -> None:
    """An hour between ticks: the fire can only come from the wake-up. On SQLite (no
    NOTIFY) the server's own wake is the only one there is."""
    slow = settings.model_copy(update={"tick_seconds": 3600.0})
    today = clock.today(clock.now(), slow.zone)
    s = _schedule(engine, clock.now(), slow.zone, start_on=today + timedelta(days=1))
    assert s.next_due == today + timedelta(days=1)
    with TestClient(create_app(slow, engine, run_jobs=True)) as client:
        assert _wait(lambda: _ticks(engine) >= 1, 30), "the server's loop never ticked"
        _press_now(client, via, s.id)
        fired = _wait(lambda: _fire_count(engine, s.id) == 1, 30)
        assert fired, f"'now' from the {via} did not wake the server's jobs loop"
    with engine.connect() as conn:
        made = conn.execute(select(tasks.c.source)).scalars().all()
    assert made == [f"sch:{s.id}:{today.isoformat()}"]


def _fire_count(engine: Engine, schedule_id: int) -> int:
    with engine.connect() as conn:
        query = select(func.count()).select_from(fires).where(fires.c.schedule_id == schedule_id)
        return int(conn.execute(query).scalar_one())


# --- read transactions ------------------------------------------------------------------


@pytest.fixture
def sqlite_file(sqlite_template: Path, tmp_path: Path) -> Iterator[tuple[Engine, Path]]:
    path = tmp_path / "ondeck.db"
    shutil.copyfile(sqlite_template, path)
    engine = make_engine(f"sqlite:///{path}")
    yield engine, path
    engine.dispose()


def test_read_only_mcp_tools_work_while_another_connection_holds_the_write_lock(
    sqlite_file: tuple[Engine, Path], tmp_path: Path
) -> None:
    engine, path = sqlite_file
    settings = load_settings(database_url=f"sqlite:///{path}", tz="UTC", data_dir=tmp_path)
    with engine.begin() as conn:
        backlog.create_task(conn, clock.now(), title="해야 할 일", actor="cli")
    _schedule(engine, clock.now(), settings.zone)

    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another program mid-write: the write lock is taken
    try:

        async def session() -> dict[str, Any]:
            async with Client(build_server(settings, engine)) as client:
                return {
                    name: await client.call_tool(name, {})
                    for name in ("list_tasks", "list_schedules", "get_context")
                }

        results = asyncio.run(session())
        for name in ("list_tasks", "list_schedules", "get_context"):
            assert not results[name].is_error, (name, results[name].content)
        assert results["list_tasks"].structured_content["tasks"][0]["title"] == "해야 할 일"
        assert results["list_schedules"].structured_content["schedules"][0]["rule"] == "daily"
        assert "해야 할 일" in results["get_context"].structured_content["markdown"]

        async def write() -> Any:
            async with Client(build_server(settings, engine)) as client:
                return await client.call_tool("add_task", {"title": "blocked"})

        # The lock is really held: a tool that writes waits out the busy timeout and says so.
        blocked = asyncio.run(write())
        assert blocked.is_error and "unavailable" in blocked.content[0].text
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# --- the context, the same through every door ------------------------------------------


def test_the_context_is_the_same_in_each_format_through_every_entry_point(
    engine: Engine,
    db_url: str,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The CLI and the hook read their settings from the environment: the fixture's zone,
    # and a port no server listens on, so the hook reads the database itself.
    monkeypatch.setenv("ONDECK_TZ", "UTC")
    monkeypatch.setenv("ONDECK_PORT", str(free_port()))
    with engine.begin() as conn:
        task = backlog.create_task(conn, NOW, title="배포 준비", due_on=NOW.date(), actor="cli")
        backlog.claim_task(conn, NOW, task.id, owner="me", duration="15m", actor="cli")
        backlog.create_task(conn, NOW, title="write the notes", project="site", actor="cli")
    _schedule(engine, NOW - timedelta(days=1), settings.zone, kind="remind")
    later = NOW + timedelta(hours=2)  # the lease has expired: the lines that compute spans

    def cli(fmt: Format) -> str:
        assert run(["--db", db_url, "context", "--no-brief", "--format", fmt.value]) == 0
        return capsys.readouterr().out

    async def mcp() -> dict[str, Any]:
        async with Client(build_server(settings, engine)) as client:
            result = await client.call_tool("get_context", {})
            return result.structured_content  # type: ignore[no-any-return]

    with time_machine.travel(later, tick=False):
        with TestClient(create_app(settings, engine)) as client:
            api = {f: client.get("/api/v1/context", params={"format": f.value}) for f in Format}
        by_cli = {f: cli(f) for f in Format}
        by_mcp = asyncio.run(mcp())
        hook_out = io.StringIO()
        assert session_start(io.StringIO("{}"), hook_out, db_url=db_url) == 0

    assert api[Format.markdown].headers["content-type"] == "text/markdown; charset=utf-8"
    assert api[Format.json].headers["content-type"] == "application/json"
    markdown = api[Format.markdown].text
    assert "배포 준비" in markdown and "EXPIRED" in markdown and "## Reminders" in markdown
    assert by_cli[Format.markdown] == markdown
    # The MCP tool and the session hook add the brief of their directory after the lists.
    assert _without_brief(by_mcp["markdown"]) == markdown
    hooked = json.loads(hook_out.getvalue())["hookSpecificOutput"]["additionalContext"]
    assert _without_brief(hooked) == markdown
    assert {k: v for k, v in by_mcp["data"].items() if k != "brief"} == api[Format.json].json()
    assert api[Format.json].json() == json.loads(by_cli[Format.json])
    assert api[Format.hook].json() == json.loads(by_cli[Format.hook]) == hook_output(markdown)


def _without_brief(markdown: str) -> str:
    head, found, _ = markdown.partition("\n## Memory\n")
    assert found, "the brief is there"
    return head
