"""Leases: a holder takes a READY task, renews it, completes it or gives it back.

Leases are fenced by `lease_token`: every claim sets it to one more than before and nothing
else lowers it, so a holder whose lease was reaped and retaken presents an old number and is
refused (`LeaseLost`) instead of completing someone else's work.

How a change is made, so that concurrent callers can never both win:

- a holder's own steps (claim, renew, complete with the token): ONE guarded UPDATE whose
  WHERE states what must hold (READY; or RUNNING with this token), with its event in the same
  statement on PostgreSQL (`events.Recorded`): one round trip on the hot path. Only when it
  matches nothing is the row read, to say precisely why (`LeaseLost`, `Conflict`, `NotFound`);
- a release, or a completion by hand: the row locked, then `backlog.guarded_update`;
- the next READY task: the guarded UPDATE's subselect picks the row with
  `FOR UPDATE SKIP LOCKED`, so two claimers on PostgreSQL take two different tasks without
  waiting on each other (on SQLite the write transaction serialises them).

On PostgreSQL the holder's steps are each a single statement when they succeed, so they are
atomic even on a connection that commits every statement (`db.engine.autocommitting`).
The statements, built once, are in `task_statements`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, NoReturn

from sqlalchemy import Connection, select

from ondeck.core.clock import aware
from ondeck.core.durations import TooLong, parse_duration
from ondeck.core.errors import Conflict, InvalidInput, LeaseLost, NothingClaimable
from ondeck.core.models import Task, TaskStatus
from ondeck.core.sides import EVERY_SIDE, SideView
from ondeck.core.validation import OWNER_MAX, check_id, check_line, check_project, check_token
from ondeck.db.tables import tasks
from ondeck.system import events
from ondeck.work import task_statements as sql
from ondeck.work.backlog import (
    changed_meanwhile,
    check_note,
    check_visible,
    describe_state,
    get_task,
    guarded_update,
    in_view,
    instant_text,
    locked_task,
    record_change,
)
from ondeck.work.task_statements import task_from_row

DEFAULT_LEASE = timedelta(hours=1)
MAX_LEASE = timedelta(days=7)


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


def _owner(owner: str) -> str:
    return check_line(owner, "owner", limit=OWNER_MAX)


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
            raise changed_meanwhile(task_id)
        raise Conflict(f"{describe_state(before, now)}: only a READY task can be claimed")
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
        raise NothingClaimable(f"no READY task to claim{where}{in_view(view)}")
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
        details={"owner": None, "token": token, "lease_until": instant_text(until)},
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
    note = check_note(note)
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
    before = locked_task(conn, task_id)
    if before.status is TaskStatus.RUNNING:
        raise Conflict(
            f"{describe_state(before, now)}: give its lease token to complete it, or release it"
            " with force first"
        )
    elif before.status is not TaskStatus.READY:
        raise Conflict(f"task {task_id} is already {before.status}")
    done = {**_no_lease(), "status": TaskStatus.DONE.value, "done_at": aware(now)}
    task = guarded_update(conn, now, before, done)
    record_change(
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
    note = check_note(note)
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
    before = locked_task(conn, task_id, view)
    if token is not None:
        _check_lease(before, token, now)
    elif before.status is not TaskStatus.RUNNING:
        raise Conflict(f"task {task_id} is {before.status}: there is no lease to release")
    task = guarded_update(conn, now, before, {**_no_lease(), "status": TaskStatus.READY.value})
    record_change(
        conn,
        now,
        actor,
        "task.released",
        task,
        owner=before.lease_owner,
        token=before.lease_token,
        lease_until=instant_text(before.lease_until),
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
        task = guarded_update(conn, now, before, {**_no_lease(), "status": TaskStatus.READY.value})
        record_change(
            conn,
            now,
            actor,
            "task.released",
            task,
            owner=owner,
            token=before.lease_token,
            lease_until=instant_text(before.lease_until),
            force=False,
            reason=(reason or "")[:200] or None,
        )
        released.append(task.id)
    return released


# --- helpers ------------------------------------------------------------------------------


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
    return {"owner": owner, "token": None, "lease_until": instant_text(until), "next": next_ready}


def _completed(token: int, note: str | None) -> dict[str, Any]:
    # The owner is the row's before the change (`before`).
    return {"owner": None, "token": token, "by_hand": False, "note": note}


def _refuse_holder(conn: Connection, now: datetime, task_id: int, token: int) -> NoReturn:
    """Why a holder's guarded UPDATE matched nothing: no such task, or the lease was lost."""
    before = get_task(conn, task_id)
    _check_lease(before, token, now)
    raise changed_meanwhile(task_id)


def _check_lease(task: Task, token: int, now: datetime) -> None:
    """The token must name the current lease of a RUNNING task, or the lease was lost."""
    if task.status is TaskStatus.RUNNING and task.lease_token == token:
        return
    state = describe_state(task, now)
    if task.status is TaskStatus.READY:
        state += " (its lease was released or reaped)"
    raise LeaseLost(f"lease lost: {state}; token {token} is not the current lease")


def _no_lease() -> dict[str, Any]:
    # The token is kept: the next claim adds one to it, so old tokens never come back.
    return {"lease_owner": None, "lease_until": None}
