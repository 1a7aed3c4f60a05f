"""`ondeck task …`: the backlog and its leases. Thin: parse, call one service, print.

Each command fetches the JSON of the API's route (`Cli.fetch`: the service call here, or the
server in client mode) and renders its human lines from that JSON alone; `--json` prints it.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any

import typer

from ondeck.core.validation import TASKS_LISTED_MAX
from ondeck.entrypoints.cli.common import cli_of, echo, print_json, print_table, written
from ondeck.entrypoints.cli.sides import InboxOpt, SideOpt, read_view, view_params, write_side

app = typer.Typer(help="The backlog: tasks and their leases.", no_args_is_help=True)

IdArg = Annotated[int, typer.Argument(metavar="ID", help="The task's id.", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the objects as JSON.")]
ForOpt = Annotated[
    str | None,
    typer.Option("--for", help="Lease length such as 15m, 1h, 2d (default 1h, at most 7d)."),
]
NoteOpt = Annotated[str | None, typer.Option("--note", help="A note for the record.")]

EVENTS_SHOWN = 500  # a task's events `show` lists: system.events.MAX_LIMIT, the route's


def _day(text: str | None, name: str = "due date") -> date | None:
    from ondeck.core.validation import parse_date

    return None if text is None else parse_date(text, name)


def _iso(day: date | None) -> str | None:
    return None if day is None else day.isoformat()


# The JSON is work/task_calls.py's, made here as the route makes it; the human lines are
# rendered from that JSON alone (both modes).


def _seconds(instant: str | None) -> str | None:
    """An instant of the JSON (in the server's zone) to the second."""
    if instant is None:
        return None
    return datetime.fromisoformat(instant).isoformat(timespec="seconds")


def _status(task: dict[str, Any]) -> str:
    lease = task["lease"]
    return (
        f"{task['status']} (expired)" if lease and lease["state"] != "running" else task["status"]
    )


def _holder(task: dict[str, Any]) -> str:
    lease = task["lease"]
    if task["lease_owner"] is None or lease is None:
        return ""
    expired = lease["state"] != "running"
    return f"{task['lease_owner']}{':' if expired else ''} {lease['brief']}"


def _lease_line(task: dict[str, Any]) -> str:
    return (
        f"held by {task['lease_owner']} until {_seconds(task['lease_until'])}, "
        f"token {task['lease_token']}"
    )


def _show_task(task: dict[str, Any], as_json: bool, line: str) -> None:
    if as_json:
        print_json(task)
    else:
        echo(line)


@app.command("add")
def add(
    ctx: typer.Context,
    title: Annotated[str, typer.Argument(help="What is to be done (one line).")],
    body: Annotated[str, typer.Option("--body", help="Details, any length up to 20,000.")] = "",
    due: Annotated[str | None, typer.Option("--due", help="Due date, YYYY-MM-DD.")] = None,
    priority: Annotated[int, typer.Option("--priority", help="0 (most urgent) to 9.")] = 2,
    project: Annotated[str | None, typer.Option("--project", help="Project name.")] = None,
    side: SideOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a READY task to the backlog, in this directory's side (or --side)."""
    cli = cli_of(ctx)
    fields: dict[str, Any] = {"title": title, "body": body, "priority": priority}
    fields["project"] = project
    due_on = _day(due)
    fields["side"] = write_side(cli.settings, side)

    def create(conn: Any) -> Any:
        from ondeck.work import task_calls

        return task_calls.create_task(conn, cli, due_on=due_on, **fields)

    task = cli.fetch(
        "POST", "/tasks", written(cli, create), body={**fields, "due_on": _iso(due_on)}
    )
    _show_task(task, as_json, f"added task {task['id']}: {task['title']}")


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
    limit: Annotated[int, typer.Option("--limit", min=1, max=TASKS_LISTED_MAX)] = 200,
    side: SideOpt = None,
    unclassified: InboxOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List tasks by due date (undated last), then priority, then age: this directory's
    side (or --side, or --unclassified for the inbox)."""
    cli = cli_of(ctx)
    before = _day(due_before, "--due-before date")
    view = read_view(cli.settings, side, unclassified)

    def local() -> Any:
        from ondeck.work import task_calls

        with cli.read() as conn:
            return task_calls.list_tasks(
                conn,
                cli,
                view=view,
                status=status,
                project=project,
                due_before=before,
                limit=limit,
            )

    params = {"status": status, "project": project, "due_before": _iso(before), "limit": limit}
    params.update(view_params(view))
    found = cli.fetch("GET", "/tasks", local, params=params)
    if as_json:
        print_json(found)
        return
    if not found:
        echo("no tasks")
        return
    rows = [
        [t["id"], t["priority"], _status(t), t["due_on"], t["project"], t["title"], _holder(t)]
        for t in found
    ]
    print_table(["id", "P", "status", "due", "project", "title", "held by"], rows, cut=("title",))


@app.command("show")
def show(ctx: typer.Context, task_id: IdArg, as_json: JsonOpt = False) -> None:
    """Show a task and its events, newest first."""
    cli = cli_of(ctx)
    history_of: dict[str, Any] = {"subject": f"task:{task_id}", "limit": EVENTS_SHOWN}

    def local() -> Any:
        from ondeck.system import events
        from ondeck.work import task_calls

        with cli.read() as conn:
            shown = task_calls.get_task(conn, cli, task_id, view=cli.id_view())
            history = events.list_events(conn, **history_of)
        return {"task": shown, "events": [e.to_json(cli.settings.zone) for e in history]}

    if cli.client_mode:
        found = {
            "task": cli.remote.json("GET", f"/tasks/{task_id}"),
            "events": cli.remote.json("GET", "/events", params=history_of),
        }
    else:
        found = local()
    if as_json:
        print_json(found)
        return
    task, lease = found["task"], found["task"]["lease"]
    held = None
    if lease:
        held = f"held by {task['lease_owner']}, {lease['summary']}, token {task['lease_token']}"
    fields: list[tuple[str, Any]] = [
        ("status", _status(task)),
        ("priority", task["priority"]),
        ("due", task["due_on"]),
        ("project", task["project"]),
        ("source", task["source"]),
        ("lease", held),
        ("created", _seconds(task["created_at"])),
        ("updated", _seconds(task["updated_at"])),
        ("done", _seconds(task["done_at"])),
    ]
    echo(f"task {task['id']}: {task['title']}")
    for name, value in fields:
        if value is not None:
            echo(f"  {name + ':':<10}{value}")
    if task["body"]:
        echo("")
        echo(task["body"])
    echo("")
    rows = [
        [_seconds(e["at"]), e["actor"], e["kind"], _details(e["details"])] for e in found["events"]
    ]
    print_table(["at", "actor", "event", "details"], rows, fold=("details",))


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
    side: Annotated[
        str | None, typer.Option("--side", help="Move it to this side (out of the inbox).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a task's title, body, priority, due date, project or side."""
    from ondeck.core.errors import InvalidInput

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
    if side is not None:
        from ondeck.core.sides import side_to_write

        changes["side"] = side_to_write(cli.settings.sides, side)

    def change(conn: Any) -> Any:
        from ondeck.work import task_calls

        return task_calls.edit_task(conn, cli, task_id, view=cli.id_view(), **changes)

    sent = {**changes, **({"due_on": _iso(changes["due_on"])} if "due_on" in changes else {})}
    task = cli.fetch("PATCH", f"/tasks/{task_id}", written(cli, change), body=sent)
    _show_task(task, as_json, f"edited task {task['id']}: {', '.join(changes)}")


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
    side: SideOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Claim a task (or the next READY one) of this directory's side (or --side): RUNNING,
    with a lease and its token."""
    from ondeck.core.errors import InvalidInput

    cli = cli_of(ctx)
    if task_id is not None and project is not None:
        raise InvalidInput("--project picks the next task: give it without a task id")
    view = read_view(cli.settings, side)

    def take(conn: Any) -> Any:
        from ondeck.work import task_calls

        return task_calls.claim(
            conn, cli, task_id, owner=owner, duration=lease_for, project=project, view=view
        )

    if task_id is None:
        path, sent = "/tasks/claim-next", {"owner": owner, "for": lease_for, "project": project}
    else:
        path, sent = f"/tasks/{task_id}/claim", {"owner": owner, "for": lease_for}
    if view.sides_on:
        sent["side"] = view.side
    task = cli.fetch("POST", path, written(cli, take), body=sent)
    _show_task(task, as_json, f"claimed task {task['id']}: {task['title']}; {_lease_line(task)}")


@app.command("renew")
def renew(
    ctx: typer.Context,
    task_id: IdArg,
    token: Annotated[int, typer.Option("--token", help="The token the claim gave.")],
    lease_for: ForOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Extend a lease you hold: it then ends that long from now."""
    cli = cli_of(ctx)

    def change(conn: Any) -> Any:
        from ondeck.work import task_calls

        return task_calls.renew_lease(
            conn, cli, task_id, token=token, duration=lease_for, view=cli.id_view()
        )

    sent = {"token": token, "for": lease_for}
    task = cli.fetch("POST", f"/tasks/{task_id}/renew", written(cli, change), body=sent)
    _show_task(task, as_json, f"renewed task {task['id']}; {_lease_line(task)}")


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

    cli = cli_of(ctx)
    if not claim_next:
        if owner is not None or lease_for is not None or project is not None:
            raise InvalidInput("--owner, --for and --project go with --next")

        def complete(conn: Any) -> Any:
            from ondeck.work import task_calls

            return task_calls.complete_task(
                conn, cli, task_id, token=token, note=note, view=cli.id_view()
            )

        path, sent = f"/tasks/{task_id}/complete", {"token": token, "note": note}
        task = cli.fetch("POST", path, written(cli, complete), body=sent)
        _show_task(task, as_json, f"task {task['id']} done: {task['title']}")
        return
    if token is None or owner is None:
        raise InvalidInput("--next is for the lease holder: give --token and --owner")
    view = read_view(cli.settings, None)

    def both(conn: Any) -> Any:
        from ondeck.work import task_calls

        return task_calls.complete_and_claim_next(
            conn,
            cli,
            task_id,
            token=token,
            note=note,
            owner=owner,
            duration=lease_for,
            project=project,
            view=view,
        )

    sent = {"token": token, "note": note, "owner": owner, "for": lease_for, "project": project}
    sent.update(view_params(view))
    path = f"/tasks/{task_id}/complete-and-claim-next"
    found = cli.fetch("POST", path, written(cli, both), body=sent)
    if as_json:
        print_json(found)
        return
    finished, taken = found["done"], found["next"]
    echo(f"task {finished['id']} done: {finished['title']}")
    if taken is None:
        where = f" in project {project}" if project else ""
        echo(f"no READY task to claim{where}")
    else:
        echo(f"claimed task {taken['id']}: {taken['title']}; {_lease_line(taken)}")


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
    cli = cli_of(ctx)

    def change(conn: Any) -> Any:
        from ondeck.work import task_calls

        return task_calls.release_task(
            conn, cli, task_id, token=token, force=force, view=cli.id_view()
        )

    sent = {"token": token, "force": force}
    task = cli.fetch("POST", f"/tasks/{task_id}/release", written(cli, change), body=sent)
    how = " (forced)" if force else ""
    _show_task(task, as_json, f"released task {task['id']}{how}: it is READY again")


@app.command("cancel")
def cancel(
    ctx: typer.Context, task_id: IdArg, note: NoteOpt = None, as_json: JsonOpt = False
) -> None:
    """Cancel a READY task (a RUNNING one must be released first)."""
    cli = cli_of(ctx)

    def change(conn: Any) -> Any:
        from ondeck.work import task_calls

        return task_calls.cancel_task(conn, cli, task_id, note=note, view=cli.id_view())

    task = cli.fetch("POST", f"/tasks/{task_id}/cancel", written(cli, change), body={"note": note})
    _show_task(task, as_json, f"cancelled task {task['id']}: {task['title']}")
