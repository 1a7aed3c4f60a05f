"""`ondeck recall QUERY`: search memory (notes, handoffs, compaction summaries, last words,
tasks) of one side. Thin: parse, call services/recall.py, print."""

from __future__ import annotations

from typing import Annotated

import typer

from ondeck.entrypoints.cli.common import cli_of, print_json


def register(app: typer.Typer) -> None:
    @app.command("recall")
    def recall_(
        ctx: typer.Context,
        query: Annotated[
            str, typer.Argument(help='Words to find (each must match; "a phrase" as one).')
        ],
        project: Annotated[
            str | None, typer.Option("--project", help="Only this project (and side-wide notes).")
        ] = None,
        side: Annotated[
            str | None,
            typer.Option("--side", help="The side (default: the current directory's side)."),
        ] = None,
        unclassified: Annotated[
            bool, typer.Option("--unclassified", help="Search the inbox of unclassified items.")
        ] = False,
        kind: Annotated[
            list[str] | None,
            typer.Option(
                "--kind",
                help="note, decision, handoff, compaction, last_word, task (repeat or comma).",
            ),
        ] = None,
        show_all: Annotated[
            bool, typer.Option("--all", help="Also superseded, wrong and expired notes.")
        ] = False,
        limit: Annotated[int, typer.Option("--limit", min=1, max=200)] = 20,
        as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    ) -> None:
        """Search memory: ranked by match, then recency; each result with age and origin."""
        from ondeck.core.validation import check_project
        from ondeck.entrypoints.place import scope_for
        from ondeck.services.recall import parse_kinds, recall, to_lines

        cli = cli_of(ctx)
        settings = cli.settings
        scope = scope_for(settings, side=side, project=check_project(project), inbox=unclassified)
        kinds = parse_kinds(",".join(kind or []))
        now = cli.now()
        with cli.read() as conn:
            result = recall(
                conn, query, scope, cli.today(), kinds=kinds, include_all=show_all, limit=limit
            )
        if as_json:
            print_json(result.to_json(settings.zone, now))
            return
        if not result.hits:
            hint = "" if show_all else " (--all also searches superseded, wrong and expired notes)"
            typer.echo(f"nothing found for {result.query.text!r} in {scope.describe()}{hint}")
            return
        for line in to_lines(result, settings.zone, now):
            typer.echo(line)
        if result.more:
            typer.echo(f"(more results: --limit {min(limit * 2, 200)} shows more)")
