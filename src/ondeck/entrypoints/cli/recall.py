"""`ondeck recall QUERY`: search memory (notes, handoffs, compaction summaries, last words,
tasks) of one side. Thin: parse, call memory/recall.py `recall_json` (or the server's
`GET /recall`), print the JSON it gives."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ondeck.entrypoints.cli.common import cli_of, echo, print_json


def register(app: typer.Typer) -> None:
    # A word of the query may start with a dash (`-minus`, `-1`, `--dry-run` looked up in
    # notes): recall has no short options, so whatever is not one of its options is a word.
    @app.command("recall", context_settings={"ignore_unknown_options": True})
    def recall_(
        ctx: typer.Context,
        words: Annotated[
            list[str],
            typer.Argument(
                help='Words to find (any may match; "a phrase" must match as typed).',
                metavar="QUERY",
            ),
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
        explain: Annotated[
            bool,
            typer.Option("--explain", help="Say why each result matched: words, forms, score."),
        ] = False,
    ) -> None:
        """Search memory: best match first (rarer and more words weigh more), recency breaking
        ties; each result with age, origin and why it matched."""
        from ondeck.core.validation import check_project
        from ondeck.entrypoints.place import scope_for

        cli = cli_of(ctx)
        settings = cli.settings
        query = " ".join(words)
        scope = scope_for(settings, side=side, project=check_project(project), inbox=unclassified)
        kinds = ",".join(kind or [])

        def local() -> dict[str, Any]:
            from ondeck.memory.recall import recall_json

            with cli.write() as conn:  # the index is brought up to date first
                return recall_json(
                    conn, cli, query, scope, kinds=kinds, include_all=show_all, limit=limit
                )

        params = {
            "q": query,
            "side": scope.side,
            "project": scope.project,
            "unclassified": scope.inbox,
            "kind": kinds or None,
            "all": show_all,
            "limit": limit,
        }
        result = cli.fetch("GET", "/recall", local, params=params)
        if as_json:
            print_json(result)
            return
        if not result["results"]:
            hint = "" if show_all else " (--all also searches superseded, wrong and expired notes)"
            echo(f"nothing found for {result['query']!r} in {scope.describe()}{hint}")
            return
        for line in lines_of(result, explain=explain):
            echo(line)
        if result["more"]:
            echo(f"(more results: --limit {min(limit * 2, 200)} shows more)")


NOTE_KINDS = frozenset({"note", "decision", "handoff"})


def lines_of(result: dict[str, Any], *, explain: bool = False) -> list[str]:
    """For people and agents: one block per result, what it is, age, origin, status; with
    `explain`, the words it matched (as the query had them → as the text has them) and
    its score."""
    lines: list[str] = []
    for hit in result["results"]:
        where = hit["project"] or ("(side-wide)" if hit["kind"] in NOTE_KINDS else "-")
        head = f"[{hit['ref']}] {hit['kind']}, {hit['age']}, {where}, {hit['origin']}"
        if hit["kind"] == "task":
            head += f", {hit['status']}"
        if hit["label"]:
            head += f" — {hit['label']}"
        lines.append(head)
        lines.append(f"    {hit['snippet']}")
        if explain:
            lines.append(f"    why: {_why(hit)}")
    return lines


def _why(hit: dict[str, Any]) -> str:
    said = [
        f"{m['word']} → {', '.join(m['forms']) or ' '.join(m['terms'])} (+{m['weight']:.2f})"
        for m in hit.get("matched") or []
    ]
    return f"score {hit.get('score', 0):.2f}: " + "; ".join(said)
