"""Sessions: the records of agent sessions (the inbox of unclassified ones first), a session's
page (timeline, classification and disagreements, tasks touched, commits, files, last word),
and moving a session to its side and project. Each calls one `sessions.records` service."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Path, Query, Request
from starlette.responses import Response

from ondeck.core.errors import InvalidInput
from ondeck.core.validation import BIGINT_MAX
from ondeck.entrypoints.web import auth
from ondeck.entrypoints.web.render import (
    FormError,
    Id,
    action_response,
    or_error_page,
    refused,
    render,
    safe_next,
    store_of,
)
from ondeck.sessions import records as sessions
from ondeck.sessions import records_move
from ondeck.sessions.capture.agents import AGENTS

ACTOR = "dashboard"
PAGE_SIZE = 50
INBOX_SIZE = 50
STATUS_CHOICES = ("", *sessions.FILTERS)

router = APIRouter(include_in_schema=False, dependencies=[Depends(auth.require_login)])
Text = Annotated[str, Form()]
Ref = Annotated[str, Path(min_length=1, max_length=200)]


@router.get("/sessions")
def sessions_page(
    request: Request,
    status: Annotated[str, Query(max_length=20)] = "",
    side: Annotated[str, Query(max_length=64)] = "",
    project: Annotated[str, Query(max_length=64)] = "",
    agent: Annotated[str, Query(max_length=32)] = "",
    before: Annotated[int | None, Query(ge=1, le=BIGINT_MAX)] = None,
) -> Response:
    if status not in STATUS_CHOICES:
        status = ""
    if agent not in AGENTS:
        agent = ""
    store = store_of(request)
    extra: dict[str, Any] = {}
    cutoff = sessions.lost_before(store.now(), store.settings)
    with store.read() as conn:
        try:
            found = sessions.list_sessions(
                conn,
                status=status or None,
                side=side.strip() or None,
                project=project.strip() or None,
                agent=agent or None,
                before_id=before,
                limit=PAGE_SIZE + 1,
                lost_before=cutoff,
            )
        except InvalidInput as exc:  # a side or project that is not a name
            found = []
            extra = {"flash": str(exc), "flash_kind": "error"}
        filtered = bool(status or side or project or agent or before)
        inbox = (
            []
            if filtered
            else sessions.list_sessions(
                conn, status="unclassified", limit=INBOX_SIZE, lost_before=cutoff
            )
        )
        inbox_total = sessions.count_unclassified(conn)
        projects = sessions.session_projects(conn)
    more = len(found) > PAGE_SIZE
    found = found[:PAGE_SIZE]
    return render(
        request,
        "sessions.html",
        {
            "sessions": found,
            "older": found[-1].id if more and found else None,
            "inbox": inbox,
            "inbox_total": inbox_total,
            "status": status,
            "side": side,
            "project": project,
            "agent": agent,
            "agents": AGENTS,
            "status_choices": STATUS_CHOICES,
            "sides": sorted(store.settings.sides),
            "projects": projects,
            "settings": store.settings,
            **extra,
        },
        status=422 if extra else 200,
    )


def _session_page(request: Request, ref: str, *, error: FormError | None = None) -> Response:
    from ondeck.memory.notes import handoff_of

    store = store_of(request)
    with store.read() as conn, refused():
        detail = sessions.session_detail(
            conn, ref, lost_before=sessions.lost_before(store.now(), store.settings)
        )
        handoff = handoff_of(conn, detail.session.id)
    extra: dict[str, Any] = {}
    if error is not None:
        extra = {"flash": str(error), "flash_kind": "error"}
    return render(
        request,
        "session.html",
        {
            "detail": detail,
            "s": detail.session,
            "sides": sorted(store.settings.sides),
            "timeline": timeline(detail),
            "handoff": handoff,
            "disagreements": [_with_instant(d) for d in detail.session.disagreements],
            **extra,
        },
        status=error.status if error else 200,
    )


@router.get("/sessions/{ref}")
def session_page(request: Request, ref: Ref) -> Response:
    return or_error_page(request, _session_page, ref)


@router.post("/sessions/{session_id}/move", dependencies=[Depends(auth.require_csrf)])
def move_session(
    request: Request,
    session_id: Id,
    side: Text = "",
    project: Text = "",
    next: Text = "",
) -> Response:
    store = store_of(request)
    try:
        with refused(), store.write() as conn:
            moved = records_move.move_session(
                conn,
                store.now(),
                session_id,
                side=side.strip() or None,
                project=project.strip() or None,
                sides=store.settings.sides,
                actor=ACTOR,
            )
    except FormError as exc:
        return or_error_page(request, _session_page, str(session_id), error=exc)
    where = "/".join(p for p in (moved.side, moved.project) if p) or "the pool"
    return action_response(
        request,
        ok_message=f"session {moved.id} moved to {where}",
        next_url=safe_next(next, f"/sessions/{moved.id}"),
    )


def _with_instant(entry: dict[str, Any]) -> dict[str, Any]:
    """A disagreement with its `at` (ISO text in the record) as an instant, for `when`."""
    from datetime import datetime

    try:
        at = datetime.fromisoformat(str(entry.get("at")))
    except ValueError:
        at = None
    return {**entry, "at": at if at is not None and at.tzinfo is not None else None}


def timeline(detail: sessions.SessionDetail) -> list[dict[str, Any]]:
    """What happened to the session, in order: its start, resumes, compactions (with
    Claude's summary), disagreements of place, moves, end or loss; each at the time its hook
    ran (a spooled event was stored later)."""
    import contextlib
    from datetime import datetime

    compactions = iter(detail.compactions)
    items: list[dict[str, Any]] = []
    for event in detail.history:
        if event.kind not in TIMELINE:
            continue
        at = event.at
        hook_at = event.details.get("hook_at") if isinstance(event.details, dict) else None
        if isinstance(hook_at, str):
            with contextlib.suppress(ValueError):
                at = datetime.fromisoformat(hook_at)
        item: dict[str, Any] = {
            "at": at,
            "kind": event.kind.removeprefix("session."),
            "event": event,
        }
        if event.kind == "session.compacted":
            item["compaction"] = next(compactions, None)
        items.append(item)
    return items


TIMELINE = frozenset(
    {
        "session.started",
        "session.start_heard_late",
        "session.resumed",
        "session.reopened",
        "session.compacted",
        "session.place_disagrees",
        "session.moved",
        "session.ended",
        "session.lost",
        "session.changes_read",
    }
)
