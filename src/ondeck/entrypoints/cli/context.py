"""`ondeck context`: what a new session is told, as Markdown, JSON or hook JSON."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ondeck.context.render import Format
from ondeck.core.sides import configured
from ondeck.entrypoints.cli.common import cli_of, echo


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
        brief: Annotated[
            bool,
            typer.Option(
                "--brief/--no-brief", help="Add the brief: handoff, pinned notes, recent sessions."
            ),
        ] = True,
        side: Annotated[
            str | None,
            typer.Option("--side", help="The brief's side (default: the directory's side)."),
        ] = None,
        session: Annotated[
            str | None, typer.Option("--session", help="The session asking (its own id).")
        ] = None,
        source: Annotated[
            str | None,
            typer.Option("--source", help="How it started: startup, resume, clear, compact."),
        ] = None,
    ) -> None:
        """What is on deck today: reminders, running and due tasks, top of the backlog,
        warnings; then the brief (what a session should know that is not a task)."""
        from ondeck.core.sides import SideView
        from ondeck.core.validation import check_project

        cli = cli_of(ctx)
        project = check_project(project)
        # The side (the directory's, or --side) decides the lists too, with or without the
        # brief: a work session sees work tasks and reminders only.
        asked = _brief_of(cli.settings, project, side, session, source)
        place = {"side": asked["side"], "unclassified": asked["unclassified"]}
        if cli.client_mode:
            # The server's directory is not this one: it is given the brief's side and
            # project as this machine classifies them, and reads no git here.
            params: dict[str, Any] = {"format": fmt.value, "project": project, "budget": budget}
            params.update(place)
            if brief:
                params.update(
                    brief=True,
                    brief_project=asked["project"],
                    source=asked["source"],
                    session=asked["session"],
                )
            echo(cli.remote.text("GET", "/context", params=params), nl=False)
            return
        request = None
        if brief:
            from ondeck.memory.brief import BriefRequest

            request = BriefRequest(**asked)
        shown = None if place["unclassified"] else place["side"]
        view = SideView(sides_on=asked["sides_on"], side=shown)
        text = cli.call.context_text(fmt, project, budget, brief=request, view=view)
        echo(text, nl=False)


def _brief_of(
    settings: Any, project: str | None, side: str | None, session: str | None, source: str | None
) -> dict[str, Any]:
    """The brief of `project` in the side given, else the side of this directory: the
    fields of `memory.brief.BriefRequest`."""
    import os

    from ondeck.core.errors import InvalidInput

    if source is not None and source not in ("startup", "resume", "clear", "compact"):
        raise InvalidInput(f"--source {source[:20]!r} is not startup, resume, clear or compact")
    if session is not None and not 0 < len(session.strip()) <= 200:
        raise InvalidInput("--session is 1 to 200 characters")
    sides_on = bool(settings.sides)
    unclassified = False
    if side is not None:
        configured(settings.sides, side)
    if (sides_on and side is None) or project is None:
        # The brief of this directory's side and project, as the session hook would give.
        from ondeck.entrypoints.place import here

        found = here(settings)
        if sides_on and side is None:
            side, unclassified = found.side, found.unclassified
        if project is None and not unclassified and (not sides_on or side == found.side):
            project = found.project
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    return {
        "sides_on": sides_on,
        "side": side,
        "project": project,
        "unclassified": unclassified,
        "source": source,
        "session": session.strip() if session else None,
        "cwd": cwd,
    }
