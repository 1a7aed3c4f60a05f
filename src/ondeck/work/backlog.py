"""Tasks and leases: the backlog's rules, in one place.

A task is READY, RUNNING (a holder has a lease with an end), DONE or CANCELLED. Every change
writes its event in the same transaction.

Leases are fenced by `lease_token`: every claim sets it to one more than before and nothing
else lowers it, so a holder whose lease was reaped and retaken presents an old number and is
refused (`LeaseLost`) instead of completing someone else's work.

How a change is made, so that concurrent callers can never both win:

- a holder's own steps (claim, renew, complete with the token): ONE guarded UPDATE whose
  WHERE states what must hold (READY; or RUNNING with this token), with its event in the same
  statement on PostgreSQL (`events.Recorded`): one round trip on the hot path. Only when it
  matches nothing is the row read, to say precisely why (`LeaseLost`, `Conflict`, `NotFound`);
- other changes of one task (edit, release, cancel, complete by hand): lock its row
  (`SELECT … FOR UPDATE` on PostgreSQL; SQLite's write transaction already excludes every
  other writer), decide with the row at hand (which also gives the precise error and the
  former holder for the event), then ONE guarded UPDATE whose WHERE re-checks the status and
  the token that were decided on;
- the next READY task: the guarded UPDATE's subselect picks the row with
  `FOR UPDATE SKIP LOCKED`, so two claimers on PostgreSQL take two different tasks without
  waiting on each other (on SQLite the write transaction serialises them).

On PostgreSQL the holder's steps are each a single statement when they succeed, so they are
atomic even on a connection that commits every statement (`db.engine.autocommitting`).

The Task record and its JSON shape live in `core.models`; the statements the holder's steps
run, built once, in `task_statements`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime, timedelta
from enum import Enum
from typing import Any, NoReturn

from sqlalchemy import Connection, false, insert, select, update

from ondeck.core.clock import aware
from ondeck.core.durations import TooLong, format_duration, parse_duration
from ondeck.core.errors import Conflict, InvalidInput, LeaseLost, NotFound, NothingClaimable
from ondeck.core.models import OPEN, TaskStatus
from ondeck.core.models import Task as Task  # re-exported: its callers' old home
from ondeck.core.sides import EVERY_SIDE, SideView, check_side
from ondeck.core.validation import (
    NOTE_MAX,
    OWNER_MAX,
    PRIORITY_DEFAULT,
    check_body,
    check_date,
    check_id,
    check_line,
    check_priority,
    check_project,
    check_text,
    check_title,
    check_token,
)
from ondeck.db.dialect import insert_for
from ondeck.db.tables import tasks
from ondeck.system import events
from ondeck.work import task_statements as sql
from ondeck.work.task_statements import TASK_ORDER
from ondeck.work.task_statements import task_from_row as task_from_row  # re-exported

DEFAULT_LEASE = timedelta(hours=1)
MAX_LEASE = timedelta(days=7)


# Names callers imported from the backlog before the record moved to `core.models` (the
# dashboard's queries still do: Status, Task, task_from_row); new code imports them from
# their homes, `core.models` and `task_statements`.
Status = TaskStatus


class _Unset(Enum):
    UNSET = 0


UNSET = _Unset.UNSET
"""An edit's "leave this field as it is" (None means "clear it" for due date and project)."""


def get_task_row(conn: Connection, task_id: int) -> Task | None:
    row = conn.execute(select(tasks).where(tasks.c.id == task_id)).first()
    return task_from_row(row) if row else None


# --- input --------------------------------------------------------------------------------


def lease_duration(value: str | int | timedelta | None) -> timedelta:
    """A lease length: `1h` when not given, more than nothing, at most 7 days."""
    if value is None:
        return DEFAULT_LEASE
    try:
        duration = parse_duration(value, name="lease duration", maximum=MAX_LEASE)
    except TooLong as exc:
        raise InvalidInput(f"{exc} (renew the lease to keep a task longer)") from None
    if duration <= timedelta(0):
        raise InvalidInput("lease duration must be more than 0, such as 15m or 1h")
    return duration


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


def _owner(owner: str) -> str:
    return check_line(owner, "owner", limit=OWNER_MAX)


