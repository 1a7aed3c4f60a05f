"""GET /api/v1/context: what a new session is told, as JSON, Markdown or hook JSON."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from ondeck.context.render import Format
from ondeck.core.sides import SideView, configured
from ondeck.core.validation import PROJECT_PATTERN
from ondeck.entrypoints.api.access import from_loopback
from ondeck.entrypoints.api.deps import StoreDep
from ondeck.entrypoints.api.models import SideRule, errors, sided
from ondeck.entrypoints.gateway import Call
from ondeck.sessions.capture.agents import AGENT_PATTERN, CLAUDE_CODE

router = APIRouter(tags=["context"])

MEDIA_TYPES = {
    Format.json: "application/json",
    Format.markdown: "text/markdown",
    Format.hook: "application/json",
}


class ContextQuestion:
    """What a session's context is asked with (the query of `GET /context`, and of a session
    start's `POST /sessions/records?context=true`, which gets it in the same answer)."""

    def __init__(
        self,
        project: Annotated[str | None, Query(pattern=PROJECT_PATTERN)] = None,
        format: Annotated[Format, Query()] = Format.json,
        budget: Annotated[int, Query(ge=1, le=500)] = 20,
        brief: Annotated[
            bool, Query(description="Add the brief: handoff, pinned notes, recent sessions.")
        ] = False,
        side: Annotated[
            str | None,
            Query(pattern=PROJECT_PATTERN, description="The session's side (the brief's notes)."),
        ] = None,
        unclassified: Annotated[
            bool, Query(description="The session is unclassified: the brief shows no memory.")
        ] = False,
        source: Annotated[
            str | None,
            Query(pattern=r"^[a-z_]{1,16}$", description="How the session started: startup, …"),
        ] = None,
        session: Annotated[
            str | None, Query(min_length=1, max_length=200, description="The session's own id.")
        ] = None,
        cwd: Annotated[
            str | None,
            Query(
                min_length=1,
                max_length=4000,
                description="The session's directory on this machine: the handoff's git drift.",
            ),
        ] = None,
        brief_project: Annotated[
            str | None,
            Query(
                pattern=PROJECT_PATTERN,
                description="The brief's project, when it is not `project` (the lists' filter).",
            ),
        ] = None,
        agent: Annotated[
            str, Query(pattern=AGENT_PATTERN, description="Whose session id `session` is.")
        ] = CLAUDE_CODE,
    ) -> None:
        self.project = project
        self.format = format
        self.budget = budget
        self.brief = brief
        self.side = side
        self.unclassified = unclassified
        self.source = source
        self.session = session
        self.cwd = cwd
        self.brief_project = brief_project
        self.agent = agent

    def as_unclassified(self) -> None:
        """The server put the session in its inbox (a side it does not know): the context
        of an unclassified session, whatever the asker thought."""
        self.unclassified = True
        self.side = None
        self.project = None
        self.brief_project = None


def _side_view(store: Call, side: str | None, unclassified: bool) -> tuple[str | None, SideView]:
    """The session's side as the caller's token allows it, and the lists' view: the session's
    side (none named, or an unclassified session, lists none); InvalidInput for a side not
    configured."""

    settings = store.settings
    side = store.limited(side)
    if side is not None:
        configured(settings.sides, side)
    return side, SideView(sides_on=bool(settings.sides), side=None if unclassified else side)


def context_text(store: Call, http: Request, asked: ContextQuestion) -> str:
    """The context `asked` for, in its format; InvalidInput for a side not configured."""
    from ondeck.memory.brief import BriefRequest

    settings = store.settings
    request = None
    side, view = _side_view(store, asked.side, asked.unclassified)
    if asked.brief:
        cwd = asked.cwd
        request = BriefRequest(
            sides_on=bool(settings.sides),
            side=side,
            project=asked.brief_project or asked.project,
            unclassified=asked.unclassified,
            source=asked.source,
            session=asked.session,
            agent=asked.agent,
            # git is read in `cwd` on this machine: only for a caller on this machine (the
            # session hook), as the hooks' events are.
            cwd=cwd if cwd and "\x00" not in cwd and from_loopback(http) else None,
        )
    return store.context_text(asked.format, asked.project, asked.budget, brief=request, view=view)


@router.get(
    "/context",
    openapi_extra=sided(SideRule.ONE_SIDE),
    responses={
        200: {"content": {"text/markdown": {}, "application/json": {}}},
        **errors(e422="Invalid input; nothing was written."),
    },
)
def get_context(
    store: StoreDep, http: Request, asked: Annotated[ContextQuestion, Depends()]
) -> Response:
    return Response(context_text(store, http, asked), media_type=MEDIA_TYPES[asked.format])


@router.get(
    "/context/status",
    openapi_extra=sided(SideRule.ONE_SIDE),
    responses=errors(e422="Invalid input; nothing was written."),
)
def get_status_line(
    store: StoreDep,
    project: Annotated[str | None, Query(pattern=PROJECT_PATTERN)] = None,
    side: Annotated[
        str | None,
        Query(pattern=PROJECT_PATTERN, description="The session's side (its lists)."),
    ] = None,
    unclassified: Annotated[
        bool, Query(description="The session is unclassified: its lists are empty.")
    ] = False,
    session: Annotated[
        str | None,
        Query(min_length=1, max_length=200, description="The session's own id (its lease)."),
    ] = None,
) -> dict[str, str]:
    """What is on deck in one short line (context/status_line.py): Claude Code's status line."""
    from ondeck.context.status_line import status_line

    _, view = _side_view(store, side, unclassified)
    return {"line": status_line(store.context(project, view=view), session)}
