"""Who calls an MCP tool, and from where: what the tools of both transports need to know
about their caller (entrypoints/mcp/tools.py over stdio, entrypoints/mcp/http.py over HTTP)."""

from __future__ import annotations

from dataclasses import dataclass

from mcp.types import ToolAnnotations

from ondeck.core.sides import OWNER, Access
from ondeck.entrypoints.place import Here

# The tools that change nothing: all a `read` token may call over HTTP (entrypoints/mcp/http.py).
READ_ONLY = ToolAnnotations(read_only_hint=True)


@dataclass(frozen=True, kw_only=True)
class Asker:
    """Over stdio, fixed when the server starts: the directory it runs in, and changes
    recorded as `mcp:<client name>`. Over HTTP, each request's: the side and project it
    names, and the token it gave (`mcp:<token name>`, the admin `mcp`)."""

    place: Here
    actor: str | None = None  # every change's actor; None: the transport's own default
    unplaced: str | None = None  # the memory tools' one-line refusal when no side is named
    # What its token may see and write (over HTTP); the owner's over stdio, where the
    # directory's side (`place`) is what the tools read.
    access: Access = OWNER
