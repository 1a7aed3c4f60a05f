"""Sides, one gate, every door: each route of the API and each MCP tool is called with a
token held to the work side (read, then write) and with a read-only token of every side,
while both sides and the inbox hold items. Nothing of the personal side or the inbox is in
any answer to a work token, every step at them is refused (403, or 404 for an item named by
id, whose existence is not told) with the JSON error, and nothing of theirs changes; the
read-only token changes nothing anywhere.

The routes and tools are read from the app itself (its OpenAPI document, the MCP server's
tool list), and each must declare its side rule (`x-ondeck-sides`, the tools' `_meta`): a
route or tool added later without one, or without a sample request here, fails (fail
closed). Each door is also called at the work side's own items, and must get through: a
probe refused for a bad sample would prove nothing.

Doors hold no store rule, so they are walked on SQLite; the one statement that differs per
store (the events' side filter) has its own test on both stores below.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import time_machine
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from ondeck.db.engine import make_engine
from ondeck.db.tables import notes, schedules, session_compactions, sessions, tasks
from ondeck.entrypoints.api.app import create_app
from ondeck.entrypoints.mcp.toolbox import SIDES_META
from ondeck.entrypoints.mcp.tools import every_tool
from ondeck.host.settings import load_settings
from ondeck.memory import notes_handoffs, notes_write
from ondeck.sessions.capture.events import new_record
from ondeck.sessions.classify import Facts, Rules, classify
from ondeck.system import events
from ondeck.system import tokens as device_tokens
from ondeck.work import backlog
from ondeck.work import schedules as schedule_service
from support.memory import add_compaction, make_session
from support.walks import openapi_document

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
ADMIN = "walk-every-door-admin-token-0123456789abcdef"
SIDES = {"work": ["/w"], "personal": ["/p"]}
# What only the other side and the inbox hold: no answer to a work token may carry it.
OTHER = "PERSONALSIDE 개인비밀"
INBOX = "INBOXSIDE 미분류"
MINE = "WORKSIDE 업무"
RULES = {"one-side", "by-id", "new-in-side", "capture", "owner-only", "no-items"}

# A valid body for every route that takes one: the walk fails on a route with none here.
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("post", "/api/v1/tasks"): {"title": f"new {MINE}"},
    ("patch", "/api/v1/tasks/{task_id}"): {"title": f"edited {MINE}"},
    ("post", "/api/v1/tasks/claim-next"): {"owner": "walker"},
    ("post", "/api/v1/tasks/{task_id}/claim"): {"owner": "walker"},
    ("post", "/api/v1/tasks/{task_id}/renew"): {"token": 1},
    ("post", "/api/v1/tasks/{task_id}/complete"): {},
    ("post", "/api/v1/tasks/{task_id}/complete-and-claim-next"): {"owner": "walker", "token": 1},
    ("post", "/api/v1/tasks/{task_id}/release"): {"token": 1},
    ("post", "/api/v1/tasks/{task_id}/cancel"): {},
    ("post", "/api/v1/schedules"): {"title": f"new {MINE}", "rule": "daily"},
    ("patch", "/api/v1/schedules/{schedule_id}"): {"title": f"edited {MINE}"},
    ("post", "/api/v1/sessions/{ref}/move"): {"side": "work", "project": "walked"},
    ("post", "/api/v1/sessions/hook-events"): {"events": []},
    ("post", "/api/v1/notes"): {"text": f"new {MINE}"},
    ("patch", "/api/v1/notes/{note_id}"): {"text": f"edited {MINE}"},
    ("post", "/api/v1/notes/{note_id}/supersede"): {"text": f"newer {MINE}"},
    ("post", "/api/v1/notes/{note_id}/wrong"): {"reason": "walked"},
    ("post", "/api/v1/handoffs"): {"session": "{session}", "text": f"handoff {MINE}"},
    ("post", "/api/v1/import"): {"lines": []},
}
# Query values a route needs besides its side.
QUERIES: dict[tuple[str, str], dict[str, str]] = {
    # Words every side's items hold (the answer repeats the query: no marker in it).
    ("get", "/api/v1/recall"): {"q": "task summary note handoff last word 요약"},
    ("get", "/api/v1/export"): {"format": "jsonl"},
    ("get", "/api/v1/rules/check"): {"rule": "daily"},
}
# Where `unclassified=true` says the asking session is of no side (its context is closed:
# nothing of any side), not a request to read the inbox: checked clean, not refused.
SESSION_ASKS = {("get", "/api/v1/context"), ("get", "/api/v1/context/status")}
# Which kind of item an id in a path names.
KINDS = {"task_id": "task", "schedule_id": "schedule", "note_id": "note", "ref": "session"}
# A side-limited token's own steps that reach an item but are refused by its state (a lease
# token it does not hold): through the gate all the same.
REACHED = {200, 201, 204, 409}


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        doc = openapi_document(tmp)
    return [
        (method, path, op)
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
        if method in ("get", "post", "patch", "put", "delete")
    ]


OPERATIONS = _operations()


@pytest.fixture
def walk(sqlite_template: Path, tmp_path: Path) -> Iterator[Walk]:
    path = tmp_path / "ondeck.db"
    shutil.copyfile(sqlite_template, path)
    url = f"sqlite:///{path}"
    settings = load_settings(
        database_url=url, tz="Asia/Seoul", token=ADMIN, data_dir=tmp_path, sides=SIDES
    )
    engine = make_engine(url)
    try:
        walk = Walk(engine, create_app(settings, engine))
        with time_machine.travel(NOW, tick=False), TestClient(walk.app) as client:
            walk.client = client
            yield walk
    finally:
        engine.dispose()


class Walk:
    def __init__(self, engine: Engine, app: FastAPI | None) -> None:
        self.engine = engine
        self.app: FastAPI = app  # type: ignore[assignment]
        self.client: TestClient
        self.ids = self._seed()
        with engine.begin() as conn:
            self.tokens = {
                name: device_tokens.create(conn, NOW, name, scope, actor="t", side=side).secret
                for name, scope, side in (
                    ("work-read", "read", "work"),
                    ("work-write", "write", "work"),
                    ("reader", "read", None),
                )
            }

    def _seed(self) -> dict[str, dict[str, int]]:
        """A task, a schedule, a pinned note and a session with its last word, compaction
        and handoff on each side, and a task and a session in the inbox."""
        zone = ZoneInfo("Asia/Seoul")
        ids: dict[str, dict[str, int]] = {}
        with self.engine.begin() as conn:
            for side, mark in (("work", MINE), ("personal", OTHER), (None, INBOX)):
                key = side or "inbox"
                own: dict[str, int] = {}
                own["task"] = backlog.create_task(
                    conn, NOW, title=f"task {mark}", side=side, actor="t"
                ).id
                own["session"] = make_session(
                    conn,
                    NOW,
                    external_id=f"{key}-0000-4000-8000-000000000000",
                    side=side,
                    project=None,
                    unclassified=side is None,
                    status="open",
                    last_word=f"last word {mark}",
                    cwd=f"/{key[0]}/repo",
                )
                add_compaction(conn, own["session"], NOW, f"summary {mark}")
                if side is None:
                    ids[key] = own
                    continue
                own["schedule"] = schedule_service.create_schedule(
                    conn, NOW, zone, title=f"schedule {mark}", rule="daily", side=side, actor="t"
                ).id
                own["note"] = notes_write.add_note(
                    conn,
                    NOW,
                    text=f"note {mark}",
                    side=side,
                    project=None,
                    sides=SIDES,
                    zone=zone,
                    pinned=True,
                    actor="t",
                ).id
                notes_handoffs.write_handoff(
                    conn, NOW, own["session"], f"handoff {mark}", actor="t"
                )
                ids[key] = own
        return ids

    def others(self) -> Any:
        """Every row of the personal side and the inbox, as stored: what no work token may
        change."""
        with self.engine.connect() as conn:
            found: dict[str, Any] = {}
            for table in (tasks, schedules, notes, sessions):
                rows = conn.execute(
                    select(table).where(table.c.side.is_distinct_from("work")).order_by(table.c.id)
                )
                found[table.name] = [dict(row._mapping) for row in rows]
            found["compactions"] = [
                dict(row._mapping)
                for row in conn.execute(
                    select(session_compactions).order_by(session_compactions.c.id)
                )
                if row.session_id != self.ids["work"]["session"]
            ]
            return found

    def everything(self) -> Any:
        with self.engine.connect() as conn:
            return {
                t.name: [dict(r._mapping) for r in conn.execute(select(t).order_by(t.c.id))]
                for t in (tasks, schedules, notes, sessions, session_compactions)
            }

    def call(
        self,
        token: str,
        method: str,
        path: str,
        params: dict[str, str],
        body: dict[str, Any] | None,
    ) -> Any:
        return self.client.request(
            method.upper(),
            path,
            params=params,
            json=body,
            headers={"Authorization": f"Bearer {self.tokens[token]}"},
        )


def _fill(path: str, ids: dict[str, int]) -> str | None:
    for name, kind in KINDS.items():
        if "{" + name + "}" in path:
            if kind not in ids:
                return None
            path = path.replace("{" + name + "}", str(ids[kind]))
    return path


def _body(key: tuple[str, str], op: dict[str, Any], session: int) -> dict[str, Any] | None:
    if "requestBody" not in op:
        return None
    if key == ("post", "/api/v1/sessions/records"):
        return None  # made per probe (_records)
    assert key in BODIES, f"{key}: no sample body in this walk; add one to BODIES"
    body = json.loads(json.dumps(BODIES[key]).replace('"{session}"', json.dumps(str(session))))
    return body  # type: ignore[no-any-return]


def _records(side: str, external: str) -> dict[str, Any]:
    """A stop record of the session `external`, classified on this machine in `side`."""
    cwd = f"/{side[0]}/repo"
    made = new_record(
        "stop",
        {"session_id": external, "cwd": cwd, "last_assistant_message": f"sneaked {OTHER}"},
        at=NOW,
        facts={"cwd": cwd, "git_root": None, "branch": None, "head": None},
        classification=classify(Facts(cwd=cwd), Rules(sides=SIDES)),
    )
    return {"records": [json.loads(json.dumps(made, default=str))]}


def _aims(
    walk: Walk, key: tuple[str, str], op: dict[str, Any], rule: str, path: str
) -> Iterator[tuple[dict[str, str], dict[str, Any] | None, dict[str, int]]]:
    """Each way a call can aim past the work side: (query, body, the ids in its path)."""
    names = {p["name"] for p in op.get("parameters", [])}
    if rule == "no-items":
        return
    for other in ("personal", "inbox"):
        ids = walk.ids[other]
        body = _body(key, op, ids["session"])
        if rule == "capture":
            # A session of the other side; one of no side may be recorded (into the inbox,
            # for the owner), but not a record of an inbox session made elsewhere.
            external = f"{other}-0000-4000-8000-000000000000"
            if other == "personal":
                yield {}, _records(other, external), ids
        elif rule == "owner-only":
            yield {}, body, ids
            return
        elif "{" in path:  # an item of the other side, named by id
            if _fill(path, ids) is not None:
                yield {}, body, ids
        elif key == ("post", "/api/v1/handoffs"):  # a session of the other side
            yield {}, body, ids
        elif method_reads(key):
            if other == "personal" and "side" in names:
                yield {"side": other}, None, ids
            if other == "inbox" and "unclassified" in names and key not in SESSION_ASKS:
                yield {"unclassified": "true"}, None, ids
            if other == "inbox" and "status" in names and "sessions" in key[1]:
                yield {"status": "unclassified"}, None, ids
        elif body is not None and other == "personal":  # a new item, or the next, of it
            yield {}, {**body, "side": "personal"}, ids
    if "{" in path and "side" in names:  # its own item, through the other side's name
        yield {"side": "personal"}, _body(key, op, walk.ids["work"]["session"]), walk.ids["work"]


def method_reads(key: tuple[str, str]) -> bool:
    return key[0] == "get"


def _refused(answer: Any, what: str) -> None:
    assert answer.status_code in (403, 404), f"{what}: {answer.status_code} {answer.text}"
    error = answer.json()["error"]
    assert error["code"] in ("forbidden", "not_found") and error["message"], what


def _clean(answer: Any, what: str) -> None:
    for mark in (OTHER, INBOX, "PERSONALSIDE", "INBOXSIDE", "개인비밀", "미분류"):
        assert mark not in answer.text, f"{what}: the answer holds {mark!r}: {answer.text[:300]}"


@pytest.mark.parametrize(
    ("method", "path", "op"), OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS]
)
def test_every_route_holds_a_side_limited_token_to_its_side(
    walk: Walk, method: str, path: str, op: dict[str, Any]
) -> None:
    rule = op.get("x-ondeck-sides")
    assert rule in RULES, f"{method} {path} declares no side rule (x-ondeck-sides)"
    key = (method, path)
    query = QUERIES.get(key, {})
    before = walk.others()
    writes = method != "get"
    tokens = ("work-write",) if writes else ("work-read", "work-write")

    def at(ids: dict[str, int]) -> str | None:
        return _fill(path, ids)

    for token in tokens:
        what = f"{method} {path} with {token}"
        for params, body, aim in _aims(walk, key, op, rule, path):
            answer = walk.call(token, method, _fill(path, aim) or path, {**query, **params}, body)
            if rule == "capture":
                assert answer.status_code == 200, answer.text
                assert [r["outcome"] for r in answer.json()["results"]] == ["rejected"], what
            else:
                _refused(answer, f"{what} with {params} {body} at {aim}")
            _clean(answer, what)
        assert walk.others() == before, f"{what} changed the other side or the inbox"
        # At its own side: through the gate, and still nothing of the others.
        if rule == "owner-only":
            continue
        if rule == "capture":
            answer = walk.call(
                token, method, path, query, _records("work", "walked-0000-4000-8000-000000000000")
            )
            assert [r["outcome"] for r in answer.json()["results"]] != ["rejected"], answer.text
            continue
        target = at(walk.ids["work"]) or path
        answer = walk.call(
            token, method, target, query, _body(key, op, walk.ids["work"]["session"])
        )
        assert answer.status_code in REACHED or (
            answer.status_code == 422 and "already" in answer.text
        ), f"{what} at its own side: {answer.text}"
        _clean(answer, f"{what} at its own side")
        assert walk.others() == before, f"{what} at its own side changed the others"


@pytest.mark.parametrize(
    ("method", "path", "op"), OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS]
)
def test_a_read_only_token_changes_nothing_on_any_route(
    walk: Walk, method: str, path: str, op: dict[str, Any]
) -> None:
    if method == "get":
        return
    before = walk.everything()
    for side in ("work", "personal"):
        target = _fill(path, walk.ids[side]) or path
        body = _body((method, path), op, walk.ids[side]["session"])
        if (method, path) == ("post", "/api/v1/sessions/records"):
            body = _records(side, f"{side}-0000-4000-8000-000000000000")
        answer = walk.call("reader", method, target, QUERIES.get((method, path), {}), body)
        assert answer.status_code == 403, f"{method} {path}: {answer.text}"
        assert answer.json()["error"]["code"] == "forbidden"
    assert walk.everything() == before


# --- MCP: every tool over /mcp with the same tokens -------------------------------------------

# Arguments for every tool: the walk fails on a tool with none here.
TOOL_ARGS: dict[str, dict[str, Any]] = {
    "get_context": {},
    "list_tasks": {},
    "add_task": {"title": f"new {MINE}"},
    "claim_task": {"owner": "walker"},
    "renew_lease": {"task_id": "{task}", "token": 1},
    "complete_task": {"task_id": "{task}"},
    "complete_and_claim_next": {"task_id": "{task}", "owner": "walker"},
    "release_task": {"task_id": "{task}", "token": 1},
    "list_schedules": {},
    "add_schedule": {"title": f"new {MINE}", "rule": "daily"},
    "pull_schedule_now": {"schedule_id": "{schedule}"},
    "recall": {"query": "task summary note handoff last word"},
    "remember": {"text": f"new {MINE}"},
    "write_handoff": {"text": f"handoff {MINE}", "session": "{session}"},
    "supersede_note": {"note_id": "{note}", "text": f"newer {MINE}"},
    "mark_note_wrong": {"note_id": "{note}", "reason": "walked"},
    "list_notes": {},
}


def _args(name: str, ids: dict[str, int]) -> dict[str, Any]:
    assert name in TOOL_ARGS, f"tool {name}: no sample arguments in this walk; add them"
    args = dict(TOOL_ARGS[name])
    for key, value in args.items():
        if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
            found = ids.get(value[1:-1])
            args[key] = found if key != "session" else str(found)
    return args


def test_every_mcp_tool_declares_its_side_rule() -> None:
    for tool in every_tool():
        assert (tool.meta or {}).get(SIDES_META) in RULES, f"tool {tool.name}: no side rule"
        assert tool.name in TOOL_ARGS, f"tool {tool.name}: no sample arguments in the walk"


@pytest.mark.slow
def test_every_mcp_tool_holds_a_side_limited_token_to_its_side(
    sqlite_template: Path, tmp_path: Path
) -> None:
    """A real `ondeck serve`, the official MCP client over streamable HTTP: each tool with
    the ids of the personal side's and the inbox's items answers nothing of them, naming the
    personal side is refused, and nothing of theirs changes."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from mcp import Client
    from support import served as support_served

    path = tmp_path / "server" / "ondeck.db"
    path.parent.mkdir()
    shutil.copyfile(sqlite_template, path)
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    try:
        walk = Walk(engine, None)
        names = [tool.name for tool in every_tool()]
        env = {"ONDECK_TOKEN": ADMIN, "ONDECK_SIDES": json.dumps(SIDES), "ONDECK_TZ": "UTC"}
        before = walk.others()
        with support_served.serve_database(
            url, tmp_path / "data", support_served.Served, **env
        ) as served:

            async def calls(token: str, side: str | None, ids: dict[str, int]) -> dict[str, Any]:
                headers = {"Authorization": f"Bearer {walk.tokens[token]}"}
                where = f"{served.url}/mcp" + (f"?side={side}" if side else "")
                async with (
                    create_mcp_http_client(headers=headers) as http,
                    Client(streamable_http_client(where, http_client=http)) as client,
                ):
                    return {name: await client.call_tool(name, _args(name, ids)) for name in names}

            for token in ("work-read", "work-write"):
                for other in ("personal", "inbox"):
                    got = asyncio.run(calls(token, None, walk.ids[other]))
                    for name, result in got.items():
                        text = json.dumps(result.model_dump(mode="json"), ensure_ascii=False)
                        for mark in (OTHER, INBOX, "PERSONALSIDE", "INBOXSIDE"):
                            assert mark not in text, f"{name} with {token}: {text[:300]}"
                refused = asyncio.run(calls(token, "personal", walk.ids["work"]))
                assert all(r.is_error for r in refused.values()), token
                assert walk.others() == before, token
            # The tools reach the work side's own items with the same token.
            own = asyncio.run(calls("work-write", None, walk.ids["work"]))
            assert not own["list_tasks"].is_error and MINE in str(own["list_tasks"].content)
            _walk_the_cli_in_client_mode(walk, served.url, tmp_path)
    finally:
        engine.dispose()


