"""`ondeck mcp`: the MCP server over stdio."""

from __future__ import annotations

import typer

from ondeck.entrypoints.cli.common import cli_of


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp(ctx: typer.Context) -> None:
        """Serve the MCP tools over stdio (for `claude mcp add ondeck -- ondeck mcp`); in
        client mode (ONDECK_SERVER_URL), forward them to that server's /mcp."""
        settings = cli_of(ctx).settings
        if settings.server_url:
            from ondeck.entrypoints.mcp.proxy import serve_proxy
            from ondeck.host.settings_bridge import hook_config_of

            serve_proxy(hook_config_of(settings))
            return
        from ondeck.entrypoints.mcp.tools import serve_stdio

        serve_stdio(settings)
