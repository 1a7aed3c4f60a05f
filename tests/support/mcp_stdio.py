"""`ondeck mcp` as an MCP client starts it: over stdio, on a test database, in a folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

from mcp.client.stdio import StdioServerParameters

from support.hooks import ONDECK


def params(db_url: str, cwd: Path, sides: dict[str, list[str]]) -> StdioServerParameters:
    """`ondeck mcp` started in `cwd`, in UTC, with `sides` configured."""
    return StdioServerParameters(
        command=ONDECK,
        args=["mcp"],
        cwd=str(cwd),
        env={
            **os.environ,
            "ONDECK_DATABASE_URL": db_url,
            "ONDECK_TZ": "UTC",
            "ONDECK_SIDES": json.dumps(sides),
        },
    )
