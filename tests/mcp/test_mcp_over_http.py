"""MCP at `/mcp` of a real `ondeck serve`: the official client over streamable HTTP, with
device tokens made by the CLI; a read token cannot write, a revoked token is refused on the
next call of a session already open; every change is recorded as `mcp:<token name>`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from sqlalchemy import Engine, create_engine, select

from mcp import Client
from ondeck.db.tables import events
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings
from support import served as support_served
from support.pg import free_port
from support.served import ONDECK

ADMIN = "admin-secret-for-the-test-0123456789"


class Served(support_served.Served):
    def token(self, name: str, scope: str, *more: str) -> str:
        done = subprocess.run(
            [ONDECK, "token", "create", name, "--scope", scope, *more],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def revoke(self, name: str) -> None:
        done = subprocess.run(
            [ONDECK, "token", "revoke", name],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr

    def actors(self) -> set[str]:
        engine = create_engine(self.db_url)
        try:
            with engine.connect() as conn:
                return set(conn.execute(select(events.c.actor)).scalars())
        finally:
            engine.dispose()


@contextmanager
def _serving(sqlite_template: Path, tmp_path: Path, **extra: str) -> Iterator[Served]:
    """`ondeck serve` on a free port, a SQLite database of its own, `ONDECK_TOKEN` set."""
    path = tmp_path / "server" / "ondeck.db"
    path.parent.mkdir()
    shutil.copyfile(sqlite_template, path)
    db_url = f"sqlite:///{path}"
    data = tmp_path / "server" / "data"
    with support_served.serve_database(db_url, data, Served, ONDECK_TOKEN=ADMIN, **extra) as s:
        yield s


@pytest.fixture
def served(sqlite_template: Path, tmp_path: Path) -> Iterator[Served]:
    with _serving(sqlite_template, tmp_path) as server:
        yield server


@asynccontextmanager
async def _client(url: str, token: str) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, giving `token` (its HTTP client closed after:
    the transport leaves a client it was given open)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def _text(result: Any) -> str:
    return str(result.content[0].text)


@pytest.mark.slow
def test_tools_over_http_with_device_tokens(served: Served) -> None:
    writer = served.token("laptop", "write")
    reader = served.token("phone", "read")
    mcp_url = f"{served.url}/mcp"

    async def main() -> dict[str, Any]:
        got: dict[str, Any] = {}
        async with _client(mcp_url, writer) as client:
            got["tools"] = {tool.name for tool in (await client.list_tools()).tools}
            got["context"] = await client.call_tool("get_context", {})
            got["added"] = await client.call_tool("add_task", {"title": "over http"})
        async with _client(mcp_url, reader) as client:
            got["read"] = await client.call_tool("list_tasks", {})
            got["write"] = await client.call_tool("add_task", {"title": "not allowed"})
            got["remember"] = await client.call_tool("remember", {"text": "not allowed"})
        return got

    got = asyncio.run(main())
    assert {"get_context", "add_task", "claim_task", "recall", "remember"} <= got["tools"]
    assert "# On deck" in got["context"].structured_content["markdown"]
    assert got["added"].structured_content["title"] == "over http"
    assert [t["title"] for t in got["read"].structured_content["tasks"]] == ["over http"]
    for refused in (got["write"], got["remember"]):
        assert refused.is_error
        assert _text(refused).startswith("forbidden: token 'phone' may only read")
        assert "write scope" in _text(refused)
    actors = served.actors()
    assert "mcp:laptop" in actors
    assert not any(actor.startswith("mcp:phone") for actor in actors)


@pytest.mark.slow
def test_a_revoked_token_is_refused_on_the_open_sessions_next_call(served: Served) -> None:
    secret = served.token("desk", "write")

    async def main() -> tuple[Any, BaseException | Any]:
        async with _client(f"{served.url}/mcp", secret) as client:
            first = await client.call_tool("list_tasks", {})
            await asyncio.to_thread(served.revoke, "desk")
            try:
                after: BaseException | Any = await client.call_tool("add_task", {"title": "x"})
            except Exception as exc:  # the transport's refusal, as the SDK raises it
                after = exc
            return first, after

    first, after = asyncio.run(main())
    assert not first.is_error
    # The SDK's client turns the 401 into an error response (the status is not kept).
    assert isinstance(after, MCPError), after
    engine = create_engine(served.db_url)
    try:
        with engine.connect() as conn:
            kinds = set(conn.execute(select(events.c.kind)).scalars())
    finally:
        engine.dispose()
    assert "task.created" not in kinds


def _post(url: str, token: str | None) -> tuple[int, str]:
    """A bare MCP request (initialize) with `token`: the HTTP status and body."""
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}'
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.slow
def test_no_token_or_a_revoked_one_is_401(served: Served) -> None:
    secret = served.token("old", "read")
    served.revoke("old")
    for token, reason in ((None, "missing bearer token"), (secret, "wrong bearer token")):
        status, body = _post(f"{served.url}/mcp", token)
        assert status == 401 and reason in body


def _client_home(tmp_path: Path, server_url: str, token: str) -> dict[str, str]:
    """Another machine: a home of its own, and only the server's URL and a device token."""
    home = tmp_path / "laptop"
    for sub in ("home", "config", "data", "cache", "work"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home / "home"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "ONDECK_SERVER_URL": server_url,
        "ONDECK_TOKEN": token,
    }


