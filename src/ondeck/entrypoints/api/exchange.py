"""Memory out and in over HTTP: `GET /api/v1/export`, `POST /api/v1/import`. Thin: parse,
call memory/exchange.py, answer.

What `ondeck export` and `ondeck import` do against a database, for a client without one:
the export is the JSONL text itself (or the Markdown files as path → text), the import
takes the lines of a JSONL export and applies them all or none (one bad line refuses the
whole file, naming the line's number: the service's rule, not this route's).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field
from starlette.responses import PlainTextResponse, Response

from ondeck.core.sides import configured
from ondeck.core.validation import PROJECT_PATTERN
from ondeck.entrypoints.api.deps import StoreDep
from ondeck.entrypoints.api.models import SideRule, StrictBody, errors, sided
from ondeck.memory import exchange

router = APIRouter(tags=["memory"])


class ExportFormat(StrEnum):
    jsonl = "jsonl"
    markdown = "markdown"


class MarkdownExport(BaseModel):
    files: dict[str, str] = Field(
        description="Relative path (side/project.md) → the file's Markdown text."
    )


class ImportIn(StrictBody):
    # No limit per line here: the service names a line that is too long by its number.
    lines: list[str] = Field(
        description="The export's lines as read from the file (each with its newline)."
    )


class ImportOut(BaseModel):
    notes: int = Field(description="Notes added.")
    sessions: int = Field(description="Session records added.")
    skipped: int = Field(description="Already there: kept as they were.")
    updated: int = Field(
        description="Already there, brought to the export's later state (each an event)."
    )
    changed: dict[str, list[int]] = Field(
        description="The notes `updated` counts, their ids here, by what the import did: "
        "`wrong`, `superseded`, `expired` (marked as the export has them), `updated` (text, "
        "pin, place, links or reason brought)."
    )
    kept: list[int] = Field(
        description="Notes the export has otherwise whose state here is the later (retired "
        "further, or changed since): kept as they are, counted in `skipped`."
    )
    warnings: list[str] = Field(description="What the import could not check, one line each.")


@router.get(
    "/export",
    openapi_extra=sided(SideRule.ONE_SIDE),
    responses={
        200: {
            "content": {"application/x-ndjson": {}, "application/json": {}},
            "description": "jsonl: the export's lines; markdown: MarkdownExport.",
        },
        **errors(e422="Invalid input."),
    },
)
def export(
    store: StoreDep,
    request: Request,
    format: Annotated[ExportFormat, Query(description="jsonl or markdown")],
    side: Annotated[
        str | None,
        Query(
            pattern=PROJECT_PATTERN,
            max_length=64,
            description="Only this side (a token limited to a side: that side, its default).",
        ),
    ] = None,
) -> Response:
    import json

    # A side-limited token exports its side only (naming another is refused).
    side = store.limited(side)
    if side is not None:
        configured(store.settings.sides, side)
    now = store.now()
    with store.read() as conn:
        if format is ExportFormat.jsonl:
            text = "".join(exchange.export_jsonl(conn, now, side=side))
            return PlainTextResponse(text, media_type="application/x-ndjson")
        body = exchange.markdown_files(conn, store, side)
    return Response(json.dumps(body, ensure_ascii=False), media_type="application/json")


@router.post(
    "/import",
    openapi_extra=sided(SideRule.OWNER),
    response_model=ImportOut,
    responses=errors(e422="Nothing was written.", e409="Conflicts; nothing was written."),
)
def import_(store: StoreDep, body: ImportIn) -> dict[str, Any]:
    # The lines name their own sides: a token of one side imports nothing.
    store.access.owner_only("an import", "names its own sides: import with the owner's token")
    with store.write() as conn:
        return exchange.import_counts(conn, store, body.lines)
