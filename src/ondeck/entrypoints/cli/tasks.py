"""`ondeck task …`: the backlog and its leases. Thin: parse, call one service, print.

Human lines and tables by default; `--json` prints the same objects as the HTTP API.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ondeck.entrypoints.cli.common import Cli, cli_of, print_json, print_table

if TYPE_CHECKING:
    from ondeck.core.models import Task

app = typer.Typer(help="The backlog: tasks and their leases.", no_args_is_help=True)

IdArg = Annotated[int, typer.Argument(metavar="ID", help="The task's id.", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the objects as JSON.")]
ForOpt = Annotated[
    str | None,
    typer.Option("--for", help="Lease length such as 15m, 1h, 2d (default 1h, at most 7d)."),
]
NoteOpt = Annotated[str | None, typer.Option("--note", help="A note for the record.")]


def _day(text: str | None, name: str = "due date") -> date | None:
    from ondeck.core.validation import parse_date

    return None if text is None else parse_date(text, name)


def _status(task: Task, now: datetime) -> str:
    return f"{task.status} (expired)" if task.is_expired(now) else str(task.status)


def _holder(cli: Cli, task: Task) -> str:
    if task.lease_owner is None:
        return ""
    from ondeck.core.clock import local

    until = local(task.lease_until, cli.settings.zone) if task.lease_until else None
    return f"{task.lease_owner} until {until:%Y-%m-%d %H:%M}" if until else task.lease_owner


def _show_task(cli: Cli, task: Task, now: datetime, as_json: bool, line: str) -> None:
    if as_json:
        print_json(task.to_json(now, cli.settings.zone))
    else:
        typer.echo(line)


def _lease_line(cli: Cli, task: Task) -> str:
    return (
        f"held by {task.lease_owner} until {cli.local(task.lease_until)}, token {task.lease_token}"
    )


@app.command("add")
def add(
    ctx: typer.Context,
    title: Annotated[str, typer.Argument(help="What is to be done (one line).")],
    body: Annotated[str, typer.Option("--body", help="Details, any length up to 20,000.")] = "",
    due: Annotated[str | None, typer.Option("--due", help="Due date, YYYY-MM-DD.")] = None,
    priority: Annotated[int, typer.Option("--priority", help="0 (most urgent) to 9.")] = 2,
    project: Annotated[str | None, typer.Option("--project", help="Project name.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a READY task to the backlog."""
    from ondeck.services import backlog

    cli = cli_of(ctx)
    now, due_on = cli.now(), _day(due)
    with cli.write() as conn:
        task = backlog.create_task(
            conn,
            now,
            title=title,
            body=body,
            priority=priority,
            due_on=due_on,
            project=project,
            actor=cli.actor,
        )
    _show_task(cli, task, now, as_json, f"added task {task.id}: {task.title}")


