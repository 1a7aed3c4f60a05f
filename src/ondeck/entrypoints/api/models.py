"""What the API's routers share: field types with the services' limits (so the OpenAPI
document tells the truth), the strict date, and the error shape every 4xx uses.

Statuses, kinds and policies are `core.models`' enums: the document names each as a schema
(`TaskStatus`, `ScheduleKind`, `MissedPolicy`) listing its values."""

from __future__ import annotations

from datetime import date
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, WithJsonSchema

from ondeck.core.errors import InvalidInput
from ondeck.core.models import MissedPolicy, ScheduleKind, TaskStatus
from ondeck.core.validation import (
    BODY_MAX,
    PRIORITY_MAX,
    PRIORITY_MIN,
    PROJECT_PATTERN,
    TITLE_MAX,
    check_date,
    parse_date,
)

Title = Annotated[str, Field(min_length=1, max_length=TITLE_MAX)]
Body = Annotated[str, Field(max_length=BODY_MAX)]
Priority = Annotated[int, Field(ge=PRIORITY_MIN, le=PRIORITY_MAX, description="0 most urgent")]
Project = Annotated[str, Field(pattern=PROJECT_PATTERN, max_length=64)]


def _iso_day(value: Any) -> Any:
    # A date is written YYYY-MM-DD, never a number of seconds since 1970 (pydantic's lax
    # mode), and lies within the range every date input shares (validation.DATE_MIN..MAX).
    try:
        if isinstance(value, date):
            return check_date(value, "date")
        if not isinstance(value, str):
            raise ValueError("use a date written YYYY-MM-DD")
        return parse_date(value, "date")
    except InvalidInput as exc:
        raise ValueError(str(exc)) from None


# The pattern tells the OpenAPI document's readers the range: years 1900 to 8999.
DAY_PATTERN = r"^(19[0-9]{2}|[2-8][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"
Day = Annotated[
    date,
    BeforeValidator(_iso_day),
    WithJsonSchema({"type": "string", "format": "date", "pattern": DAY_PATTERN}),
]


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorDetail


def errors(**descriptions: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for a router: `errors(e404="No such task.", …)`."""
    return {
        int(key.removeprefix("e")): {"model": ErrorOut, "description": text}
        for key, text in descriptions.items()
    }


class SideRule(StrEnum):
    """How a route meets the side gate (core/sides.py `Access`), declared by every route as
    `x-ondeck-sides` in the OpenAPI document: a route that declares none fails
    tests/security/test_sides_every_door.py, which calls each with one-side tokens."""

    # Lists or reads items of one side: the one named, or the caller's own; another side
    # or the inbox is refused (403) to a caller held to a side.
    ONE_SIDE = "one-side"
    # One item named by id: of the caller's side only (another side's is not found, 404).
    BY_ID = "by-id"
    # Makes an item, in the caller's side (naming another is refused, 403).
    NEW = "new-in-side"
    # A session's records: of the caller's side only (another side's are rejected).
    CAPTURE = "capture"
    # Refused (403) to a caller held to a side: what it does names any side.
    OWNER = "owner-only"
    # Holds no item of any side (health, the rule check).
    NONE = "no-items"


def sided(rule: SideRule) -> dict[str, Any]:
    """A route's `openapi_extra`: its side rule, for clients and the walk that checks it."""
    return {"x-ondeck-sides": rule.value}


# --- shared by the API and the MCP server (so both describe results the same way) -----


class StrictBody(BaseModel):
    """A request body: unknown fields refused; strict, so "2" is not the integer 2 nor
    "true" a boolean, as the document says."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


class LeaseOut(BaseModel):
    state: Literal["running", "expired", "release_due"] = Field(
        description="running: the lease has not ended; expired: it ended, within the grace "
        "(holder silent); release_due: past the grace, released at the next jobs tick."
    )
    lease_until: str | None
    expired_seconds: int | None
    releases_at: str | None = Field(description="Lease end + the reaper's grace.")
    jobs_ticking: bool | None = Field(
        description="Past its end: whether the jobs loop that releases it is running "
        "(false: nothing will release it). Null while the lease runs."
    )
    summary: str = Field(description="The lease as it stands, in one line.")
    brief: str = Field(description="The same in a few words, for a table cell.")


class TaskOut(BaseModel):
    id: int
    title: str
    body: str
    status: TaskStatus
    priority: int
    due_on: str | None = Field(description="YYYY-MM-DD, a date in the configured zone.")
    project: str | None
    side: str | None = Field(
        None, description="Null: no sides configured, or the inbox (shown to no session)."
    )
    source: str | None
    lease_owner: str | None
    lease_until: str | None = Field(description="ISO-8601 with the configured zone's offset.")
    lease_token: int
    expired: bool = Field(description="RUNNING past its lease end: the holder went silent.")
    created_at: str
    updated_at: str
    done_at: str | None
    lease: LeaseOut | None = Field(None, description="The lease as it stands; null unless RUNNING.")


class DoneAndNext(BaseModel):
    done: TaskOut
    next: TaskOut | None = Field(description="The task now held; null when none was READY.")


# Strict(False): a strict body takes only enum members from Python, and FastAPI validates the
# decoded JSON as Python; the JSON text "task" must still be the member it names.
Kind = Annotated[ScheduleKind, Strict(False)]
Missed = Annotated[MissedPolicy, Strict(False)]


class ScheduleOut(BaseModel):
    id: int
    title: str
    body: str
    kind: Kind
    rule: str = Field(description="The canonical rule.")
    rule_text: str = Field(description="The rule in words, such as 'every Monday'.")
    project: str | None
    side: str | None = Field(None, description="Its tasks and reminders take it; null as a task's.")
    start_on: str = Field(description="YYYY-MM-DD.")
    next_due: str | None = Field(description="YYYY-MM-DD, a date in the configured zone.")
    missed: Missed = Field(description="What a missed day becomes after downtime.")
    last_fired_on: str | None
    last_fired_at: str | None = Field(description="ISO-8601 with the configured zone's offset.")
    enabled: bool = Field(description="False while paused.")
    priority: int
    created_at: str
    updated_at: str
