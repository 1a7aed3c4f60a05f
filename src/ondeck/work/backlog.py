"""Tasks: the backlog's records, reading them, and every change a person makes to one.

A task is READY, RUNNING (a holder has a lease with an end), DONE or CANCELLED. Every change
writes its event in the same transaction. Leases (claim, renew, complete, release) are in
`backlog_leases`, which makes its changes with the guarded update below.

How a change of one task is made (edit, cancel; and release and complete by hand), so that
concurrent callers can never both win: lock its row (`SELECT … FOR UPDATE` on PostgreSQL;
SQLite's write transaction already excludes every other writer), decide with the row at
hand (which also gives the precise error and the former holder for the event), then ONE
guarded UPDATE whose WHERE re-checks the status and the token that were decided on
(`guarded_update`).

The Task record and its JSON shape live in `core.models`; the statements the holder's steps
run, built once, in `task_statements`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime, timedelta
from enum import Enum
from typing import Any

from sqlalchemy import Connection, false, insert, select, update

from ondeck.core.clock import aware
from ondeck.core.durations import format_duration
from ondeck.core.errors import Conflict, InvalidInput, NotFound
from ondeck.core.models import OPEN, Task, TaskStatus
from ondeck.core.sides import EVERY_SIDE, SideView, check_side
from ondeck.core.validation import (
    NOTE_MAX,
    PRIORITY_DEFAULT,
    check_body,
    check_date,
    check_id,
    check_priority,
    check_project,
    check_text,
    check_title,
)
from ondeck.db.dialect import insert_for
from ondeck.db.tables import tasks
from ondeck.system import events
from ondeck.work.task_statements import TASK_ORDER, task_from_row


class _Unset(Enum):
    UNSET = 0


UNSET = _Unset.UNSET
"""An edit's "leave this field as it is" (None means "clear it" for due date and project)."""


def get_task_row(conn: Connection, task_id: int) -> Task | None:
    row = conn.execute(select(tasks).where(tasks.c.id == task_id)).first()
    return task_from_row(row) if row else None


# --- input --------------------------------------------------------------------------------


def parse_statuses(text: str | None) -> tuple[TaskStatus, ...] | None:
    """`READY,RUNNING` (any case) → those statuses; `all` → None (no filter)."""
    if text is None or not text.strip():
        return None
    words = [w.strip().upper() for w in text.split(",") if w.strip()]
    if not words or words == ["ALL"]:
        return None
    found: list[TaskStatus] = []
    for word in words:
        try:
            status = TaskStatus(word)
        except ValueError:
            raise InvalidInput(
                f"unknown status {word[:20]!r}: use {', '.join(TaskStatus)} or all"
            ) from None
        if status not in found:
            found.append(status)
    return tuple(found)


def check_note(note: str | None) -> str | None:
    return check_text(note, "note", limit=NOTE_MAX) or None


# --- reading ------------------------------------------------------------------------------


def get_task(conn: Connection, task_id: int, view: SideView = EVERY_SIDE) -> Task:
    """The task, if `view` sees its side: another side's task is "not found", as if it
    were not there (sides are hard partitions)."""
    check_id(task_id)
    task = get_task_row(conn, task_id)
    if task is None or not view.sees(task.side):
        raise NotFound(f"no task {task_id}{in_view(view)}")
    return task


def check_visible(conn: Connection, task_id: int, view: SideView) -> None:
    """Refuse (NotFound) a task of a side `view` does not see, before any change to it."""
    if view.sides_on:
        get_task(conn, task_id, view)


def in_view(view: SideView) -> str:
    return f" in {view.describe()}" if view.sides_on else ""


def side_filter(query: Any, view: SideView) -> Any:
    """`query` (a select over tasks) narrowed to the rows `view` sees."""
    if not view.sides_on:
        return query
    if view.inbox:
        return query.where(tasks.c.side.is_(None))
    if not view.side:
        return query.where(false())
    return query.where(tasks.c.side == view.side)