@pytest.mark.slow
def test_ondeck_mcp_in_client_mode_forwards_to_the_server(served: Served, tmp_path: Path) -> None:
    env = _client_home(tmp_path, served.url, served.token("laptop", "write"))
    imports = tmp_path / "laptop" / "imports.txt"
    # The proxy's own import log (-X importtime, on its stderr): what the process loaded.
    params = StdioServerParameters(
        command="/bin/sh",
        args=["-c", f'exec "{ONDECK}" mcp 2>"{imports}"'],
        env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
        cwd=str(tmp_path / "laptop" / "work"),
    )

    async def main() -> tuple[set[str], Any, Any, Any]:
        async with Client(params) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            added = await client.call_tool("add_task", {"title": "from the laptop"})
            listed = await client.call_tool("list_tasks", {})
            await asyncio.to_thread(served.revoke, "laptop")
            revoked = await client.call_tool("list_tasks", {})
            return names, added, listed, revoked

    names, added, listed, revoked = asyncio.run(main())
    assert revoked.is_error and "unauthorized:" in _text(revoked), _text(revoked)
    assert "refused the token" in _text(revoked)
    assert {"get_context", "add_task", "recall", "write_handoff"} <= names
    assert added.structured_content["title"] == "from the laptop"
    assert [t["title"] for t in listed.structured_content["tasks"]] == ["from the laptop"]
    assert "mcp:laptop" in served.actors()
    loaded = {
        line.split("|")[-1].strip()
        for line in imports.read_text().splitlines()
        if line.startswith("import time:")
    }
    assert "ondeck.entrypoints.mcp.proxy" in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("sqlalchemy", "psycopg", "psycopg2")}


