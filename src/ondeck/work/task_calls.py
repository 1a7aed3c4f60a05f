"""Tasks and leases, one function per operation, each returning the API route's JSON.

The route (`entrypoints/api/tasks.py`), the CLI's command on this machine's database
(`entrypoints/cli/tasks.py`) and the MCP tool (`entrypoints/mcp/tools.py`) all call these,
in the transaction they open; each chooses the side view by its own rule (a token's side, a
directory's, a session's) and passes it in. A lease past its end is told with the jobs
heartbeat, read on the same connection and only when a lease needs it.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from ondeck.core.models import OPEN
from ondeck.core.validation import PRIORITY_DEFAULT
from ondeck.system.heartbeat import health_reader
from ondeck.work import backlog, backlog_leases
from ondeck.work.lease_state import task_json

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy import Connection

    from ondeck.core.models import Task
    from ondeck.core.sides import SideView
    from ondeck.system.caller import Caller
    from ondeck.system.heartbeat import JobsHealth

Duration = str | int | timedelta | None


def _jobs(conn: Connection, at: Caller) -> Callable[[], JobsHealth]:
    return health_reader(conn, at.now(), tick_seconds=at.settings.tick_seconds)


def _json(
    conn: Connection, at: Caller, task: Task, jobs: Callable[[], JobsHealth] | None = None
) -> dict[str, Any]:
    settings = at.settings
    found = jobs or _jobs(conn, at)
    return task_json(task, at.now(), settings.zone, settings.lease_grace, found)


def list_tasks(
    conn: Connection,
    at: Caller,
    *,
    view: SideView,
    status: str | None = None,
    project: str | None = None,
    due_before: date | None = None,
    limit: int = 200,
) -> list[dict[str, Any]]:
    """Tasks by due date, priority and age; `status` as the API takes it (READY,RUNNING
    when none is given, or `all`)."""
    found = backlog.list_tasks(
        conn,
        statuses=backlog.parse_statuses(status) if status else OPEN,
        project=project,
        due_before=due_before,
        limit=limit,
        view=view,
    )
    # The jobs heartbeat read once, and only if a lease is past its end.
    jobs = _jobs(conn, at)
    return [_json(conn, at, t, jobs) for t in found]


def get_task(conn: Connection, at: Caller, task_id: int, *, view: SideView) -> dict[str, Any]:
    return _json(conn, at, backlog.get_task(conn, task_id, view))


def create_task(
    conn: Connection,
    at: Caller,
    *,
    title: str,
    body: str = "",
    priority: int = PRIORITY_DEFAULT,
    due_on: date | None = None,
    project: str | None = None,
    side: str | None,
) -> dict[str, Any]:
    task = backlog.create_task(
        conn,
        at.now(),
        title=title,
        body=body,
        priority=priority,
        due_on=due_on,
        project=project,
        side=side,
        actor=at.actor,
    )
    return _json(conn, at, task)


def edit_task(
    conn: Connection, at: Caller, task_id: int, *, view: SideView, **changes: Any
) -> dict[str, Any]:
    """Only the fields given change (`due_on` or `project` given as None clear them)."""
    task = backlog.edit_task(conn, at.now(), task_id, actor=at.actor, view=view, **changes)
    return _json(conn, at, task)


def claim(
    conn: Connection,
    at: Caller,
    task_id: int | None,
    *,
    owner: str,
    duration: Duration = None,
    project: str | None = None,
    view: SideView,
) -> dict[str, Any]:
    """Claim the task named, or (with no id) the next READY one of `project` if given."""
    if task_id is None:
        task = backlog_leases.claim_next(
            conn,
            at.now(),
            owner=owner,
            duration=duration,
            project=project,
            actor=at.actor,
            view=view,
        )
    else:
        task = backlog_leases.claim_task(
            conn, at.now(), task_id, owner=owner, duration=duration, actor=at.actor, view=view
        )
    return _json(conn, at, task)


def renew_lease(
    conn: Connection,
    at: Caller,
    task_id: int,
    *,
    token: int,
    duration: Duration = None,
    view: SideView,
) -> dict[str, Any]:
    task = backlog_leases.renew_lease(
        conn, at.now(), task_id, token=token, duration=duration, actor=at.actor, view=view
    )
    return _json(conn, at, task)


def complete_task(
    conn: Connection,
    at: Caller,
    task_id: int,
    *,
    token: int | None,
    note: str | None = None,
    view: SideView,
) -> dict[str, Any]:
    task = backlog_leases.complete_task(
        conn, at.now(), task_id, token=token, note=note, actor=at.actor, view=view
    )
    return _json(conn, at, task)


def complete_and_claim_next(
    conn: Connection,
    at: Caller,
    task_id: int,
    *,
    token: int,
    note: str | None = None,
    owner: str,
    duration: Duration = None,
    project: str | None = None,
    view: SideView,
) -> dict[str, Any]:
    """`{"done": …, "next": …}`, next None when no READY task was there to take."""
    done, taken = backlog_leases.complete_and_claim_next(
        conn,
        at.now(),
        task_id,
        token=token,
        note=note,
        owner=owner,
        duration=duration,
        project=project,
        actor=at.actor,
        view=view,
    )
    return {"done": _json(conn, at, done), "next": taken and _json(conn, at, taken)}


def release_task(
    conn: Connection,
    at: Caller,
    task_id: int,
    *,
    token: int | None,
    force: bool = False,
    view: SideView,
) -> dict[str, Any]:
    task = backlog_leases.release_task(
        conn, at.now(), task_id, token=token, force=force, actor=at.actor, view=view
    )
    return _json(conn, at, task)


def cancel_task(
    conn: Connection, at: Caller, task_id: int, *, note: str | None = None, view: SideView
) -> dict[str, Any]:
    task = backlog.cancel_task(conn, at.now(), task_id, note=note, actor=at.actor, view=view)
    return _json(conn, at, task)