def _note(note: str | None) -> str | None:
    return check_text(note, "note", limit=NOTE_MAX) or None


# --- reading ------------------------------------------------------------------------------


def get_task(conn: Connection, task_id: int, view: SideView = EVERY_SIDE) -> Task:
    """The task, if `view` sees its side: another side's task is "not found", as if it
    were not there (sides are hard partitions)."""
    check_id(task_id)
    task = get_task_row(conn, task_id)
    if task is None or not view.sees(task.side):
        raise NotFound(f"no task {task_id}{_in(view)}")
    return task


def check_visible(conn: Connection, task_id: int, view: SideView) -> None:
    """Refuse (NotFound) a task of a side `view` does not see, before any change to it."""
    if view.sides_on:
        get_task(conn, task_id, view)


def _in(view: SideView) -> str:
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
    _record(
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
    before = _locked(conn, task_id, view)
    if before.status not in OPEN:
        raise Conflict(f"task {task_id} is {before.status}: a closed task is not edited")
    task = _guarded_update(conn, now, before, changes)
    shown = {k: _day(v) if k == "due_on" else v for k, v in changes.items()}
    _record(conn, now, actor, "task.edited", task, changes=shown)
    return task


def claim_task(
    conn: Connection,
    now: datetime,
    task_id: int,
    *,
    owner: str,
    duration: str | int | timedelta | None = None,
    actor: str,
    view: SideView = EVERY_SIDE,
) -> Task:
    """Take a READY task: RUNNING, held by `owner` until now + duration, with a new token.
    `view`: the task must be of a side it sees."""
    check_id(task_id)
    owner, length = _owner(owner), lease_duration(duration)
    check_visible(conn, task_id, view)
    task = _take(conn, now, sql.CLAIM, owner, length, actor, task_id=task_id)
    if task is None:
        before = get_task(conn, task_id)
        if before.status is TaskStatus.READY:
            raise _changed(task_id)
        raise Conflict(f"{_state(before, now)}: only a READY task can be claimed")
    return task


def claim_next(
    conn: Connection,
    now: datetime,
    *,
    owner: str,
    duration: str | int | timedelta | None = None,
    project: str | None = None,
    actor: str,
    view: SideView = EVERY_SIDE,
) -> Task:
    """Take the next READY task (due date first, undated last, then priority, then age)
    of the side `view` sees: never one of another side, nor one waiting in the inbox."""
    owner, length = _owner(owner), lease_duration(duration)
    project = check_project(project)
    claim, _chain, params = _next_in(project, view)
    task = None if view.closed else _take(conn, now, claim, owner, length, actor, **params)
    if task is None:
        where = f" in project {project}" if project else ""
        raise NothingClaimable(f"no READY task to claim{where}{_in(view)}")
    return task


def _next_in(
    project: str | None, view: SideView
) -> tuple[events.Recorded, events.Chain, dict[str, Any]]:
    """The claim of the next task, and done-then-next, within `project` and `view`."""
    in_side = view.sides_on
    if view.inbox:
        # A person works the inbox on the dashboard; nothing claims from it.
        raise InvalidInput("the inbox is not claimed from: give its tasks a side first")
    params: dict[str, Any] = {}
    if project is not None:
        params["in_project"] = project
    if in_side:
        params["in_side"] = view.side or ""
    claim, chain = sql.NEXT[(project is not None, in_side)]
    return claim, chain, params


def renew_lease(
    conn: Connection,
    now: datetime,
    task_id: int,
    *,
    token: int,
    duration: str | int | timedelta | None = None,
    actor: str,
    view: SideView = EVERY_SIDE,
) -> Task:
    """Extend the lease to now + duration; the token stays (it still names the same lease)."""
    check_id(task_id)
    check_token(token)
    # Lease tokens are small numbers: the side is checked, not left to the token.
    check_visible(conn, task_id, view)
    until = aware(now) + lease_duration(duration)
    row = sql.RENEW.run(
        conn,
        now,
        {"task_id": task_id, "token": token, "now": aware(now), "until": until},
        actor=actor,
        details={"owner": None, "token": token, "lease_until": _instant(until)},
    )
    if row is None:
        _refuse_holder(conn, now, task_id, token)
    return task_from_row(row)


def complete_task(
    conn: Connection,
    now: datetime,
    task_id: int,
    *,
    token: int | None,
    note: str | None = None,
    actor: str,
    view: SideView = EVERY_SIDE,
) -> Task:
    """Mark a task DONE: a RUNNING one by its holder (with the token), a READY one by hand."""
    check_id(task_id)
    if token is not None:
        check_token(token)
    note = _note(note)
    check_visible(conn, task_id, view)
    if token is not None:
        row = sql.COMPLETE.run(
            conn,
            now,
            {"task_id": task_id, "token": token, "now": aware(now)},
            actor=actor,
            details=_completed(token, note),
        )
        if row is None:
            _refuse_holder(conn, now, task_id, token)
        return task_from_row(row)
    before = _locked(conn, task_id)
    if before.status is TaskStatus.RUNNING:
        raise Conflict(
            f"{_state(before, now)}: give its lease token to complete it, or release it with"
            " force first"
        )
    elif before.status is not TaskStatus.READY:
        raise Conflict(f"task {task_id} is already {before.status}")
    done = {**_no_lease(), "status": TaskStatus.DONE.value, "done_at": aware(now)}
    task = _guarded_update(conn, now, before, done)
    _record(
        conn, now, actor, "task.completed", task, owner=None, token=None, by_hand=True, note=note
    )
    return task


def complete_and_claim_next(
    conn: Connection,
    now: datetime,
    task_id: int,
    *,
    token: int,
    note: str | None = None,
    owner: str,
    duration: str | int | timedelta | None = None,
    project: str | None = None,
    actor: str,
    view: SideView = EVERY_SIDE,
) -> tuple[Task, Task | None]:
    """A worker's "done, and the next one please": complete the task held with `token`, then
    take the next READY task (as `claim_next`, within `view`; None when there is none). On
    PostgreSQL one statement, both events included. Nothing is taken when the completion is
    refused."""
    check_id(task_id)
    check_token(token)
    note = _note(note)
    owner, length = _owner(owner), lease_duration(duration)
    project = check_project(project)
    check_visible(conn, task_id, view)
    until = aware(now) + length
    params = {"task_id": task_id, "token": token, "now": aware(now), "owner": owner}
    params["until"] = until
    _claim, chain, more = _next_in(project, view)
    params.update(more)
    done, taken = chain.run(
        conn,
        now,
        params,
        actor=actor,
        details=[_completed(token, note), _claimed(owner, until, next_ready=True)],
    )
    if done is None:
        _refuse_holder(conn, now, task_id, token)
    return task_from_row(done), None if taken is None else task_from_row(taken)


def release_task(
    conn: Connection,
    now: datetime,
    task_id: int,
    *,
    token: int | None = None,
    force: bool = False,
    actor: str,
    view: SideView = EVERY_SIDE,
) -> Task:
    """Give a RUNNING task back (READY): by its holder with the token, or by a person with force."""
    check_id(task_id)
    if token is not None and force:
        raise InvalidInput("give either the lease token or force, not both")
    if token is None and not force:
        raise InvalidInput("give the lease token, or force to release someone else's lease")
    if token is not None:
        check_token(token)
    before = _locked(conn, task_id, view)
    if token is not None:
        _check_lease(before, token, now)
    elif before.status is not TaskStatus.RUNNING:
        raise Conflict(f"task {task_id} is {before.status}: there is no lease to release")
    task = _guarded_update(conn, now, before, {**_no_lease(), "status": TaskStatus.READY.value})
    _record(
        conn,
        now,
        actor,
        "task.released",
        task,
        owner=before.lease_owner,
        token=before.lease_token,
        lease_until=_instant(before.lease_until),
        force=force,
    )
    return task


def release_held_by(
    conn: Connection, now: datetime, *, owner: str, actor: str, reason: str | None = None
) -> list[int]:
    """Release every lease `owner` holds (a session ending); returns the tasks' ids.

    The holder itself lets go, so this is not a forced release; each UPDATE re-checks the
    token it read, like every other lease change.
    """
    owner = _owner(owner)
    held = conn.execute(
        select(tasks)
        .where(tasks.c.status == TaskStatus.RUNNING.value, tasks.c.lease_owner == owner)
        .order_by(tasks.c.id)
        .with_for_update()
    ).all()
    released: list[int] = []
    for row in held:
        before = task_from_row(row)
        task = _guarded_update(conn, now, before, {**_no_lease(), "status": TaskStatus.READY.value})
        _record(
            conn,
            now,
            actor,
            "task.released",
            task,
            owner=owner,
            token=before.lease_token,
            lease_until=_instant(before.lease_until),
            force=False,
            reason=(reason or "")[:200] or None,
        )
        released.append(task.id)
    return released


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
    note = _note(note)
    before = _locked(conn, task_id, view)
    if before.status is TaskStatus.RUNNING:
        raise Conflict(f"{_state(before, now)}: release it first (with its token, or forced)")
    if before.status is not TaskStatus.READY:
        raise Conflict(f"task {task_id} is already {before.status}")
    task = _guarded_update(conn, now, before, {"status": TaskStatus.CANCELLED.value})
    _record(conn, now, actor, "task.cancelled", task, note=note)
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


# --- helpers ------------------------------------------------------------------------------


def _locked(conn: Connection, task_id: int, view: SideView = EVERY_SIDE) -> Task:
    """The task's row, locked until the transaction ends (PostgreSQL; SQLite already is);
    "not found" if `view` does not see its side."""
    row = conn.execute(select(tasks).where(tasks.c.id == task_id).with_for_update()).first()
    if row is None or not view.sees(row.side):
        raise NotFound(f"no task {task_id}{_in(view)}")
    return task_from_row(row)


def _check_side(value: str | None) -> str | None:
    return check_side(value)


def _guarded_update(conn: Connection, now: datetime, before: Task, values: dict[str, Any]) -> Task:
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
        raise _changed(before.id)
    return task_from_row(row)


def _take(
    conn: Connection,
    now: datetime,
    claim: events.Recorded,
    owner: str,
    length: timedelta,
    actor: str,
    **params: Any,
) -> Task | None:
    """Run one of the claim statements below, with its event; None if it matched nothing."""
    until = aware(now) + length
    row = claim.run(
        conn,
        now,
        {**params, "now": aware(now), "owner": owner, "until": until},
        actor=actor,
        details=_claimed(owner, until, next_ready=claim is not sql.CLAIM),
    )
    return None if row is None else task_from_row(row)


def _claimed(owner: str, until: datetime, *, next_ready: bool) -> dict[str, Any]:
    # The token is the changed row's (`after`); None keeps its place in the details.
    return {"owner": owner, "token": None, "lease_until": _instant(until), "next": next_ready}


def _completed(token: int, note: str | None) -> dict[str, Any]:
    # The owner is the row's before the change (`before`).
    return {"owner": None, "token": token, "by_hand": False, "note": note}


def _refuse_holder(conn: Connection, now: datetime, task_id: int, token: int) -> NoReturn:
    """Why a holder's guarded UPDATE matched nothing: no such task, or the lease was lost."""
    before = get_task(conn, task_id)
    _check_lease(before, token, now)
    raise _changed(task_id)


def _changed(task_id: int) -> Conflict:
    return Conflict(f"task {task_id} changed while this request ran; nothing was changed")


def _check_lease(task: Task, token: int, now: datetime) -> None:
    """The token must name the current lease of a RUNNING task, or the lease was lost."""
    if task.status is TaskStatus.RUNNING and task.lease_token == token:
        return
    state = _state(task, now)
    if task.status is TaskStatus.READY:
        state += " (its lease was released or reaped)"
    raise LeaseLost(f"lease lost: {state}; token {token} is not the current lease")


def _state(task: Task, now: datetime) -> str:
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


def _no_lease() -> dict[str, Any]:
    # The token is kept: the next claim adds one to it, so old tokens never come back.
    return {"lease_owner": None, "lease_until": None}


def _check_date(value: date | None) -> date | None:
    return None if value is None else check_date(value, "due date")


def _record(
    conn: Connection, now: datetime, actor: str, kind: str, task: Task, **details: Any
) -> None:
    events.record(conn, now, actor=actor, kind=kind, subject=f"task:{task.id}", details=details)


def _instant(value: datetime | None) -> str | None:
    return None if value is None else aware(value).isoformat()


def _day(value: date | None) -> str | None:
    return None if value is None else value.isoformat()
