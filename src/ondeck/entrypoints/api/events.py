"""The record of changes over HTTP: `GET /api/v1/events`, newest first."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from ondeck.core.errors import InvalidInput
from ondeck.core.validation import BIGINT_MAX
from ondeck.entrypoints.api.deps import StoreDep
from ondeck.entrypoints.api.models import SideRule, errors, sided
from ondeck.system import events

router = APIRouter(tags=["events"])


class EventOut(BaseModel):
    id: int
    at: str = Field(description="ISO-8601 with the configured zone's offset.")
    actor: str
    kind: str
    subject: str
    details: dict[str, Any]


@router.get(
    "/events",
    openapi_extra=sided(SideRule.ONE_SIDE),
    response_model=list[EventOut],
    responses=errors(e422="Invalid input; nothing was written."),
)
def list_events(
    store: StoreDep,
    subject: Annotated[
        str | None, Query(max_length=200, description="Such as task:12 or schedule:3.")
    ] = None,
    kind: Annotated[
        str | None,
        Query(max_length=64, description="Such as task.claimed; `task.` for every task event."),
    ] = None,
    before_id: Annotated[
        int | None, Query(ge=1, le=BIGINT_MAX, description="Page back: events older than this.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=events.MAX_LIMIT)] = 50,
) -> list[dict[str, Any]]:
    for name, value in (("subject", subject), ("kind", kind)):
        if value is not None and "\x00" in value:
            # PostgreSQL refuses NUL in text: say so instead of failing in the driver.
            raise InvalidInput(f"{name} must not contain NUL characters")
    with store.read() as conn:
        found = events.list_events(
            conn,
            subject=subject,
            kind=kind,
            before_id=before_id,
            limit=limit,
            view=store.id_view(),
        )
    return [e.to_json(store.settings.zone) for e in found]
