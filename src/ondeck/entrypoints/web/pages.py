"""Today, Activity, System, and the calendar feed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from ondeck.backups.runs import list_backups
from ondeck.core.sides import Access
from ondeck.core.urls import shown
from ondeck.core.validation import BIGINT_MAX, PROJECT_PATTERN
from ondeck.db.migrate import revision_of
from ondeck.entrypoints.gateway import Call
from ondeck.entrypoints.web import auth, queries
from ondeck.entrypoints.web.render import is_htmx, render, store_of
from ondeck.sessions.capture import spool
from ondeck.system import events, heartbeat
from ondeck.work.calendar_feed import build_calendar

router = APIRouter(include_in_schema=False, dependencies=[Depends(auth.require_login)])
public = APIRouter(include_in_schema=False)

# The dashboard shows more than an agent's context window gets; the rest is on Backlog.
TODAY_BUDGET = 100
TODAY_CHARS = 200_000
EVENTS_PAGE = 50
KIND_HINTS = (
    "task.",
    "task.created",
    "task.claimed",
    "task.completed",
    "task.released",
    "task.reaped",
    "schedule.",
    "schedule.fired",
    "schedule.pulled_now",
    "backup.",
    "session.",
    "session.moved",
    "session.lost",
)


@router.get("/")
def today_page(
    request: Request,
    project: Annotated[str | None, Query(pattern=PROJECT_PATTERN, max_length=64)] = None,
    side: Annotated[str, Query(max_length=64)] = "",
) -> Response:
    from ondeck.entrypoints.web import sides

    store = store_of(request)
    now = store.now()
    # One side at a time, as a session of that side sees it (the inbox is the Backlog's).
    view, selected = sides.chosen(request, "" if side == sides.INBOX else side)
    with store.read() as conn:
        ctx = store.context(project, TODAY_BUDGET, chars=TODAY_CHARS, conn=conn, view=view)
        projects = queries.task_projects(conn)
    template = "_today.html" if is_htmx(request) else "today.html"
    shown = {"ctx": ctx, "now": now, "projects": projects, **sides.values(request, selected)}
    return render(request, template, shown)


@router.get("/activity")
def activity_page(
    request: Request,
    kind: Annotated[str, Query(max_length=64)] = "",
    subject: Annotated[str, Query(max_length=200)] = "",
    before: Annotated[int | None, Query(ge=1, le=BIGINT_MAX)] = None,
) -> Response:
    store = store_of(request)
    kind, subject = kind.strip(), subject.strip()
    with store.read() as conn:
        found = events.list_events(
            conn,
            subject=subject or None,
            kind=kind or None,
            before_id=before,
            limit=EVENTS_PAGE + 1,
        )
    more = len(found) > EVENTS_PAGE
    found = found[:EVENTS_PAGE]
    return render(
        request,
        "activity.html",
        {
            "events": found,
            "kind": kind,
            "subject": subject,
            "before": before,
            "older": found[-1].id if more and found else None,
            "kind_hints": KIND_HINTS,
        },
    )


@router.get("/system")
def system_page(request: Request) -> Response:
    store = store_of(request)
    settings = store.settings
    now = store.now()
    with store.read() as conn:
        found = heartbeat.list_workers(conn)
        jobs = heartbeat.jobs_health(conn, now, tick_seconds=settings.tick_seconds)
        backups = list_backups(conn, limit=20)
        revision = revision_of(conn)
    beats = [
        (
            w,
            heartbeat.beat_state(w, now, settings.tick_seconds),
            heartbeat.differences(w, now, settings.tz, settings.lease_grace),
        )
        for w in found
    ]
    url = shown(settings.url)
    spooled = spool.status(settings.spool_dir)
    return render(
        request,
        "system.html",
        {
            "now": now,
            "beats": beats,
            "jobs": jobs,
            "backups": backups,
            "revision": revision,
            "database_kind": store.engine.dialect.name,
            "database_url": url,
            "settings": settings,
            "silent_ticks": heartbeat.JOBS_SILENT_TICKS,
            "spool": spooled,
            "spool_stuck": spooled.stuck(now),
        },
    )


def _feed_refusal(
    request: Request, store: Call, token: str, limit: list[Access]
) -> Response | None:
    guard = auth.guard_of(request)
    wait = guard.retry_after(request, store.now())
    if wait is not None:
        return Response(
            f"too many wrong tokens from this address: try again in {wait} s\n",
            status_code=429,
            media_type="text/plain",
            headers={"Retry-After": str(wait)},
        )
    found = guard.identify(store, token) if token else None
    if found is not None:
        limit.append(found.access())
        return None
    if token:
        guard.wrong_token(request, store.now())
    return Response(
        "calendar.ics needs ?token=<ONDECK_TOKEN or a device token>\n",
        status_code=401,
        media_type="text/plain",
    )


@public.get("/calendar.ics")
def calendar_feed(
    request: Request,
    token: Annotated[str, Query(max_length=500)] = "",
    side: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
) -> Response:
    """Calendar apps cannot log in: with a token configured, `?token=` (the admin token or
    a device token, `read` is enough), or a session. With sides configured the feed is of
    one side: `&side=`, or a side-limited token's own."""
    from ondeck.core.errors import OndeckError

    guard = auth.guard_of(request)
    store = store_of(request)
    now = store.now()
    limit: list[Access] = []
    if guard.login_enabled and not guard.has_session(request):
        refused = _feed_refusal(request, store, token, limit)
        if refused is not None:
            return refused
    try:
        view = store.acting_as(store.actor, limit[0] if limit else None).side_view(side)
    except OndeckError as exc:
        return Response(f"{exc.message}\n", status_code=exc.http_status, media_type="text/plain")
    with store.read() as conn:
        items = queries.enabled_schedules(conn, view)
    return Response(
        build_calendar(items, now, store.settings.zone),
        media_type="text/calendar; charset=utf-8",
        headers={
            "Content-Disposition": 'inline; filename="ondeck.ics"',
            "Cache-Control": "no-store",
        },
    )
