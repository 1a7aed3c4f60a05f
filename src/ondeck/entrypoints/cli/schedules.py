"""`ondeck schedule …`: recurring tasks, reminders and the backup. Thin: parse, call, print.

Each command fetches the JSON of the API's route (`Cli.fetch`: the service call here, or the
server in client mode) and renders its human lines from that JSON alone; `--json` prints it.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

import typer

from ondeck.core.models import MissedPolicy, ScheduleKind
from ondeck.entrypoints.cli.common import cli_of, echo, print_json, print_table, written
from ondeck.entrypoints.cli.sides import InboxOpt, SideOpt, read_view, view_params, write_side

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


def _show(schedule: dict[str, Any], as_json: bool, line: str) -> None:
    if as_json:
        print_json(schedule)
    else:
        echo(line)


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
    side: SideOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a schedule; it first comes due on the first matching day from today (or --start).
    Its side (this directory's, or --side) goes to the tasks and reminders it fires."""
    cli = cli_of(ctx)
    start_on = _day(start)
    fields: dict[str, Any] = {"title": title, "rule": rule, "kind": kind, "body": body}
    fields.update(project=project, priority=priority, missed=missed)
    fields["side"] = write_side(cli.settings, side)

    def create(conn: Any) -> Any:
        from ondeck.work import schedule_calls

        return schedule_calls.create_schedule(conn, cli, start_on=start_on, **fields)

    sent = {**fields, "start_on": start_on and start_on.isoformat()}
    s = cli.fetch("POST", "/schedules", written(cli, create), body=sent)
    _show(
        s,
        as_json,
        f"added schedule {s['id']}: {s['title']} ({s['rule_text']}), next due {s['next_due']}",
    )


@app.command("list")
def list_(
    ctx: typer.Context,
    kind: Annotated[str | None, typer.Option("--kind", help="Only task, remind or backup.")] = None,
    project: Annotated[str | None, typer.Option("--project", help="Only this project.")] = None,
    side: SideOpt = None,
    unclassified: InboxOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List schedules by next due date: this directory's side (or --side, or
    --unclassified for the inbox)."""
    cli = cli_of(ctx)
    view = read_view(cli.settings, side, unclassified)

    def local() -> Any:
        from ondeck.work import schedule_calls

        with cli.read() as conn:
            return schedule_calls.list_schedules(conn, cli, view=view, kind=kind, project=project)

    params = {"kind": kind, "project": project, **view_params(view)}
    found = cli.fetch("GET", "/schedules", local, params=params)
    if as_json:
        print_json(found)
        return
    if not found:
        echo("no schedules")
        return
    print_table(
        ["id", "title", "kind", "rule", "next due", "last fired", "state", "project"],
        [
            [
                s["id"],
                s["title"],
                s["kind"],
                s["rule"],
                s["next_due"],
                s["last_fired_on"],
                _state(s),
                s["project"],
            ]
            for s in found
        ],
        cut=("title",),
    )


def _state(schedule: dict[str, Any]) -> str:
    return "active" if schedule["enabled"] else "paused"


@app.command("show")
def show(ctx: typer.Context, schedule_id: IdArg, as_json: JsonOpt = False) -> None:
    """One schedule with its last fires and its next 5 dates."""
    cli = cli_of(ctx)

    def local() -> Any:
        from ondeck.work import schedule_calls

        with cli.read() as conn:
            return schedule_calls.show_schedule(conn, cli, schedule_id, view=cli.id_view())

    detail = cli.fetch("GET", f"/schedules/{schedule_id}", local)
    if as_json:
        print_json(detail)
        return
    s = detail["schedule"]
    lines = [
        f"schedule {s['id']}: {s['title']}",
        f"  kind       {s['kind']}",
        f"  rule       {s['rule']} ({s['rule_text']})",
        f"  state      {_state(s)}",
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
    echo("\n".join(lines))
    if detail["fires"]:
        print_table(
            ["fire date", "fired at", "task", "skipped"],
            [[f["fire_date"], f["fired_at"], f["task_id"], f["skipped"]] for f in detail["fires"]],
            title="last fires",
        )
    if detail["skipped"]:
        print_table(
            ["recorded", "why", "dates", "first", "last"],
            [[k["at"], k["reason"], k["dates"], k["first"], k["last"]] for k in detail["skipped"]],
            title="dates skipped (never fired)",
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
    start_on = _day(start)
    if project is not None:
        changes["project"] = project or None

    def change(conn: Any) -> Any:
        from ondeck.work import schedule_calls

        starts: dict[str, Any] = {} if start_on is None else {"start_on": start_on}
        return schedule_calls.edit_schedule(
            conn, cli, schedule_id, view=cli.id_view(), **changes, **starts
        )

    sent = {**changes, **({} if start_on is None else {"start_on": start_on.isoformat()})}
    s = cli.fetch("PATCH", f"/schedules/{schedule_id}", written(cli, change), body=sent)
    _show(s, as_json, f"schedule {s['id']}: next due {s['next_due']}")


@app.command("pause")
def pause(ctx: typer.Context, schedule_id: IdArg, as_json: JsonOpt = False) -> None:
    """Stop firing until resumed."""
    cli = cli_of(ctx)

    def change(conn: Any) -> Any:
        from ondeck.work import schedule_calls

        return schedule_calls.pause_schedule(conn, cli, schedule_id, view=cli.id_view())

    s = cli.fetch("POST", f"/schedules/{schedule_id}/pause", written(cli, change))
    _show(s, as_json, f"schedule {s['id']} paused")


@app.command("resume")
def resume(ctx: typer.Context, schedule_id: IdArg, as_json: JsonOpt = False) -> None:
    """Fire again from today on (the paused time is not made up)."""
    cli = cli_of(ctx)

    def change(conn: Any) -> Any:
        from ondeck.work import schedule_calls

        return schedule_calls.resume_schedule(conn, cli, schedule_id, view=cli.id_view())

    s = cli.fetch("POST", f"/schedules/{schedule_id}/resume", written(cli, change))
    _show(s, as_json, f"schedule {s['id']} resumed, next due {s['next_due']}")


@app.command("now")
def now(ctx: typer.Context, schedule_id: IdArg, as_json: JsonOpt = False) -> None:
    """Make it due today (an overdue one keeps its dates); the next jobs tick fires it, once
    however often this is run. Says so only if it will: not if today already fired, nor
    while the jobs loop is not running."""
    cli = cli_of(ctx)

    def pull(conn: Any) -> Any:
        from ondeck.work import schedule_calls

        return schedule_calls.pull_now(conn, cli, schedule_id, view=cli.id_view())

    s = cli.fetch("POST", f"/schedules/{schedule_id}/now", written(cli, pull))
    if as_json:
        print_json(s)
    else:
        echo(f"schedule {s['id']} (next due {s['next_due']}): {s['note']}")


@app.command("rm")
def rm(ctx: typer.Context, schedule_id: IdArg, as_json: JsonOpt = False) -> None:
    """Remove a schedule (its fires and events stay in the history)."""
    cli = cli_of(ctx)
    if cli.client_mode:
        # The route answers 204 with no body: the title for the line is read first.
        s = cli.remote.json("GET", f"/schedules/{schedule_id}")["schedule"]
        cli.remote.json("DELETE", f"/schedules/{schedule_id}")
    else:
        from ondeck.work import schedule_calls

        with cli.write() as conn:
            s = schedule_calls.delete_schedule(conn, cli, schedule_id, view=cli.id_view())
    if as_json:
        print_json({"deleted": s["id"]})
    else:
        echo(f"removed schedule {s['id']}: {s['title']}")
