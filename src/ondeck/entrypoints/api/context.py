"""GET /api/v1/context: what a new session is told, as JSON, Markdown or hook JSON."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from ondeck.core.validation import PROJECT_PATTERN
from ondeck.entrypoints.api.deps import StoreDep
from ondeck.entrypoints.api.models import errors
from ondeck.entrypoints.hooks import hook_output
from ondeck.services.context import context_for
from ondeck.services.context_render import to_json, to_markdown

router = APIRouter(tags=["context"])


class Format(StrEnum):
    json = "json"
    markdown = "markdown"
    hook = "hook"


@router.get(
    "/context",
    responses={
        200: {"content": {"text/markdown": {}, "application/json": {}}},
        **errors(e422="Invalid input; nothing was written."),
    },
)
def get_context(
    store: StoreDep,
    project: Annotated[str | None, Query(pattern=PROJECT_PATTERN)] = None,
    format: Annotated[Format, Query()] = Format.json,
    budget: Annotated[int, Query(ge=1, le=500)] = 20,
) -> Any:
    settings = store.settings
    with store.read() as conn:
        ctx = context_for(conn, store.now(), settings, project, budget)
    if format is Format.markdown:
        return PlainTextResponse(to_markdown(ctx, settings.zone), media_type="text/markdown")
    if format is Format.hook:
        return hook_output(to_markdown(ctx, settings.zone))
    return to_json(ctx, settings.zone)
