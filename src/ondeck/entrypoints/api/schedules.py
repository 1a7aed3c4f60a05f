"""Schedules over HTTP: `/api/v1/schedules…`. Thin: parse, call one service, render.

The pydantic models repeat the services' limits so the OpenAPI document tells the truth;
the services check again. A rule is checked by the rules module only, so an invalid one
comes back as 422 `invalid_rule` with that module's message.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response
from pydantic import BaseModel, Field

from ondeck.core.errors import InvalidInput
from ondeck.core.models import MissedPolicy, ScheduleKind
from ondeck.core.validation import (
    BIGINT_MAX,
    PRIORITY_DEFAULT,
    PROJECT_PATTERN,
)
from ondeck.entrypoints.api.deps import StoreDep
from ondeck.entrypoints.api.models import (
    Body,
    Day,
    Kind,
    Missed,
    Priority,
    Project,
    ScheduleOut,
    SideRule,
    StrictBody,
    Title,
    errors,
    sided,
)
from ondeck.work import schedule_calls

router = APIRouter(tags=["schedules"])


ScheduleId = Annotated[int, Path(ge=1, le=BIGINT_MAX, description="The schedule's id.")]
Rule = Annotated[
    str,
    # Only a size guard: the rules module judges the rule and words the refusal.
    Field(max_length=1000, description="daily, weekly:MON,THU, monthly:1,15,last or every:N."),
]


ERRORS = errors(
    e404="No such schedule.",
    e409="Not in a state for that (paused).",
    e422="Invalid input (invalid_rule, …); nothing written.",
)


class FireOut(BaseModel):
    id: int
    schedule_id: int
    fire_date: str = Field(description="The date it fired for, YYYY-MM-DD.")
    fired_at: str = Field(description="When it was processed.")
    task_id: int | None
    skipped: int = Field(description="Missed dates folded into this fire.")


class SkippedOut(BaseModel):
    at: str = Field(description="When the dates were dropped.")
    reason: str = Field(description="missed=skip, paused, or now, missed=skip.")
    dates: int = Field(description="How many dates never fired.")
    first: str | None
    last: str | None


class ScheduleDetail(BaseModel):
    schedule: ScheduleOut
    fires: list[FireOut] = Field(description="The last fires, newest first.")
    next: list[str] = Field(description="The next 5 dates, YYYY-MM-DD.")
    skipped: list[SkippedOut] = Field(
        default_factory=list, description="Dates dropped without a fire, newest first."
    )


SideName = Annotated[str, Field(min_length=1, max_length=64)]


class ScheduleIn(StrictBody):
    title: Title
    rule: Rule
    kind: Kind = ScheduleKind.TASK
    body: Body = ""
    start_on: Day | None = Field(None, description="First possible date (default today).")
    project: Project | None = None
    priority: Priority = PRIORITY_DEFAULT
    missed: Missed = MissedPolicy.LATEST
    side: SideName | None = Field(
        None,
        description="Its tasks and reminders take it. Required when sides are configured "
        "(a side-limited token: its own).",
    )


class SchedulePatch(StrictBody):
    """Only the fields sent change; `null` clears the project."""

    title: Title | None = None
    rule: Rule | None = None
    body: Body | None = None
    start_on: Day | None = None
    project: Project | None = None
    priority: Priority | None = None
    missed: Missed | None = None
    side: SideName | None = Field(None, description="Move it to this side (out of the inbox).")


@router.get(
    "/schedules",
    openapi_extra=sided(SideRule.ONE_SIDE),
    response_model=list[ScheduleOut],
    responses=ERRORS,
)
def list_schedules(
    store: StoreDep,
    kind: Annotated[Kind | None, Query()] = None,
    project: Annotated[str | None, Query(pattern=PROJECT_PATTERN, max_length=64)] = None,
    side: Annotated[
        str | None,
        Query(min_length=1, max_length=64, description="Required when sides are configured."),
    ] = None,
    unclassified: Annotated[
        bool, Query(description="The inbox: schedules given no side yet, seen by no side.")
    ] = False,
) -> list[dict[str, Any]]:
    view = store.side_view(side, inbox=unclassified)
    with store.read() as conn:
        return schedule_calls.list_schedules(conn, store, view=view, kind=kind, project=project)


@router.post(
    "/schedules",
    openapi_extra=sided(SideRule.NEW),
    response_model=ScheduleOut,
    status_code=201,
    responses=ERRORS,
)
def create_schedule(store: StoreDep, body: ScheduleIn) -> dict[str, Any]:
    side = store.side_to_write(body.side)
    fields = body.model_dump(exclude={"side"})
    with store.write() as conn:
        return schedule_calls.create_schedule(conn, store, side=side, **fields)


@router.get(
    "/schedules/{schedule_id}",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=ScheduleDetail,
    responses=ERRORS,
)
def show_schedule(store: StoreDep, schedule_id: ScheduleId) -> dict[str, Any]:
    with store.read() as conn:
        return schedule_calls.show_schedule(conn, store, schedule_id, view=store.id_view())


@router.patch(
    "/schedules/{schedule_id}",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=ScheduleOut,
    responses=ERRORS,
)
def edit_schedule(store: StoreDep, schedule_id: ScheduleId, body: SchedulePatch) -> dict[str, Any]:
    changes = body.model_dump(exclude_unset=True)
    for name, value in changes.items():
        if value is None and name != "project":
            raise InvalidInput(f"{name} cannot be null (only project can be cleared)")
    if "side" in changes:
        changes["side"] = store.side_to_write(changes["side"])
    with store.write() as conn:
        return schedule_calls.edit_schedule(
            conn, store, schedule_id, view=store.id_view(), **changes
        )


@router.delete(
    "/schedules/{schedule_id}",
    openapi_extra=sided(SideRule.BY_ID),
    status_code=204,
    response_class=Response,
    responses=ERRORS,
)
def delete_schedule(store: StoreDep, schedule_id: ScheduleId) -> Response:
    with store.write() as conn:
        schedule_calls.delete_schedule(conn, store, schedule_id, view=store.id_view())
    return Response(status_code=204)


class PulledOut(ScheduleOut):
    note: str = Field(
        description="What will come of it: when the jobs loop fires it, nothing if today "
        "already fired, nothing yet while the loop is not running."
    )


@router.post(
    "/schedules/{schedule_id}/now",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=PulledOut,
    responses=ERRORS,
)
def pull_now(store: StoreDep, schedule_id: ScheduleId) -> dict[str, Any]:
    """Due today at the latest (an overdue schedule keeps the dates it owes); the next jobs
    tick fires it, woken at once when it runs in this server. A schedule whose date today
    was already processed is left as it is: nothing fires twice."""
    with store.write() as conn:
        return schedule_calls.pull_now(conn, store, schedule_id, view=store.id_view())


@router.post(
    "/schedules/{schedule_id}/pause",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=ScheduleOut,
    responses=ERRORS,
)
def pause_schedule(store: StoreDep, schedule_id: ScheduleId) -> dict[str, Any]:
    with store.write() as conn:
        return schedule_calls.pause_schedule(conn, store, schedule_id, view=store.id_view())


@router.post(
    "/schedules/{schedule_id}/resume",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=ScheduleOut,
    responses=ERRORS,
)
def resume_schedule(store: StoreDep, schedule_id: ScheduleId) -> dict[str, Any]:
    with store.write() as conn:
        return schedule_calls.resume_schedule(conn, store, schedule_id, view=store.id_view())


@router.get(
    "/schedules/{schedule_id}/fires",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=list[FireOut],
    responses=ERRORS,
)
def list_fires(
    store: StoreDep,
    schedule_id: ScheduleId,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> list[dict[str, Any]]:
    with store.read() as conn:
        return schedule_calls.list_fires(
            conn, store, schedule_id, limit=limit, view=store.id_view()
        )
