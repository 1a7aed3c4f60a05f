"""`ondeck schedule …`: recurring tasks, reminders and the backup. Thin: parse, call, print.

Human lines and tables by default; `--json` prints the same objects as the HTTP API.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ondeck.core.models import MissedPolicy, ScheduleKind
from ondeck.entrypoints.cli.common import Cli, cli_of, print_json, print_table

if TYPE_CHECKING:
    from ondeck.core.models import Schedule

app = typer.Typer(
    help="Schedules: recurring tasks, reminders and the backup.", no_args_is_help=True
)

IdArg = Annotated[int, typer.Argument(help="The schedule's id.", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the objects as JSON.")]
RuleHelp = "daily, weekly:MON,THU, monthly:1,15,last or every:N (see `ondeck rule check`)."
StartHelp = "First possible date, YYYY-MM-DD (default today; every:N counts from it)."
MissedHelp = "After downtime: latest (one fire, the default), all (each date, at most 31), skip."


def _day(text: str | None) -> date | None:
    from ondeck.core.validation import parse_date

    return None if text is None else parse_date(text, "start date")


def _show(cli: Cli, schedule: Schedule, as_json: bool, line: str) -> None:
    if as_json:
        print_json(schedule.to_json(cli.now(), cli.settings.zone))
    else:
        typer.echo(line)


def _state(schedule: Schedule) -> str:
    return "active" if schedule.enabled else "paused"


@app.command("add")
def add(
    ctx: typer.Context,
    title: Annotated[str, typer.Argument(help="What it is about (one line).")],
    rule: Annotated[str, typer.Option("--rule", help=RuleHelp, show_default=False)],
    kind: Annotated[
        str, typer.Option("--kind", help="task (makes a task), remind (only told) or backup.")
    ] = ScheduleKind.TASK.value,
    body: Annotated[str, typer.Option("--body", help="Details for the tasks it makes.")] = "",
    start: Annotated[str | None, typer.Option("--start", help=StartHelp)] = None,
    project: Annotated[str | None, typer.Option("--project", help="Project name.")] = None,
    priority: Annotated[int, typer.Option("--priority", help="0 (most urgent) to 9.")] = 2,
    missed: Annotated[str, typer.Option("--missed", help=MissedHelp)] = MissedPolicy.LATEST.value,
    as_json: JsonOpt = False,
) -> None:
    """Add a schedule; it first comes due on the first matching day from today (or --start)."""
    from ondeck.services import schedules

    cli = cli_of(ctx)
    start_on = _day(start)
    with cli.write() as conn:
        schedule = schedules.create_schedule(
            conn,
            cli.now(),
            cli.settings.zone,
            title=title,
            rule=rule,
            kind=kind,
            body=body,
            start_on=start_on,
            project=project,
            priority=priority,
            missed=missed,
            actor=cli.actor,
        )
    _show(
        cli,
        schedule,
        as_json,
        f"added schedule {schedule.id}: {schedule.title} ({schedule.rule_text}), "
        f"next due {schedule.next_due}",
    )


@app.command("list")
def list_(
    ctx: typer.Context,
    kind: Annotated[str | None, typer.Option("--kind", help="Only task, remind or backup.")] = None,
    project: Annotated[str | None, typer.Option("--project", help="Only this project.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List schedules by next due date."""
    from ondeck.services import schedules

    cli = cli_of(ctx)
    now = cli.now()
    with cli.read() as conn:
        found = schedules.list_schedules(conn, kind=kind, project=project)
    if as_json:
        print_json([s.to_json(now, cli.settings.zone) for s in found])
        return
    if not found:
        typer.echo("no schedules")
        return
    print_table(
        ["id", "title", "kind", "rule", "next due", "last fired", "state", "project"],
        [
            [
                s.id,
                s.title,
                s.kind,
                s.rule,
                s.next_due,
                s.last_fired_on,
                _state(s),
                s.project,
            ]
            for s in found
        ],
    )


