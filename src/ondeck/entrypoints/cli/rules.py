"""`ondeck rule check RULE`."""

from __future__ import annotations

from typing import Annotated

import typer

from ondeck.entrypoints.cli.common import cli_of, echo, print_json

app = typer.Typer(help="Recurrence rules in readable words.", no_args_is_help=True)


@app.command("check")
def check(
    ctx: typer.Context,
    rule: Annotated[
        str, typer.Argument(help="daily | weekly:MON,THU | monthly:1,15,last | every:3")
    ],
    start: Annotated[str | None, typer.Option("--start", help="Start date YYYY-MM-DD.")] = None,
    count: Annotated[int, typer.Option("--count", help="How many next dates (1-100).")] = 5,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show the canonical form, the rule in words and the next dates, or why it is refused."""
    from ondeck.core.rulecheck import check_rule
    from ondeck.core.validation import parse_date

    cli = cli_of(ctx)
    begin = parse_date(start, "--start") if start else None
    result = check_rule(rule, today=cli.today(), start=begin, count=count)
    if as_json:
        print_json(result.to_json())
        return
    echo(f"{result.rule}: {result.description}")
    for day in result.next:
        echo(f"  {day.isoformat()} {day.strftime('%a')}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="rule")