def _walk_the_cli_in_client_mode(walk: Walk, url: str, tmp_path: Path) -> None:
    """`ondeck …` on a machine with no database, a client of the server with the work
    token: each reading command shows nothing of the personal side or the inbox, and each
    aimed at them is refused in one line."""
    import os
    import subprocess

    from support.served import ONDECK

    personal, inbox = walk.ids["personal"], walk.ids["inbox"]
    env = {
        **os.environ,
        "ONDECK_SERVER_URL": url,
        "ONDECK_TOKEN": walk.tokens["work-write"],
        "ONDECK_SIDES": json.dumps(SIDES),
        "ONDECK_TZ": "UTC",
        "ONDECK_DATA_DIR": str(tmp_path / "client"),
    }
    shown = [
        ["task", "list", "--side", "work"],
        ["schedule", "list", "--side", "work"],
        ["note", "list", "--side", "work"],
        ["recall", "task summary note handoff last word", "--side", "work"],
        ["session", "list"],
        ["context", "--side", "work"],
    ]
    aimed = [
        ["task", "list", "--side", "personal"],
        ["task", "show", str(personal["task"])],
        ["note", "list", "--side", "personal"],
        ["note", "list", "--unclassified"],
        ["note", "show", str(personal["note"])],
        ["recall", "task summary note handoff last word", "--side", "personal"],
        ["session", "list", "--side", "personal"],
        ["session", "show", str(personal["session"])],
        ["session", "show", str(inbox["session"])],
        ["session", "move", str(personal["session"]), "--side", "work"],
        ["note", "add", "sneaked", "--side", "personal"],
    ]
    before = walk.others()
    for args in shown + aimed:
        done = subprocess.run(
            [ONDECK, *args], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
        said = done.stdout + done.stderr
        for mark in (OTHER, INBOX, "PERSONALSIDE", "INBOXSIDE"):
            assert mark not in said, f"ondeck {' '.join(args)}: {said[:300]}"
        if args in aimed:
            assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1, (
                f"ondeck {' '.join(args)}: {done.returncode} {said[:300]}"
            )
        else:
            assert done.returncode == 0, f"ondeck {' '.join(args)}: {said[:300]}"
    assert walk.others() == before


def _web_paths(app: FastAPI) -> list[str]:
    """The dashboard's pages (GET routes outside the API), ids filled with the personal
    side's."""
    found: list[str] = []

    def walk_routes(routes: Any) -> None:
        for route in routes:
            contexts = getattr(route, "effective_route_contexts", None)
            if contexts is not None:
                walk_routes(contexts() if callable(contexts) else contexts)
                continue
            path, methods = getattr(route, "path", ""), getattr(route, "methods", None) or ()
            if "GET" in methods and not path.startswith(("/api/", "/mcp", "/static", "/openapi")):
                found.append(path)

    walk_routes(app.routes)
    return found


def test_no_dashboard_page_shows_a_device_token_anything(walk: Walk) -> None:
    """The dashboard is the owner's: a device token, even of every side, opens none of its
    pages (it is not the login's token), so none can show another side; the calendar feed,
    which takes one, is of its side (tests/api/test_sides_api.py)."""
    paths = _web_paths(walk.app)
    assert len(paths) > 8, paths
    ids = walk.ids["personal"]
    for path in paths:
        for name, value in (("id", ids["task"]), ("task_id", ids["task"])):
            path = path.replace("{" + name + "}", str(value))
        path = path.replace("{schedule_id}", str(ids["schedule"]))
        path = path.replace("{note_id}", str(ids["note"]))
        path = path.replace("{ref}", str(ids["session"]))
        for token in ("work-read", "reader"):
            answer = walk.client.get(
                path,
                params={"side": "personal"},
                headers={"Authorization": f"Bearer {walk.tokens[token]}"},
                follow_redirects=False,
            )
            if path in ("/login", "/calendar.ics"):
                continue
            assert answer.status_code in (303, 307, 401, 403), f"{path}: {answer.status_code}"
            _clean(answer, path)
        login = walk.client.post(
            "/login", data={"token": walk.tokens["reader"]}, follow_redirects=False
        )
        assert "set-cookie" not in {k.lower() for k in login.headers}, "a device token logged in"


def test_events_of_a_side_on_both_stores(engine: Engine) -> None:
    """The one statement of the walk that differs per store: the events a reader held to a
    side sees are those of that side's items (and the inbox's of the inbox), on SQLite and
    PostgreSQL alike."""
    from ondeck.core.sides import EVERY_SIDE, SideView

    walk = Walk(engine, None)
    with engine.connect() as conn:
        seen = {
            name: {e.subject for e in events.list_events(conn, limit=500, view=view)}
            for name, view in (
                ("work", SideView(sides_on=True, side="work")),
                ("personal", SideView(sides_on=True, side="personal")),
                ("inbox", SideView(sides_on=True, inbox=True)),
                ("closed", SideView(sides_on=True)),
                ("all", EVERY_SIDE),
            )
        }
    for side in ("work", "personal"):
        ids = walk.ids[side]
        assert seen[side] == {
            f"task:{ids['task']}",
            f"schedule:{ids['schedule']}",
            f"note:{ids['note']}",
            f"note:{ids['note'] + 1}",  # the session's handoff
        }, seen[side]
    assert seen["inbox"] == {f"task:{walk.ids['inbox']['task']}"}
    assert seen["closed"] == set()
    assert seen["all"] >= seen["work"] | seen["personal"] | seen["inbox"]
    assert any(s.startswith("token:") for s in seen["all"])  # the owner's own events