@app.command("list")
def list_(
    ctx: typer.Context,
    status: Annotated[
        str | None,
        typer.Option("--status", help="READY,RUNNING (the default), DONE, CANCELLED or all."),
    ] = None,
    project: Annotated[str | None, typer.Option("--project", help="Only this project.")] = None,
    due_before: Annotated[
        str | None, typer.Option("--due-before", help="Only tasks due before YYYY-MM-DD.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10_000)] = 200,
    as_json: JsonOpt = False,
) -> None:
    """List tasks by due date (undated last), then priority, then age."""
    from ondeck.core.models import OPEN
    from ondeck.services import backlog

    cli = cli_of(ctx)
    statuses = backlog.parse_statuses(status) if status else OPEN
    before = _day(due_before, "--due-before date")
    now = cli.now()
    with cli.read() as conn:
        found = backlog.list_tasks(
            conn, statuses=statuses, project=project, due_before=before, limit=limit
        )
    if as_json:
        print_json([t.to_json(now, cli.settings.zone) for t in found])
        return
    if not found:
        typer.echo("no tasks")
        return
    rows = [
        [
            t.id,
            t.priority,
            _status(t, now),
            t.due_on,
            t.project,
            t.title,
            _holder(cli, t),
        ]
        for t in found
    ]
    print_table(["id", "P", "status", "due", "project", "title", "held by"], rows)


@app.command("show")
def show(ctx: typer.Context, task_id: IdArg, as_json: JsonOpt = False) -> None:
    """Show a task and its events, newest first."""
    from ondeck.services import backlog, events

    cli = cli_of(ctx)
    now, zone = cli.now(), cli.settings.zone
    with cli.read() as conn:
        task = backlog.get_task(conn, task_id)
        history = events.list_events(conn, subject=f"task:{task.id}", limit=events.MAX_LIMIT)
    if as_json:
        print_json({"task": task.to_json(now, zone), "events": [e.to_json(zone) for e in history]})
        return
    fields: list[tuple[str, Any]] = [
        ("status", _status(task, now)),
        ("priority", task.priority),
        ("due", task.due_on),
        ("project", task.project),
        ("source", task.source),
        ("lease", _lease_line(cli, task) if task.lease_owner else None),
        ("created", cli.local(task.created_at)),
        ("updated", cli.local(task.updated_at)),
        ("done", cli.local(task.done_at)),
    ]
    typer.echo(f"task {task.id}: {task.title}")
    for name, value in fields:
        if value is not None:
            typer.echo(f"  {name + ':':<10}{value}")
    if task.body:
        typer.echo("")
        typer.echo(task.body)
    typer.echo("")
    rows = [[cli.local(e.at), e.actor, e.kind, _details(e.details)] for e in history]
    print_table(["at", "actor", "event", "details"], rows)


def _details(details: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in details.items() if v is not None)


@app.command("edit")
def edit(
    ctx: typer.Context,
    task_id: IdArg,
    title: Annotated[str | None, typer.Option("--title")] = None,
    body: Annotated[str | None, typer.Option("--body")] = None,
    priority: Annotated[int | None, typer.Option("--priority", help="0 to 9.")] = None,
    due: Annotated[str | None, typer.Option("--due", help="YYYY-MM-DD.")] = None,
    no_due: Annotated[bool, typer.Option("--no-due", help="Clear the due date.")] = False,
    project: Annotated[str | None, typer.Option("--project")] = None,
    no_project: Annotated[bool, typer.Option("--no-project", help="Clear the project.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Change a task's title, body, priority, due date or project."""
    from ondeck.core.errors import InvalidInput
    from ondeck.services import backlog

    if due is not None and no_due:
        raise InvalidInput("give --due or --no-due, not both")
    if project is not None and no_project:
        raise InvalidInput("give --project or --no-project, not both")
    changes: dict[str, Any] = {}
    for name, value in (("title", title), ("body", body), ("priority", priority)):
        if value is not None:
            changes[name] = value
    if due is not None or no_due:
        changes["due_on"] = _day(due)
    if project is not None or no_project:
        changes["project"] = project
    cli = cli_of(ctx)
    now = cli.now()
    with cli.write() as conn:
        task = backlog.edit_task(conn, now, task_id, actor=cli.actor, **changes)
    _show_task(cli, task, now, as_json, f"edited task {task.id}: {', '.join(changes)}")


@app.command("claim")
def claim(
    ctx: typer.Context,
    owner: Annotated[str, typer.Option("--owner", help="Who holds the lease, such as cli:alice.")],
    task_id: Annotated[
        int | None, typer.Argument(help="The task; without it, the next READY one.")
    ] = None,
    lease_for: ForOpt = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Without ID: the next task of this project.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Claim a task (or the next READY one): RUNNING, with a lease and its token."""
    from ondeck.core.errors import InvalidInput
    from ondeck.services import backlog

    cli = cli_of(ctx)
    now = cli.now()
    if task_id is not None and project is not None:
        raise InvalidInput("--project picks the next task: give it without a task id")
    with cli.write() as conn:
        if task_id is None:
            task = backlog.claim_next(
                conn, now, owner=owner, duration=lease_for, project=project, actor=cli.actor
            )
        else:
            task = backlog.claim_task(
                conn, now, task_id, owner=owner, duration=lease_for, actor=cli.actor
            )
    _show_task(
        cli, task, now, as_json, f"claimed task {task.id}: {task.title}; {_lease_line(cli, task)}"
    )


@app.command("renew")
def renew(
    ctx: typer.Context,
    task_id: IdArg,
    token: Annotated[int, typer.Option("--token", help="The token the claim gave.")],
    lease_for: ForOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Extend a lease you hold: it then ends that long from now."""
    from ondeck.services import backlog

    cli = cli_of(ctx)
    now = cli.now()
    with cli.write() as conn:
        task = backlog.renew_lease(
            conn, now, task_id, token=token, duration=lease_for, actor=cli.actor
        )
    _show_task(cli, task, now, as_json, f"renewed task {task.id}; {_lease_line(cli, task)}")


@app.command("done")
def done(
    ctx: typer.Context,
    task_id: IdArg,
    token: Annotated[
        int | None, typer.Option("--token", help="Needed when the task is RUNNING.")
    ] = None,
    note: NoteOpt = None,
    claim_next: Annotated[
        bool,
        typer.Option("--next", help="Then claim the next READY task (needs --token, --owner)."),
    ] = False,
    owner: Annotated[
        str | None, typer.Option("--owner", help="With --next: who holds the next lease.")
    ] = None,
    lease_for: ForOpt = None,
    project: Annotated[
        str | None, typer.Option("--project", help="With --next: the next task of this project.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Mark a task DONE: a RUNNING one with its lease token, a READY one as it is.

    With --next, the holder also takes the next READY task in the same step; --json then
    prints {"done": …, "next": … or null}.
    """
    from ondeck.core.errors import InvalidInput
    from ondeck.services import backlog

    cli = cli_of(ctx)
    now = cli.now()
    if not claim_next:
        if owner is not None or lease_for is not None or project is not None:
            raise InvalidInput("--owner, --for and --project go with --next")
        with cli.write() as conn:
            task = backlog.complete_task(
                conn, now, task_id, token=token, note=note, actor=cli.actor
            )
        _show_task(cli, task, now, as_json, f"task {task.id} done: {task.title}")
        return
    if token is None or owner is None:
        raise InvalidInput("--next is for the lease holder: give --token and --owner")
    with cli.write() as conn:
        done, taken = backlog.complete_and_claim_next(
            conn,
            now,
            task_id,
            token=token,
            note=note,
            owner=owner,
            duration=lease_for,
            project=project,
            actor=cli.actor,
        )
    if as_json:
        zone = cli.settings.zone
        print_json({"done": done.to_json(now, zone), "next": taken and taken.to_json(now, zone)})
        return
    print(f"task {done.id} done: {done.title}")
    if taken is None:
        where = f" in project {project}" if project else ""
        print(f"no READY task to claim{where}")
    else:
        print(f"claimed task {taken.id}: {taken.title}; {_lease_line(cli, taken)}")


@app.command("release")
def release(
    ctx: typer.Context,
    task_id: IdArg,
    token: Annotated[int | None, typer.Option("--token", help="The lease's token.")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Release someone else's lease (recorded as forced).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Give a RUNNING task back to READY: with its token, or --force."""
    from ondeck.services import backlog

    cli = cli_of(ctx)
    now = cli.now()
    with cli.write() as conn:
        task = backlog.release_task(conn, now, task_id, token=token, force=force, actor=cli.actor)
    how = " (forced)" if force else ""
    _show_task(cli, task, now, as_json, f"released task {task.id}{how}: it is READY again")


@app.command("cancel")
def cancel(
    ctx: typer.Context, task_id: IdArg, note: NoteOpt = None, as_json: JsonOpt = False
) -> None:
    """Cancel a READY task (a RUNNING one must be released first)."""
    from ondeck.services import backlog

    cli = cli_of(ctx)
    now = cli.now()
    with cli.write() as conn:
        task = backlog.cancel_task(conn, now, task_id, note=note, actor=cli.actor)
    _show_task(cli, task, now, as_json, f"cancelled task {task.id}: {task.title}")
