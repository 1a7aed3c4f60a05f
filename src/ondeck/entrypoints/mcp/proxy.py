"""`ondeck mcp` in client mode (`ONDECK_SERVER_URL`): a stdio MCP server for Claude Code on
this machine that forwards to the server's `/mcp` (entrypoints/mcp/http.py) over streamable
HTTP, with `ONDECK_TOKEN` as its bearer. It touches no database and imports no database
driver nor SQLAlchemy: the tools and their rules live on the server only.

    tools     the server's, as it lists them when the proxy starts; each call forwarded
              in a session of its own (a restarted server has forgotten the last one)
    where     the side and project of this directory, classified by this machine's rules
              (the session hooks' own, sessions/events.observe), sent as the
              `X-Ondeck-Side` / `X-Ondeck-Project` headers (a directory in no side:
              `X-Ondeck-Unclassified`, why, and the server shows it no memory)
    failing   before serving, one request says whether the server answers and takes the
              token (no answer is exit 5, with the URL and the reason; refused, exit 6); a
              call refused later (a token revoked meanwhile) or unanswered (the server
              stopped) is that call's tool error, the reason found by the same request
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import anyio

from ondeck import __version__
from ondeck.core.errors import Unauthorized, Unavailable

if TYPE_CHECKING:
    from ondeck.host.quick_settings import HookConfig

PATH = "/mcp"
# How long the first request may take before the server counts as unreachable.
PREFLIGHT_SECONDS = 10.0
# How long a forwarded call may take (each is one transaction on the server).
CALL_SECONDS = 120.0


def serve_proxy(config: HookConfig, cwd: str | None = None) -> int:
    """Serve stdio until the client goes; raises Unavailable or Unauthorized first."""
    url = f"{config.server_url}{PATH}"
    headers = place_headers(config, cwd)
    if config.token:
        headers["Authorization"] = f"Bearer {config.token}"
    preflight(url, headers, named=bool(config.token))
    try:
        anyio.run(_serve, url, headers)
    except Exception as exc:  # the server lost while listing its tools: one line, no trace
        preflight(url, headers, named=bool(config.token))  # its refusal, if it gives one
        raise Unavailable(f"the server {url} failed: {_shown(exc)}") from None
    return 0


def place_headers(config: HookConfig, cwd: str | None = None) -> dict[str, str]:
    """The side and project of `cwd` (default: here) as the server's /mcp reads them."""
    from ondeck.sessions.capture.events import observe

    try:
        place = cwd or os.getcwd()
    except OSError:  # the directory was removed under us
        place = None
    _, found = observe(place, config)
    headers = {}
    if found.side.value and not found.unclassified:
        headers["X-Ondeck-Side"] = found.side.value
    elif config.sides:
        from urllib.parse import quote

        headers["X-Ondeck-Unclassified"] = quote(found.reason[:300], safe=" /:()'")
    if found.project.value:
        headers["X-Ondeck-Project"] = found.project.value
    return headers


def preflight(url: str, headers: dict[str, str], *, named: bool) -> None:
    """One plain request to /mcp: the bearer check answers it before the MCP transport, so
    401/403 is a refused token and anything else that answers is a server that takes it."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url, headers={**headers, "Accept": "text/event-stream"}, method="GET"
    )
    try:
        with urllib.request.urlopen(request, timeout=PREFLIGHT_SECONDS):
            return
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read(4096)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise Unavailable(f"the server {url} cannot be reached: {reason}") from None
    if status in (401, 403):
        which = "the token in ONDECK_TOKEN" if named else "no token (set ONDECK_TOKEN)"
        raise Unauthorized(f"{url} refused {which}: {_message(body) or status}")
    if status >= 500:
        raise Unavailable(f"the server {url} answered {status}: {_message(body) or 'no reason'}")


def _message(body: bytes) -> str | None:
    try:
        found = json.loads(body)
    except ValueError:
        return None
    if isinstance(found, dict):
        detail = found.get("error", found)
        text = detail.get("message") if isinstance(detail, dict) else None
        return str(text)[:200] if text else None
    return None


async def _serve(url: str, headers: dict[str, str]) -> None:
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.types import CallToolResult, ListToolsResult, TextContent

    async with create_mcp_http_client(headers=headers) as http:
        async with _remote(url, http) as remote:
            tools = (await remote.list_tools()).tools
            instructions = remote.instructions

        async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
            return ListToolsResult(tools=tools)

        async def call_tool(ctx: Any, params: Any) -> CallToolResult:
            # A session of its own per call: the server may have restarted since the last
            # (its sessions gone), and a transport that lost the server fails this call only.
            try:
                with anyio.fail_after(CALL_SECONDS):
                    async with _remote(url, http) as remote:
                        done: CallToolResult = await remote.call_tool(
                            params.name, params.arguments or {}
                        )
                        return done
            except Exception as exc:
                text = await anyio.to_thread.run_sync(_why, url, headers, exc)
                return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

        server: Server[Any] = Server(
            "ondeck",
            version=__version__,
            instructions=instructions,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def _remote(url: str, http: Any) -> Any:
    from mcp.client.streamable_http import streamable_http_client

    from mcp import Client

    return Client(streamable_http_client(url, http_client=http))


def _why(url: str, headers: dict[str, str], exc: BaseException) -> str:
    """One line on a forwarded call that failed: the server's own refusal when it gives one
    (a token revoked meanwhile: not authorized; gone: cannot be reached), else the error."""
    try:
        preflight(url, headers, named="Authorization" in headers)
    except (Unauthorized, Unavailable) as refused:
        return f"{refused.code}: {refused.message}"
    return f"the call to {url} failed: {_shown(exc)}"


def _shown(exc: BaseException) -> str:
    """The first error inside the task groups' wrapping, on one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return " ".join(str(exc).split())[:300] or type(exc).__name__
