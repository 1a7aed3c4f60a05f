"""docs/mcp.md names every MCP tool the server lists, and which of them change nothing."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from sqlalchemy import Engine

from mcp import Client
from ondeck.entrypoints.mcp.tools import build_server
from ondeck.host.settings import Settings

PAGE = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"


def _paragraph(text: str, opening: str) -> str:
    """From `opening` to the end of its paragraph or list item."""
    start = text.index(opening)
    ends = [i for i in (text.find("\n\n", start), text.find("\n- ", start + 1)) if i != -1]
    return text[start : min(ends, default=len(text))]


def test_the_page_names_the_tools_and_the_read_only_ones(
    engine: Engine, settings: Settings
) -> None:
    async def listed() -> dict[str, bool]:
        async with Client(build_server(settings, engine)) as client:
            tools = (await client.list_tools()).tools
            return {t.name: bool(t.annotations and t.annotations.read_only_hint) for t in tools}

    tools = asyncio.run(listed())
    text = PAGE.read_text()
    named = set(re.findall(r"`([a-z_]+)`", _paragraph(text, "`ondeck mcp` serves over stdio")))
    assert named == set(tools)
    read_only = _paragraph(text, "- A `read` token calls only the tools that change nothing")
    assert set(re.findall(r"`([a-z_]+)`", read_only)) - {"read"} == {
        name for name, flag in tools.items() if flag
    }
