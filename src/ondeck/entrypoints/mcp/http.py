"""MCP over HTTP: the server's `/mcp` (the SDK's streamable HTTP transport), with the tools
of `ondeck mcp`, for `claude mcp add --transport http ondeck https://host:8787/mcp`.

    who       the API's bearer check (api/access.py), on every HTTP request, so a revoked
              token is refused at the next call of a session already open; its identity
              reaches each tool call on the request the SDK hands it
    may       a `read` token calls only the tools that change nothing (annotated read-only);
              any other answers a tool error naming the token and "write scope"
    recorded  every change as `mcp:<token name>` (the admin token, or no token: `mcp`)
    where     there is no working directory: the request names its side and project,
              `/mcp?side=work&project=api` or the headers `X-Ondeck-Side` and
              `X-Ondeck-Project` (`ondeck mcp` in client mode sends those of its directory).
              With sides configured and none named, the memory tools refuse, saying how.

The tools are the stdio server's (tools.ToolServer); who asks is decided at each call, from
the request the SDK hands it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from ondeck.core.access import ADMIN, Identity, TokenScope
from ondeck.core.errors import Forbidden, OndeckError
from ondeck.core.sides import configured
from ondeck.entrypoints.gateway import Store
from ondeck.entrypoints.mcp.asker import Asker
from ondeck.entrypoints.mcp.tools import ToolServer
from ondeck.entrypoints.place import Here
from ondeck.host.settings import Settings

PATH = "/mcp"
SIDE_HEADER = "X-Ondeck-Side"
PROJECT_HEADER = "X-Ondeck-Project"
# Sent by `ondeck mcp` in client mode from a directory its rules put in no side: why
# (percent-encoded, a path may not be ASCII), so the refusal says so rather than how to
# name a side.
UNCLASSIFIED_HEADER = "X-Ondeck-Unclassified"


class _HttpServer(ToolServer):
    """The tools, each call made as the request's identity from the side it names."""

    def __init__(self, store: Store) -> None:
        # The SDK sets up the root logger (if nothing has) at this level: its sessions'
        # comings and goings are not worth a line each on the server's stderr.
        super().__init__(store, log_level="WARNING")

    async def asker_for(self, name: str, context: Context[Any, Any] | None) -> Asker:
        request = _request_of(context)
        identity: Identity = getattr(request.state, "ondeck_identity", None) or ADMIN
        if identity.scope is not TokenScope.WRITE and not await self._reads_only(name):
            refused = Forbidden(
                f"token {identity.token!r} may only read: {name} changes data and needs a "
                "token with write scope"
            )
            raise ToolError(f"{refused.code}: {refused.message}")
        try:
            return asker_of(self.ondeck_store.settings, request, identity)
        except OndeckError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None

    async def _reads_only(self, name: str) -> bool:
        for tool in await self.list_tools():
            if tool.name == name:
                return bool(tool.annotations and tool.annotations.read_only_hint)
        return True  # an unknown tool: the SDK answers that it does not exist


def _request_of(context: Context[Any, Any] | None) -> Request:
    request = None if context is None else context.request_context.request
    if not isinstance(request, Request):
        raise ToolError("no request: the HTTP server's tools are called through /mcp")
    return request


def asker_of(settings: Settings, request: Request, identity: Identity) -> Asker:
    """Who asks (its token) and from where (the side and project the request names)."""
    from ondeck.core.validation import check_project

    # A token held to a side reads and writes that side, whatever the request names.
    side = identity.access().own(
        request.query_params.get("side") or request.headers.get(SIDE_HEADER) or None
    )
    if side is not None:
        configured(settings.sides, side)
    named = request.query_params.get("project") or request.headers.get(PROJECT_HEADER)
    project = check_project(named or None)
    sides = sorted(settings.sides)
    unplaced = None
    why = request.headers.get(UNCLASSIFIED_HEADER)
    if sides and side is None and why:
        from urllib.parse import unquote

        reason = " ".join(unquote(why)[:300].split())
        unplaced = (
            f"this directory belongs to no side ({reason}): ondeck shows and keeps no memory "
            "for it until a person classifies it"
        )
    elif sides and side is None:
        unplaced = (
            f"no side named: add ?side={'|'.join(sides)} to the /mcp URL, or send the "
            f"{SIDE_HEADER} header (ondeck shows and keeps memory per side)"
        )
    place = Here(
        cwd=None,
        side=side,
        project=project,
        unclassified=bool(sides) and side is None,
        reason="no side named" if unplaced else "named by the request",
    )
    return Asker(
        place=place, actor=identity.actor("mcp"), unplaced=unplaced, access=identity.access()
    )


class McpOverHttp:
    """The `/mcp` ASGI endpoint, and the session manager it needs running in the app's
    lifespan (`async with mcp.running(): …`). A session manager runs once, and an app's
    lifespan may run again (tests enter one app twice): each run makes its own."""

    def __init__(self, store: Store) -> None:
        settings = store.settings
        self._server = _HttpServer(store)
        # The bearer guards a server with a token, whatever name it is reached by; without
        # one the server listens on loopback only, and the SDK's own check keeps pages of
        # other sites (DNS rebinding) from calling it.
        self._security = (
            TransportSecuritySettings(enable_dns_rebinding_protection=False)
            if settings.token_value
            else None
        )
        self._manager: StreamableHTTPSessionManager | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if manager is None:  # the app runs without its lifespan (a bare test client)
            from starlette.responses import PlainTextResponse

            await PlainTextResponse("MCP is not running", status_code=503)(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        self._server.streamable_http_app(
            streamable_http_path=PATH, transport_security=self._security
        )
        manager = self._server.session_manager
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None