@app.command("show")
def show(ctx: typer.Context, schedule_id: IdArg, as_json: JsonOpt = False) -> None:
    """One schedule with its last fires and its next 5 dates."""
    from ondeck.services import schedules

    cli = cli_of(ctx)
    now, zone = cli.now(), cli.settings.zone
    with cli.read() as conn:
        detail = schedules.show_schedule(conn, now, zone, schedule_id)
    if as_json:
        print_json(detail)
        return
    s = detail["schedule"]
    lines = [
        f"schedule {s['id']}: {s['title']}",
        f"  kind       {s['kind']}",
        f"  rule       {s['rule']} ({s['rule_text']})",
        f"  state      {'active' if s['enabled'] else 'paused'}",
        f"  start      {s['start_on']}",
        f"  next due   {s['next_due']}",
        f"  missed     {s['missed']}",
        f"  priority   P{s['priority']}",
    ]
    if s["project"]:
        lines.append(f"  project    {s['project']}")
    if s["body"]:
        lines.append(f"  body       {s['body']}")
    lines.append(f"  last fired {s['last_fired_on'] or 'never'}")
    lines.append("  next dates " + (", ".join(detail["next"]) or "none"))
    typer.echo("\n".join(lines))
    if detail["fires"]:
        print_table(
            ["fire date", "fired at", "task", "skipped"],
            [[f["fire_date"], f["fired_at"], f["task_id"], f["skipped"]] for f in detail["fires"]],
            title="last fires",
        )


@app.command("edit")
def edit(
    ctx: typer.Context,
    schedule_id: IdArg,
    title: Annotated[str | None, typer.Option("--title", help="New title.")] = None,
    rule: Annotated[str | None, typer.Option("--rule", help=RuleHelp)] = None,
    body: Annotated[str | None, typer.Option("--body", help="New details.")] = None,
    start: Annotated[str | None, typer.Option("--start", help=StartHelp)] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="New project; '' removes it.")
    ] = None,
    priority: Annotated[int | None, typer.Option("--priority", help="0 to 9.")] = None,
    missed: Annotated[str | None, typer.Option("--missed", help=MissedHelp)] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a schedule; a new rule or start recomputes its next due date."""
    from ondeck.services import schedules

    cli = cli_of(ctx)
    changes: dict[str, Any] = {
        name: value
        for name, value in {
            "title": title,
            "rule": rule,
            "body": body,
            "priority": priority,
            "missed": missed,
        }.items()
        if value is not None
    }
    if start is not None:
        changes["start_on"] = _day(start)
    if project is not None:
        changes["project"] = project or None
    with cli.write() as conn:
        schedule = schedules.edit_schedule(
            conn, cli.now(), cli.settings.zone, schedule_id, actor=cli.actor, **changes
        )
    _show(cli, schedule, as_json, f"schedule {schedule.id}: next due {schedule.next_due}")


@app.command("pause")
def pause(ctx: typer.Context, schedule_id: IdArg, as_json: JsonOpt = False) -> None:
    """Stop firing until resumed."""
    from ondeck.services import schedules

    cli = cli_of(ctx)
    with cli.write() as conn:
        schedule = schedules.pause_schedule(conn, cli.now(), schedule_id, actor=cli.actor)
    _show(cli, schedule, as_json, f"schedule {schedule.id} paused")


@app.command("resume")
def resume(ctx: typer.Context, schedule_id: IdArg, as_json: JsonOpt = False) -> None:
    """Fire again from today on (the paused time is not made up)."""
    from ondeck.services import schedules

    cli = cli_of(ctx)
    with cli.write() as conn:
        schedule = schedules.resume_schedule(
            conn, cli.now(), cli.settings.zone, schedule_id, actor=cli.actor
        )
    _show(cli, schedule, as_json, f"schedule {schedule.id} resumed, next due {schedule.next_due}")


@app.command("now")
def now(ctx: typer.Context, schedule_id: IdArg, as_json: JsonOpt = False) -> None:
    """Make it due today; the next jobs tick fires it (once, however often this is run)."""
    from ondeck.services import schedules

    cli = cli_of(ctx)
    with cli.write() as conn:
        schedule = schedules.pull_now(
            conn, cli.now(), cli.settings.zone, schedule_id, actor=cli.actor
        )
    _show(
        cli,
        schedule,
        as_json,
        f"schedule {schedule.id} is due today ({schedule.next_due}); the next jobs tick fires it",
    )


@app.command("rm")
def rm(ctx: typer.Context, schedule_id: IdArg, as_json: JsonOpt = False) -> None:
    """Remove a schedule (its fires and events stay in the history)."""
    from ondeck.services import schedules

    cli = cli_of(ctx)
    with cli.write() as conn:
        schedule = schedules.delete_schedule(conn, cli.now(), schedule_id, actor=cli.actor)
    if as_json:
        print_json({"deleted": schedule.id})
    else:
        typer.echo(f"removed schedule {schedule.id}: {schedule.title}")
