"""The tools' frame: each tool is made once a process, and told at each call which store it
serves and who asks.

The SDK builds a tool's argument model and JSON schemas from its signature when the tool is
added (a few milliseconds each, for 17 tools), so tools that closed over a store would be
rebuilt for every server: every app the API makes, every stdio server. Made once
(`Toolbox`), shared by every `MCPServer`, they read what they serve from `serving()`, which
the server sets around each call (entrypoints/mcp/tools.py `ToolServer`); a sync tool runs in
a worker thread, which the SDK starts with a copy of the caller's context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations

from ondeck.core.errors import OndeckError
from ondeck.entrypoints.api.models import SideRule
from ondeck.entrypoints.gateway import Call, Store
from ondeck.entrypoints.mcp.asker import Asker
from ondeck.host.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])

# Where a tool's side rule is kept in its description (`_meta`), for clients and the walk.
SIDES_META = "ondeck/sides"
T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Serving:
    """What one tool call serves: the store it reads and writes, and who asks."""

    store: Store
    asker: Asker


_SERVING: ContextVar[Serving | None] = ContextVar("ondeck_mcp_serving", default=None)


def serving() -> Serving:
    """The call's store and asker; a tool called outside a server's call is refused."""
    found = _SERVING.get()
    if found is None:
        raise ToolError("no server: ondeck's tools are called through an ondeck MCP server")
    return found


def settings() -> Settings:
    """The served store's settings."""
    return serving().store.settings


def asker() -> Asker:
    """Who asks this call, and from where."""
    return serving().asker


def call(fn: Callable[[Call], T]) -> T:
    """Run a tool's body as one call on the served store; refusals become tool errors."""
    try:
        return fn(serving().store.call())
    except OndeckError as exc:
        raise ToolError(f"{exc.code}: {exc.message}") from None


@contextmanager
def serving_as(call: Serving) -> Iterator[None]:
    reset = _SERVING.set(call)
    try:
        yield
    finally:
        _SERVING.reset(reset)


class Toolbox:
    """Collects tools as `MCPServer.tool` would add them: `@box.tool(annotations=…)`."""

    def __init__(self) -> None:
        self.tools: list[Tool] = []

    def tool(
        self,
        name: str | None = None,
        annotations: ToolAnnotations | None = None,
        *,
        sides: SideRule,
    ) -> Callable[[F], F]:
        """`sides`: how the tool meets the side gate, as the API's routes declare it (a tool
        cannot be added without one; tests/security/test_sides_every_door.py calls each)."""

        def add(fn: F) -> F:
            self.tools.append(
                Tool.from_function(
                    fn, name=name, annotations=annotations, meta={SIDES_META: sides.value}
                )
            )
            return fn

        return add
