"""Tasks and leases over HTTP: `/api/v1/tasks…`. Thin: parse, call one service, render.

The pydantic models repeat the services' limits so the OpenAPI document tells the truth;
the services check again (they are the one place for every rule).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import Field

from ondeck.core.errors import InvalidInput
from ondeck.core.models import OPEN, Task
from ondeck.core.validation import (
    BIGINT_MAX,
    NOTE_MAX,
    OWNER_MAX,
    PRIORITY_DEFAULT,
    PROJECT_PATTERN,
    TASKS_LISTED_MAX,
)
from ondeck.entrypoints.api.deps import StoreDep
from ondeck.entrypoints.api.models import (
    Body,
    Day,
    DoneAndNext,
    Priority,
    Project,
    StrictBody,
    TaskOut,
    Title,
    errors,
)
from ondeck.entrypoints.gateway import Call
from ondeck.system import heartbeat as workers
from ondeck.work import backlog
from ondeck.work.lease_state import task_json

router = APIRouter(tags=["tasks"])

MAX_LEASE_SECONDS = int(backlog.MAX_LEASE.total_seconds())

TaskId = Annotated[int, Path(ge=1, le=BIGINT_MAX, description="The task's id.")]


Token = Annotated[int, Field(ge=0, le=BIGINT_MAX, description="The token the claim returned.")]
Owner = Annotated[
    str,
    Field(
        min_length=1,
        max_length=OWNER_MAX,
        description="Who holds the lease: a free string such as claude:<session id>.",
    ),
]
For = Annotated[
    str | None,
    Field(
        alias="for",
        max_length=40,
        description="Lease length such as 15m, 1h, 1h30m, 2d (default 1h, at most 7d).",
    ),
]
Seconds = Annotated[
    int | None, Field(ge=1, le=MAX_LEASE_SECONDS, description="Lease length in seconds.")
]
Note = Annotated[str, Field(max_length=NOTE_MAX)]
SideName = Annotated[str, Field(min_length=1, max_length=64)]
SideQuery = Annotated[
    str | None,
    Query(min_length=1, max_length=64, description="Required when sides are configured."),
]
InboxQuery = Annotated[
    bool, Query(description="The inbox: tasks given no side yet, seen by no side.")
]


ERRORS = errors(
    e404="No such task.",
    e409="Not in a state for that (lease lost, …).",
    e422="Invalid input; nothing was written.",
)


class TaskIn(StrictBody):
    title: Title
    body: Body = ""
    priority: Priority = PRIORITY_DEFAULT
    due_on: Day | None = None
    project: Project | None = None
    side: SideName | None = Field(
        None, description="Required when sides are configured (a side-limited token: its own)."
    )


class TaskPatch(StrictBody):
    """Only the fields sent change; `null` clears the due date or the project."""

    title: Title | None = None
    body: Body | None = None
    priority: Priority | None = None
    due_on: Day | None = None
    project: Project | None = None
    side: SideName | None = Field(None, description="Move it to this side (out of the inbox).")


class ClaimIn(StrictBody):
    owner: Owner
    for_: For = None
    seconds: Seconds = None
    side: SideName | None = Field(
        None, description="Ignored for a task named by id; the next task's side otherwise."
    )


class ClaimNextIn(ClaimIn):
    project: Project | None = None


class RenewIn(StrictBody):
    token: Token
    for_: For = None
    seconds: Seconds = None


class CompleteIn(StrictBody):
    token: Token | None = Field(None, description="Required for a RUNNING task; omit for READY.")
    note: Note | None = None


class CompleteAndClaimNextIn(ClaimNextIn):
    token: Token
    note: Note | None = None


class ReleaseIn(StrictBody):
    token: Token | None = None
    force: bool = Field(False, description="Release someone else's lease (recorded as forced).")


class CancelIn(StrictBody):
    note: Note | None = None


def _claim_view(store: Call, side: str | None) -> Any:
    """A claim of a task by id: within the side named (a session's), else as any step by
    id (`Call.id_view`)."""
    return store.id_view() if side is None else store.side_view(side)


def _duration(body: ClaimIn | RenewIn | CompleteAndClaimNextIn) -> str | int | timedelta | None:
    if body.for_ is not None and body.seconds is not None:
        raise InvalidInput("give the lease length as either 'for' or 'seconds', not both")
    return body.seconds if body.seconds is not None else body.for_


def _out(
    store: Call, task: Task, now: Any, jobs: Callable[[], Any] | None = None
) -> dict[str, Any]:
    settings = store.settings
    return task_json(task, now, settings.zone, settings.lease_grace, jobs or _jobs(store, now))


def _jobs(store: Call, now: Any) -> Callable[[], workers.JobsHealth]:
    """The jobs heartbeat for a lease past its end (read once per request, if ever)."""
    found: list[workers.JobsHealth] = []

    def read() -> workers.JobsHealth:
        if not found:
            with store.read() as conn:
                tick = store.settings.tick_seconds
                found.append(workers.jobs_health(conn, now, tick_seconds=tick))
        return found[0]

    return read


@router.get("/tasks", response_model=list[TaskOut], responses=ERRORS)
def list_tasks(
    store: StoreDep,
    status: Annotated[
        str | None,
        Query(max_length=100, description="READY,RUNNING (the default), DONE, CANCELLED or all."),
    ] = None,
    project: Annotated[str | None, Query(pattern=PROJECT_PATTERN, max_length=64)] = None,
    due_before: Annotated[
        Day | None, Query(description="Only tasks due before this date, YYYY-MM-DD.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=TASKS_LISTED_MAX)] = 200,
    side: SideQuery = None,
    unclassified: InboxQuery = False,
) -> list[dict[str, Any]]:
    statuses = backlog.parse_statuses(status) if status else OPEN
    view = store.side_view(side, inbox=unclassified)
    now = store.now()
    with store.read() as conn:
        found = backlog.list_tasks(
            conn,
            statuses=statuses,
            project=project,
            due_before=due_before,
            limit=limit,
            view=view,
        )
    jobs = _jobs(store, now)
    return [_out(store, t, now, jobs) for t in found]


@router.post("/tasks", response_model=TaskOut, status_code=201, responses=ERRORS)
def create_task(store: StoreDep, body: TaskIn) -> dict[str, Any]:
    fields = body.model_dump()
    fields["side"] = store.side_to_write(body.side)
    now = store.now()
    with store.write() as conn:
        task = backlog.create_task(conn, now, actor=store.actor, **fields)
    return _out(store, task, now)


@router.get("/tasks/{task_id}", response_model=TaskOut, responses=ERRORS)
def get_task(store: StoreDep, task_id: TaskId) -> dict[str, Any]:
    now = store.now()
    with store.read() as conn:
        task = backlog.get_task(conn, task_id, store.id_view())
    return _out(store, task, now)


@router.patch("/tasks/{task_id}", response_model=TaskOut, responses=ERRORS)
def edit_task(store: StoreDep, task_id: TaskId, body: TaskPatch) -> dict[str, Any]:
    changes = body.model_dump(exclude_unset=True)
    for name in ("title", "body", "priority"):
        if name in changes and changes[name] is None:
            raise InvalidInput(f"{name} cannot be null (only due_on and project can be cleared)")
    if "side" in changes:
        changes["side"] = store.side_to_move(changes["side"])
    now = store.now()
    with store.write() as conn:
        task = backlog.edit_task(
            conn, now, task_id, actor=store.actor, view=store.id_view(), **changes
        )
    return _out(store, task, now)


@router.post("/tasks/claim-next", response_model=TaskOut, responses=ERRORS)
def claim_next(store: StoreDep, body: ClaimNextIn) -> dict[str, Any]:
    view = store.side_view(body.side)
    now = store.now()
    with store.write() as conn:
        task = backlog.claim_next(
            conn,
            now,
            owner=body.owner,
            duration=_duration(body),
            project=body.project,
            actor=store.actor,
            view=view,
        )
    return _out(store, task, now)


@router.post("/tasks/{task_id}/claim", response_model=TaskOut, responses=ERRORS)
def claim_task(store: StoreDep, task_id: TaskId, body: ClaimIn) -> dict[str, Any]:
    now = store.now()
    with store.write() as conn:
        task = backlog.claim_task(
            conn,
            now,
            task_id,
            owner=body.owner,
            duration=_duration(body),
            actor=store.actor,
            view=_claim_view(store, body.side),
        )
    return _out(store, task, now)


@router.post("/tasks/{task_id}/renew", response_model=TaskOut, responses=ERRORS)
def renew_lease(store: StoreDep, task_id: TaskId, body: RenewIn) -> dict[str, Any]:
    now = store.now()
    with store.write() as conn:
        task = backlog.renew_lease(
            conn,
            now,
            task_id,
            token=body.token,
            duration=_duration(body),
            actor=store.actor,
            view=store.id_view(),
        )
    return _out(store, task, now)


@router.post("/tasks/{task_id}/complete", response_model=TaskOut, responses=ERRORS)
def complete_task(store: StoreDep, task_id: TaskId, body: CompleteIn) -> dict[str, Any]:
    now = store.now()
    with store.write() as conn:
        task = backlog.complete_task(
            conn,
            now,
            task_id,
            token=body.token,
            note=body.note,
            actor=store.actor,
            view=store.id_view(),
        )
    return _out(store, task, now)


@router.post(
    "/tasks/{task_id}/complete-and-claim-next", response_model=DoneAndNext, responses=ERRORS
)
def complete_and_claim_next(
    store: StoreDep, task_id: TaskId, body: CompleteAndClaimNextIn
) -> dict[str, Any]:
    """Complete the task held with `token`, then claim the next READY one, in one step."""
    view = store.side_view(body.side)
    now = store.now()
    with store.write() as conn:
        done, taken = backlog.complete_and_claim_next(
            conn,
            now,
            task_id,
            token=body.token,
            note=body.note,
            owner=body.owner,
            duration=_duration(body),
            project=body.project,
            actor=store.actor,
            view=view,
        )
    return {"done": _out(store, done, now), "next": taken and _out(store, taken, now)}


@router.post("/tasks/{task_id}/release", response_model=TaskOut, responses=ERRORS)
def release_task(store: StoreDep, task_id: TaskId, body: ReleaseIn) -> dict[str, Any]:
    now = store.now()
    with store.write() as conn:
        task = backlog.release_task(
            conn,
            now,
            task_id,
            token=body.token,
            force=body.force,
            actor=store.actor,
            view=store.id_view(),
        )
    return _out(store, task, now)


@router.post("/tasks/{task_id}/cancel", response_model=TaskOut, responses=ERRORS)
def cancel_task(store: StoreDep, task_id: TaskId, body: CancelIn | None = None) -> dict[str, Any]:
    now = store.now()
    with store.write() as conn:
        task = backlog.cancel_task(
            conn,
            now,
            task_id,
            note=body.note if body else None,
            actor=store.actor,
            view=store.id_view(),
        )
    return _out(store, task, now)
