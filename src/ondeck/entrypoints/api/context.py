"""GET /api/v1/context: what a new session is told, as JSON, Markdown or hook JSON."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.responses import Response

from ondeck.core.validation import PROJECT_PATTERN
from ondeck.entrypoints.api.deps import StoreDep
from ondeck.entrypoints.api.models import errors
from ondeck.services.context_render import Format

router = APIRouter(tags=["context"])

MEDIA_TYPES = {
    Format.json: "application/json",
    Format.markdown: "text/markdown",
    Format.hook: "application/json",
}


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
) -> Response:
    return Response(store.context_text(format, project, budget), media_type=MEDIA_TYPES[format])
