"""What the API's routers share: field types with the services' limits (so the OpenAPI
document tells the truth), the strict date, and the error shape every 4xx uses."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field

from ondeck.errors import InvalidInput
from ondeck.validation import (
    BODY_MAX,
    PRIORITY_MAX,
    PRIORITY_MIN,
    PROJECT_PATTERN,
    TITLE_MAX,
    parse_date,
)

Title = Annotated[str, Field(min_length=1, max_length=TITLE_MAX)]
Body = Annotated[str, Field(max_length=BODY_MAX)]
Priority = Annotated[int, Field(ge=PRIORITY_MIN, le=PRIORITY_MAX, description="0 most urgent")]
Project = Annotated[str, Field(pattern=PROJECT_PATTERN, max_length=64)]


def _iso_day(value: Any) -> Any:
    # A date is written YYYY-MM-DD, never a number of seconds since 1970 (pydantic's lax mode).
    if isinstance(value, date):
        return value
    if not isinstance(value, str):
        raise ValueError("use a date written YYYY-MM-DD")
    try:
        return parse_date(value, "date")
    except InvalidInput as exc:
        raise ValueError(str(exc)) from None


Day = Annotated[date, BeforeValidator(_iso_day)]


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
