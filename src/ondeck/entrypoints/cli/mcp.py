"""`ondeck mcp`: the MCP server over stdio."""

from __future__ import annotations

import typer

from ondeck.entrypoints.cli.common import cli_of


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp(ctx: typer.Context) -> None:
        """Serve the MCP tools over stdio (for `claude mcp add ondeck -- ondeck mcp`)."""
        from ondeck.entrypoints.mcp_server import serve_stdio

        serve_stdio(cli_of(ctx).settings)
