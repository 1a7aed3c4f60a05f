"""The Typer application: global options and the command groups."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any

import typer

from ondeck.entrypoints.cli.common import Cli, echo

app = typer.Typer(
    name="ondeck",
    help="What is on deck today: backlog, schedules, leases, session context.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(asked: bool) -> None:
    if asked:
        from ondeck import __version__

        echo(f"ondeck {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print ondeck's version and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
    db: Annotated[
        str | None, typer.Option("--db", help="Database URL (overrides ONDECK_DATABASE_URL).")
    ] = None,
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            help="Client mode: talk to this ondeck server (overrides ONDECK_SERVER_URL).",
        ),
    ] = None,
) -> None:
    if db is not None and server is not None:
        raise typer.BadParameter("give --db or --server, not both")
    ctx.obj = Cli(db_url=db, server_url=server)


def _register() -> None:
    from ondeck.entrypoints.cli import (
        backup,
        context,
        db,
        exchange,
        mcp,
        notes,
        notes_handoff,
        recall,
        rules,
        schedules,
        server,
        service,
        sessions,
        tasks,
        tokens,
    )
    from ondeck.entrypoints.cli import hook_commands as hooks
    from ondeck.entrypoints.cli import setup_commands as setup

    server.register(app)
    service.register(app)
    app.add_typer(db.app, name="db")
    app.add_typer(tasks.app, name="task")
    context.register(app)
    hooks.register(app)
    setup.register(app)
    mcp.register(app)
    rules.register(app)
    app.add_typer(schedules.app, name="schedule")
    backup.register(app)
    app.add_typer(sessions.app, name="session")
    notes.register(app)
    notes_handoff.register(app)
    recall.register(app)
    exchange.register(app)
    tokens.register(app)


_register()


@cache
def command() -> Any:
    """The click command Typer builds from `app`, once per process: building it reads every
    command's signature (about 0.1 s), and a process that runs several commands (the tests,
    in-process) need not pay that each time."""
    return typer.main.get_command(app)