def list_tasks(
    conn: Connection,
    *,
    statuses: Iterable[TaskStatus] | None = None,
    project: str | None = None,
    due_before: date | None = None,
    limit: int | None = None,
    view: SideView = EVERY_SIDE,
) -> list[Task]:
    """Tasks by due date (undated last), then priority, then age; those `view` sees."""
    query = side_filter(select(tasks).order_by(*TASK_ORDER), view)
    if statuses is not None:
        query = query.where(tasks.c.status.in_([TaskStatus(s).value for s in statuses]))
    if project is not None:
        query = query.where(tasks.c.project == check_project(project))
    if due_before is not None:
        query = query.where(tasks.c.due_on < check_date(due_before, "due before"))
    if limit is not None:
        query = query.limit(max(1, limit))
    return [task_from_row(row) for row in conn.execute(query)]


# --- changes ------------------------------------------------------------------------------


def create_task(
    conn: Connection,
    now: datetime,
    *,
    title: str,
    body: str | None = "",
    priority: int = PRIORITY_DEFAULT,
    due_on: date | None = None,
    project: str | None = None,
    side: str | None = None,
    actor: str,
) -> Task:
    """A READY task. `side`: the one the caller decided (core/sides.py `side_to_write`);
    None with sides configured puts it in the inbox."""
    values = {
        "title": check_title(title),
        "body": check_body(body),
        "priority": check_priority(priority),
        "due_on": _check_date(due_on),
        "project": check_project(project),
        "side": _check_side(side),
    }
    now = aware(now)
    row = conn.execute(
        insert(tasks)
        .values(status=TaskStatus.READY.value, created_at=now, updated_at=now, **values)
        .returning(*tasks.c)
    ).one()
    task = task_from_row(row)
    record_change(
        conn,
        now,
        actor,
        "task.created",
        task,
        title=task.title,
        priority=task.priority,
        due_on=_day(task.due_on),
        project=task.project,
        side=task.side,
    )
    return task


def edit_task(
    conn: Connection,
    now: datetime,
    task_id: int,
    *,
    actor: str,
    title: str | _Unset = UNSET,
    body: str | _Unset | None = UNSET,
    priority: int | _Unset = UNSET,
    due_on: date | _Unset | None = UNSET,
    project: str | _Unset | None = UNSET,
    side: str | _Unset = UNSET,
    view: SideView = EVERY_SIDE,
) -> Task:
    """Change an open task's title, body, priority, due date, project or side.

    None clears the due date or the project; UNSET (the default) leaves a field as it is.
    A side, once given, is moved to another but never taken away (no way back to the
    inbox); the caller checks the side is configured. `view`: the task must be one it sees.
    """
    check_id(task_id)
    changes: dict[str, Any] = {}
    if title is not UNSET:
        changes["title"] = check_title(title)
    if body is not UNSET:
        changes["body"] = check_body(body)
    if priority is not UNSET:
        changes["priority"] = check_priority(priority)
    if due_on is not UNSET:
        changes["due_on"] = _check_date(due_on)
    if project is not UNSET:
        changes["project"] = check_project(project)
    if side is not UNSET:
        changes["side"] = _check_side(side)
        if changes["side"] is None:
            raise InvalidInput("a task's side is moved, never taken away: name a side")
    if not changes:
        raise InvalidInput(
            "nothing to change: give a title, body, priority, due date, project or side"
        )
    before = locked_task(conn, task_id, view)
    if before.status not in OPEN:
        raise Conflict(f"task {task_id} is {before.status}: a closed task is not edited")
    task = guarded_update(conn, now, before, changes)
    shown = {k: _day(v) if k == "due_on" else v for k, v in changes.items()}
    record_change(conn, now, actor, "task.edited", task, changes=shown)
    return task


def cancel_task(
    conn: Connection,
    now: datetime,
    task_id: int,
    *,
    note: str | None = None,
    actor: str,
    view: SideView = EVERY_SIDE,
) -> Task:
    """Drop a READY task. A RUNNING one has a holder: release it first."""
    check_id(task_id)
    note = check_note(note)
    before = locked_task(conn, task_id, view)
    if before.status is TaskStatus.RUNNING:
        raise Conflict(
            f"{describe_state(before, now)}: release it first (with its token, or forced)"
        )
    if before.status is not TaskStatus.READY:
        raise Conflict(f"task {task_id} is already {before.status}")
    task = guarded_update(conn, now, before, {"status": TaskStatus.CANCELLED.value})
    record_change(conn, now, actor, "task.cancelled", task, note=note)
    return task


