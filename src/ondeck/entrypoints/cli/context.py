"""`ondeck context`: what a new session is told, as Markdown, JSON or hook JSON."""

from __future__ import annotations

from typing import Annotated

import typer

from ondeck.entrypoints.cli.common import cli_of
from ondeck.services.context_render import Format


def register(app: typer.Typer) -> None:
    @app.command("context")
    def context(
        ctx: typer.Context,
        fmt: Annotated[
            Format, typer.Option("--format", help="markdown, json or hook")
        ] = Format.markdown,
        project: Annotated[
            str | None,
            typer.Option("--project", help="Only this project's items (and unscoped ones)."),
        ] = None,
        budget: Annotated[
            int, typer.Option("--budget", min=1, max=500, help="At most this many items.")
        ] = 20,
    ) -> None:
        """What is on deck today: reminders, running and due tasks, top of the backlog, warnings."""
        from ondeck.core.validation import check_project

        cli = cli_of(ctx)
        project = check_project(project)
        typer.echo(cli.call.context_text(fmt, project, budget), nl=False)