@pytest.mark.slow
def test_ondeck_mcp_in_client_mode_says_why_it_cannot_start(served: Served, tmp_path: Path) -> None:
    reader = served.token("phone", "read")
    cases = [
        (
            _client_home(tmp_path, served.url, "odk_not-a-token-0123456789abcdef0123456789abcdef"),
            6,
            "refused the token",
        ),
        (_client_home(tmp_path, f"http://127.0.0.1:{free_port()}", reader), 5, "cannot be reached"),
    ]
    for env, code, words in cases:
        done = subprocess.run(
            [ONDECK, "mcp"],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == code, done.stderr
        assert words in done.stderr and done.stderr.count("\n") == 1, done.stderr
        assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_request_names_the_memorys_side(sqlite_template: Path, tmp_path: Path) -> None:
    """Over HTTP the side is named by the URL (or a header); `ondeck mcp` in client mode
    sends its directory's, as the client machine's own rules classify it."""
    work, own = tmp_path / "laptop" / "work" / "api", tmp_path / "laptop" / "own"
    work.mkdir(parents=True)
    own.mkdir(parents=True)
    sides = json.dumps({"work": [str(work.parent)], "personal": [str(own)]})
    with _serving(sqlite_template, tmp_path, ONDECK_SIDES=sides) as served:
        secret = served.token("laptop", "write")

        async def over_http() -> dict[str, Any]:
            got: dict[str, Any] = {}
            async with _client(f"{served.url}/mcp?side=work&project=api", secret) as client:
                got["kept"] = await client.call_tool("remember", {"text": "deploys on fridays"})
            async with _client(f"{served.url}/mcp?side=personal", secret) as client:
                got["personal"] = await client.call_tool("recall", {"query": "fridays"})
            async with _client(f"{served.url}/mcp", secret) as client:
                got["none"] = await client.call_tool("recall", {"query": "fridays"})
                got["tasks"] = await client.call_tool("list_tasks", {})
            async with _client(f"{served.url}/mcp?side=nope", secret) as client:
                got["nope"] = await client.call_tool("list_tasks", {})
            return got

        got = asyncio.run(over_http())
        kept = got["kept"].structured_content
        assert (kept["side"], kept["project"]) == ("work", "api")
        assert got["personal"].structured_content["results"] == []
        assert got["none"].is_error and "?side=personal|work" in _text(got["none"])
        assert not got["tasks"].is_error
        assert got["nope"].is_error and "'nope' is not configured" in _text(got["nope"])

        env = {**_client_home(tmp_path, served.url, secret), "ONDECK_SIDES": sides}
        elsewhere = tmp_path / "laptop" / "elsewhere"
        elsewhere.mkdir()

        async def proxied(cwd: Path) -> Any:
            params = StdioServerParameters(command=ONDECK, args=["mcp"], env=env, cwd=str(cwd))
            async with Client(params) as client:
                return await client.call_tool("recall", {"query": "fridays"})

        unclassified = asyncio.run(proxied(elsewhere))
        assert unclassified.is_error and "belongs to no side" in _text(unclassified)
        hits = asyncio.run(proxied(work)).structured_content["results"]
        assert [hit["snippet"] for hit in hits] == ["deploys on fridays"]
        assert hits[0]["side"] == "work"


def test_without_a_token_mcp_answers_loopback_names_only(
    settings: Settings, engine: Engine
) -> None:
    """A server without `ONDECK_TOKEN` binds loopback only and asks no token, as the API;
    a request addressed to another name (a page of another site, DNS rebinding) is refused."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    app = create_app(settings, engine)
    with TestClient(app, base_url="http://127.0.0.1:8787") as client:
        opened = client.post("/mcp", json=body, headers=accept)
        elsewhere = client.post("/mcp", json=body, headers={**accept, "Host": "evil.example"})
    assert opened.status_code == 200 and opened.headers["mcp-session-id"]
    assert elsewhere.status_code == 421


def test_a_token_limited_to_a_side_holds_mcp_to_that_side(
    sqlite_template: Path, tmp_path: Path
) -> None:
    """`token create --side work` sees and writes the work side only over
    /mcp: naming another side is refused, claim_task {} never takes a personal task."""
    sides = json.dumps({"work": ["/w"], "personal": ["/p"]})
    with _serving(sqlite_template, tmp_path, ONDECK_SIDES=sides) as served:
        owner = served.token("owner-laptop", "write")
        work = served.token("work-laptop", "write", "--side", "work")

        async def over_http() -> dict[str, Any]:
            got: dict[str, Any] = {}
            async with _client(f"{served.url}/mcp?side=personal", owner) as client:
                got["lawyer"] = await client.call_tool(
                    "add_task", {"title": "call the divorce lawyer"}
                )
            async with _client(f"{served.url}/mcp?side=personal", work) as client:
                got["other_side"] = await client.call_tool("list_tasks", {})
            async with _client(f"{served.url}/mcp", work) as client:
                got["claim"] = await client.call_tool("claim_task", {})
                got["claim_lawyer"] = await client.call_tool(
                    "claim_task", {"task_id": got["lawyer"].structured_content["id"]}
                )
                got["list"] = await client.call_tool("list_tasks", {"status": "all"})
                got["add"] = await client.call_tool("add_task", {"title": "업무 work item"})
                got["context"] = await client.call_tool("get_context", {})
            return got

        got = asyncio.run(over_http())
        assert got["lawyer"].structured_content["side"] == "personal"
        assert got["other_side"].is_error and "side 'work' only" in _text(got["other_side"])
        assert got["claim"].is_error and "nothing_claimable" in _text(got["claim"])
        assert got["claim_lawyer"].is_error and "not_found" in _text(got["claim_lawyer"])
        assert got["list"].structured_content["tasks"] == []
        assert got["add"].structured_content["side"] == "work"
        assert "divorce" not in json.dumps(got["context"].structured_content)
