"""GET /api/v1/rules/check: the dashboard's live rule preview, and scripts'."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from ondeck.core import clock
from ondeck.core.rulecheck import MAX_COUNT, check_rule
from ondeck.core.rules import MAX_LENGTH
from ondeck.entrypoints.api.deps import StoreDep
from ondeck.entrypoints.api.models import Day, SideRule, errors, sided

router = APIRouter(tags=["rules"])


class RuleCheckOut(BaseModel):
    rule: str = Field(description="The canonical form.")
    description: str = Field(description="The rule in plain English.")
    start: str
    next: list[str] = Field(description="The next dates, YYYY-MM-DD.")
    rrule: str = Field(description="RFC 5545 DTSTART and RRULE lines.")


@router.get(
    "/rules/check",
    openapi_extra=sided(SideRule.NONE),
    response_model=RuleCheckOut,
    responses=errors(e422="Invalid input; nothing was written."),
)
def rules_check(
    store: StoreDep,
    rule: Annotated[str, Query(max_length=MAX_LENGTH)],
    start: Annotated[Day | None, Query(description="YYYY-MM-DD")] = None,
    count: Annotated[int, Query(ge=1, le=MAX_COUNT)] = 5,
) -> dict[str, object]:
    today = clock.today(store.now(), store.settings.zone)
    return check_rule(rule, today=today, start=start, count=count).to_json()
