"""`ondeck hook session-start|stop|post-compact|session-end|install|uninstall`: Claude Code's
hooks, and with `--agent codex|gemini-cli` the same commands for those agents' hooks (the
usual path is entrypoints/cli.main's, which runs them without Typer)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ondeck.entrypoints.cli.common import cli_of, echo

Agent = Annotated[
    str,
    typer.Option(
        "--agent",
        help="Whose hook this is: claude-code, codex or gemini-cli.",
        callback=lambda value: _agent(value),
    ),
]


def _agent(value: str) -> str:
    from ondeck.core.errors import InvalidInput
    from ondeck.sessions.capture.agents import AGENTS

    if value not in AGENTS:
        raise InvalidInput(f"agent {value[:40]!r} is not one of {', '.join(AGENTS)}")
    return value


app = typer.Typer(
    help="Claude Code hooks: session context in, session records kept, leases released out.",
    no_args_is_help=True,
)


@app.command("session-start")
def session_start(ctx: typer.Context, agent: Agent = "claude-code") -> int:
    """Read the SessionStart hook JSON on stdin, print the hook JSON with today's context."""
    from ondeck.entrypoints.hooks.verbs import session_start as run

    return run(sys.stdin, sys.stdout, cli_of(ctx).db_url, agent)


@app.command("stop")
def stop(ctx: typer.Context, agent: Agent = "claude-code") -> int:
    """Read the Stop hook JSON on stdin, keep the session's last word."""
    from ondeck.entrypoints.hooks.verbs import run_hook

    return run_hook("stop", sys.stdin, sys.stdout, cli_of(ctx).db_url, agent)


@app.command("post-compact")
def post_compact(ctx: typer.Context, agent: Agent = "claude-code") -> int:
    """Read the PostCompact hook JSON on stdin, keep Claude's summary of the compaction."""
    from ondeck.entrypoints.hooks.verbs import run_hook

    return run_hook("post-compact", sys.stdin, sys.stdout, cli_of(ctx).db_url, agent)


@app.command("session-end")
def session_end(ctx: typer.Context, agent: Agent = "claude-code") -> int:
    """Read the SessionEnd hook JSON on stdin: end the session's record (with what git says
    it did) and release the leases it held."""
    from ondeck.entrypoints.hooks.verbs import run_hook

    return run_hook("session-end", sys.stdin, sys.stdout, cli_of(ctx).db_url, agent)


@app.command("brief", hidden=True)
def brief(ctx: typer.Context) -> int:
    """For the Claude Code mod in client mode (its `/ondeck`): print the brief and the status
    line of the session in ONDECK_MOD_STATUS, asked with this machine's token."""
    from ondeck.entrypoints.hooks.mod_answer import brief_verb

    return brief_verb(sys.stdout, cli_of(ctx).db_url)


ProjectDir = Annotated[
    Path | None,
    typer.Option("--project-dir", help="Write DIR/.claude/settings.json (default: here)."),
]
User = Annotated[bool, typer.Option("--user", help="Write ~/.claude/settings.json instead.")]


@app.command("install")
def install(project_dir: ProjectDir = None, user: User = False) -> None:
    """Add ondeck's hooks (SessionStart, Stop, PostCompact, SessionEnd) to Claude Code's
    settings.json."""
    from ondeck.entrypoints.hooks.claude_settings import install as run
    from ondeck.entrypoints.hooks.claude_settings import settings_path

    path = settings_path(project_dir, user)
    changes = run(path)
    for line in changes or [f"{path}: ondeck's hooks are already there, nothing changed"]:
        echo(line if not changes else f"{path}: {line}")


@app.command("uninstall")
def uninstall(project_dir: ProjectDir = None, user: User = False) -> None:
    """Remove exactly the hooks `ondeck hook install` added."""
    from ondeck.entrypoints.hooks.claude_settings import settings_path
    from ondeck.entrypoints.hooks.claude_settings import uninstall as run

    path = settings_path(project_dir, user)
    changes = run(path)
    for line in changes or [f"{path}: no ondeck hooks found, nothing changed"]:
        echo(line if not changes else f"{path}: {line}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="hook")