def insert_many_from_schedule(
    conn: Connection, now: datetime, items: list[dict[str, Any]], *, actor: str = "jobs"
) -> dict[str, int]:
    """The one way a schedule makes tasks, many in one statement (the jobs tick fires
    thousands): `source` is UNIQUE, so a second run for the same fire makes nothing.

    Each item gives source, title, body, priority, project, side (the schedule's), due_on
    and schedule_id.
    Returns {source: new task id} for the tasks created; a source that already had its
    task is absent.
    """
    if not items:
        return {}
    stmt = (
        insert_for(conn, tasks)
        .on_conflict_do_nothing(
            index_elements=[tasks.c.source], index_where=tasks.c.source.is_not(None)
        )
        .returning(tasks.c.id, tasks.c.source)
    )
    rows = [
        {
            "title": item["title"],
            "body": item["body"],
            "status": TaskStatus.READY.value,
            "priority": item["priority"],
            "due_on": item["due_on"],
            "project": item["project"],
            "side": item.get("side"),
            "source": item["source"],
            "created_at": now,
            "updated_at": now,
        }
        for item in items
    ]
    created = {row.source: int(row.id) for row in conn.execute(stmt, rows)}
    events.record_many(
        conn,
        now,
        [
            {
                "actor": actor,
                "kind": "task.created",
                "subject": f"task:{created[item['source']]}",
                "details": {
                    "source": item["source"],
                    "schedule_id": item.get("schedule_id"),
                    "due_on": item["due_on"].isoformat(),
                },
            }
            for item in items
            if item["source"] in created
        ],
    )
    return created


# --- the guarded change, and the words of its refusals (backlog_leases uses them too) ------


def locked_task(conn: Connection, task_id: int, view: SideView = EVERY_SIDE) -> Task:
    """The task's row, locked until the transaction ends (PostgreSQL; SQLite already is);
    "not found" if `view` does not see its side."""
    row = conn.execute(select(tasks).where(tasks.c.id == task_id).with_for_update()).first()
    if row is None or not view.sees(row.side):
        raise NotFound(f"no task {task_id}{in_view(view)}")
    return task_from_row(row)


def _check_side(value: str | None) -> str | None:
    return check_side(value)


def guarded_update(conn: Connection, now: datetime, before: Task, values: dict[str, Any]) -> Task:
    """ONE UPDATE that re-checks the status and token decided on: it changes the row only if
    no one else changed it in between (the row lock makes that so; the guard proves it)."""
    row = conn.execute(
        update(tasks)
        .where(
            tasks.c.id == before.id,
            tasks.c.status == before.status.value,
            tasks.c.lease_token == before.lease_token,
        )
        .values(updated_at=aware(now), **values)
        .returning(*tasks.c)
    ).first()
    if row is None:
        raise changed_meanwhile(before.id)
    return task_from_row(row)


def changed_meanwhile(task_id: int) -> Conflict:
    return Conflict(f"task {task_id} changed while this request ran; nothing was changed")


def describe_state(task: Task, now: datetime) -> str:
    """The task's current state in words, for error messages (relative times: no zone needed)."""
    if task.status is not TaskStatus.RUNNING or task.lease_until is None:
        return f"task {task.id} is {task.status}"
    left = task.lease_until - aware(now)
    if left > timedelta(0):
        lease = f"lease ends in {_rough(left)}"
    else:
        lease = f"lease ended {_rough(-left)} ago, expired"
    return f"task {task.id} is RUNNING, held by {task.lease_owner} ({lease})"


def _rough(delta: timedelta) -> str:
    """`45s`, `59m`, `2h5m`: to the minute once there is one (messages, not records)."""
    seconds = int(delta.total_seconds())
    if seconds >= 60:
        seconds = round(seconds / 60) * 60
    return format_duration(timedelta(seconds=seconds))


def _check_date(value: date | None) -> date | None:
    return None if value is None else check_date(value, "due date")


def record_change(
    conn: Connection, now: datetime, actor: str, kind: str, task: Task, **details: Any
) -> None:
    events.record(conn, now, actor=actor, kind=kind, subject=f"task:{task.id}", details=details)


def instant_text(value: datetime | None) -> str | None:
    return None if value is None else aware(value).isoformat()


def _day(value: date | None) -> str | None:
    return None if value is None else value.isoformat()
