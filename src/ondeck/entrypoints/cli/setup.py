"""`ondeck setup claude-code [--undo]`: Claude Code set up in one step
(entrypoints/hooks/claude_setup.py says what it does and keeps)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

from ondeck.entrypoints.cli.common import cli_of, echo

app = typer.Typer(help="Set an agent up to use ondeck on this machine, in one step.")


@app.command("claude-code")
def claude_code(
    ctx: typer.Context,
    undo: Annotated[bool, typer.Option("--undo", help="Remove exactly what it added.")] = False,
    claude: Annotated[
        str | None, typer.Option("--claude", help="Claude Code's executable (default: on PATH).")
    ] = None,
) -> None:
    """The ondeck plugin (a mod, with the MCP server) for Claude Code 2.1.287 and later; the
    settings hooks and `claude mcp add` for an older one. Says what it did."""
    from ondeck.core.errors import InvalidInput
    from ondeck.entrypoints.hooks.claude_settings import settings_path
    from ondeck.entrypoints.hooks.claude_setup import Setup, install
    from ondeck.entrypoints.hooks.claude_setup import undo as run_undo

    settings = cli_of(ctx).settings
    found = claude or shutil.which("claude")
    if found is None and undo:
        found = "claude"  # the undo runs the `claude` its setup ran (its state file says)
    if found is None:
        raise InvalidInput("Claude Code is not on PATH (`claude`): name it with --claude PATH")
    setup = Setup(
        claude=found,
        settings=settings_path(None, user=True),
        data_dir=Path(settings.data_dir).expanduser(),
    )
    if undo:
        lines = run_undo(setup)
    else:
        from ondeck.host.quick_settings_read import hook_config_of

        # Client mode has no server here: the mod hands every event to `ondeck hook`.
        lines = install(setup, "" if settings.server_url else hook_config_of(settings).owner_socket)
    for line in lines:
        echo(line)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="setup")
