"""Tasks and leases over HTTP: `/api/v1/tasks…`. Thin: parse, call one service, render.

The pydantic models repeat the services' limits so the OpenAPI document tells the truth;
the services check again (they are the one place for every rule).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import Field

from ondeck.core.errors import InvalidInput
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
    SideRule,
    StrictBody,
    TaskOut,
    Title,
    errors,
    sided,
)
from ondeck.entrypoints.gateway import Call
from ondeck.work import backlog_leases, task_calls

router = APIRouter(tags=["tasks"])

MAX_LEASE_SECONDS = int(backlog_leases.MAX_LEASE.total_seconds())

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


@router.get(
    "/tasks", openapi_extra=sided(SideRule.ONE_SIDE), response_model=list[TaskOut], responses=ERRORS
)
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
    view = store.side_view(side, inbox=unclassified)
    with store.read() as conn:
        return task_calls.list_tasks(
            conn,
            store,
            view=view,
            status=status,
            project=project,
            due_before=due_before,
            limit=limit,
        )


@router.post(
    "/tasks",
    openapi_extra=sided(SideRule.NEW),
    response_model=TaskOut,
    status_code=201,
    responses=ERRORS,
)
def create_task(store: StoreDep, body: TaskIn) -> dict[str, Any]:
    side = store.side_to_write(body.side)
    with store.write() as conn:
        return task_calls.create_task(conn, store, side=side, **body.model_dump(exclude={"side"}))


@router.get(
    "/tasks/{task_id}",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=TaskOut,
    responses=ERRORS,
)
def get_task(store: StoreDep, task_id: TaskId) -> dict[str, Any]:
    with store.read() as conn:
        return task_calls.get_task(conn, store, task_id, view=store.id_view())


@router.patch(
    "/tasks/{task_id}",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=TaskOut,
    responses=ERRORS,
)
def edit_task(store: StoreDep, task_id: TaskId, body: TaskPatch) -> dict[str, Any]:
    changes = body.model_dump(exclude_unset=True)
    for name in ("title", "body", "priority"):
        if name in changes and changes[name] is None:
            raise InvalidInput(f"{name} cannot be null (only due_on and project can be cleared)")
    if "side" in changes:
        changes["side"] = store.side_to_write(changes["side"])
    with store.write() as conn:
        return task_calls.edit_task(conn, store, task_id, view=store.id_view(), **changes)


@router.post(
    "/tasks/claim-next",
    openapi_extra=sided(SideRule.ONE_SIDE),
    response_model=TaskOut,
    responses=ERRORS,
)
def claim_next(store: StoreDep, body: ClaimNextIn) -> dict[str, Any]:
    view = store.side_view(body.side)
    with store.write() as conn:
        return task_calls.claim(
            conn,
            store,
            None,
            owner=body.owner,
            duration=_duration(body),
            project=body.project,
            view=view,
        )


@router.post(
    "/tasks/{task_id}/claim",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=TaskOut,
    responses=ERRORS,
)
def claim_task(store: StoreDep, task_id: TaskId, body: ClaimIn) -> dict[str, Any]:
    with store.write() as conn:
        return task_calls.claim(
            conn,
            store,
            task_id,
            owner=body.owner,
            duration=_duration(body),
            view=_claim_view(store, body.side),
        )


@router.post(
    "/tasks/{task_id}/renew",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=TaskOut,
    responses=ERRORS,
)
def renew_lease(store: StoreDep, task_id: TaskId, body: RenewIn) -> dict[str, Any]:
    with store.write() as conn:
        return task_calls.renew_lease(
            conn,
            store,
            task_id,
            token=body.token,
            duration=_duration(body),
            view=store.id_view(),
        )


@router.post(
    "/tasks/{task_id}/complete",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=TaskOut,
    responses=ERRORS,
)
def complete_task(store: StoreDep, task_id: TaskId, body: CompleteIn) -> dict[str, Any]:
    with store.write() as conn:
        return task_calls.complete_task(
            conn, store, task_id, token=body.token, note=body.note, view=store.id_view()
        )


@router.post(
    "/tasks/{task_id}/complete-and-claim-next",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=DoneAndNext,
    responses=ERRORS,
)
def complete_and_claim_next(
    store: StoreDep, task_id: TaskId, body: CompleteAndClaimNextIn
) -> dict[str, Any]:
    """Complete the task held with `token`, then claim the next READY one, in one step."""
    view = store.side_view(body.side)
    with store.write() as conn:
        return task_calls.complete_and_claim_next(
            conn,
            store,
            task_id,
            token=body.token,
            note=body.note,
            owner=body.owner,
            duration=_duration(body),
            project=body.project,
            view=view,
        )


@router.post(
    "/tasks/{task_id}/release",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=TaskOut,
    responses=ERRORS,
)
def release_task(store: StoreDep, task_id: TaskId, body: ReleaseIn) -> dict[str, Any]:
    with store.write() as conn:
        return task_calls.release_task(
            conn, store, task_id, token=body.token, force=body.force, view=store.id_view()
        )


@router.post(
    "/tasks/{task_id}/cancel",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=TaskOut,
    responses=ERRORS,
)
def cancel_task(store: StoreDep, task_id: TaskId, body: CancelIn | None = None) -> dict[str, Any]:
    note = body.note if body else None
    with store.write() as conn:
        return task_calls.cancel_task(conn, store, task_id, note=note, view=store.id_view())
