"""`ondeck setup claude-code|codex|gemini [--undo]`: ondeck in an agent, in one step: for
Claude Code its plugin (entrypoints/hooks/claude_setup.py), for the others ondeck's hooks and
MCP server in their settings (entrypoints/hooks/agent_settings.py). Thin: parse, call, print
what changed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ondeck.entrypoints.cli.common import echo

if TYPE_CHECKING:
    from ondeck.entrypoints.cli.common import Cli
    from ondeck.host.quick_settings import HookConfig

app = typer.Typer(
    help="Install ondeck into an agent (Claude Code, Codex CLI, Gemini CLI).",
    no_args_is_help=True,
)

ProjectDir = Annotated[
    Path | None,
    typer.Option("--project-dir", help="Write the agent's settings in DIR (default: here)."),
]
User = Annotated[
    bool, typer.Option("--user", help="Write the agent's user settings (every project).")
]
Undo = Annotated[bool, typer.Option("--undo", help="Remove exactly what setup added.")]

# Codex skips a new or changed hook, without a word, until a person trusted it.
CODEX_TRUST = (
    "Codex runs new or changed hooks only once you trust them: start `codex`, open /hooks "
    "and trust ondeck's (ondeck does not decide that for you)."
)


@app.command("claude-code")
def claude_code(
    ctx: typer.Context,
    undo: Undo = False,
    claude: Annotated[
        str | None, typer.Option("--claude", help="Claude Code's executable (default: on PATH).")
    ] = None,
) -> None:
    """The ondeck plugin (a mod, with the MCP server) for Claude Code 2.1.287 and later; the
    settings hooks and `claude mcp add` for an older one. Says what it did."""
    import shutil

    from ondeck.core.errors import InvalidInput
    from ondeck.entrypoints.cli.common import cli_of
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
        hooks = hook_config_of(settings)
        if settings.server_url:
            lines = install(setup, "")
        else:
            lines = install(setup, hooks.owner_socket, store=_store_of(cli_of(ctx), hooks))
    for line in lines:
        echo(line)


def _store_of(cli: Cli, hooks: HookConfig) -> str:
    """The id of the database the hooks write to, for the mod to send with its events: as
    the hooks learned it, else the database's own (as the server reads it; kept for the
    hooks); "" when the database cannot be reached (the mod then learns it from its first
    `ondeck hook`)."""
    from ondeck.core.errors import OndeckError

    known = hooks.store_id
    if known is None:
        try:
            known = cli.call.store.store_id()
        except OndeckError:
            return ""
        hooks.learned_store_id(known)
    return known


@app.command("codex")
def codex(project_dir: ProjectDir = None, user: User = False, undo: Undo = False) -> None:
    """Codex CLI: hooks (SessionStart, Stop, PostCompact, SessionEnd) in hooks.json and the
    MCP server in config.toml (~/.codex with --user, else DIR/.codex)."""
    from ondeck.entrypoints.hooks.agent_settings import codex_home, install, uninstall
    from ondeck.sessions.capture.agents import CODEX

    place = codex_home(project_dir, user)
    changes = uninstall(CODEX, place) if undo else install(CODEX, place)
    _say(changes, place, undo)
    if changes and not undo:
        echo(CODEX_TRUST)


@app.command("gemini")
def gemini(project_dir: ProjectDir = None, user: User = False, undo: Undo = False) -> None:
    """Gemini CLI: hooks (SessionStart, AfterAgent, SessionEnd) and the MCP server in
    settings.json (~/.gemini with --user, else DIR/.gemini)."""
    from ondeck.entrypoints.hooks.agent_settings import gemini_settings, install, uninstall
    from ondeck.sessions.capture.agents import GEMINI

    place = gemini_settings(project_dir, user)
    _say(uninstall(GEMINI, place) if undo else install(GEMINI, place), place, undo)


def _say(changes: list[str], place: Path, undo: bool) -> None:
    if not changes:
        nothing = "no ondeck hooks found" if undo else "ondeck is already set up"
        echo(f"{place}: {nothing}, nothing changed")
    for line in changes:
        echo(line)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="setup")
