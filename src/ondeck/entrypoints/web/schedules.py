"""Schedules: the table, add and edit (the rule checked as you type), now, pause/resume,
delete (confirmed). Each action calls one `ondeck.work.schedules` service.

"now" only pulls `next_due` to today at the latest; the jobs tick creates the item. What a
row says about it is `schedules.due_state` over the stored state and the jobs heartbeat
(`heartbeat.jobs_health`): "will be created by the jobs loop within a minute" only while the
loop ticks; otherwise that it waits for a loop that has not ticked since when.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query, Request
from sqlalchemy import Connection
from starlette.responses import HTMLResponse, Response

from ondeck.core.clock import today
from ondeck.core.errors import InvalidInput
from ondeck.core.models import MissedPolicy, Schedule, ScheduleKind
from ondeck.core.rulecheck import check_rule
from ondeck.core.rules import MAX_LENGTH
from ondeck.core.validation import PRIORITY_DEFAULT, parse_date, parse_priority
from ondeck.entrypoints.web import auth, queries, sides
from ondeck.entrypoints.web.render import (
    FormError,
    Id,
    action_response,
    error_page,
    flash_fragment,
    is_htmx,
    or_error_page,
    refused,
    render,
    safe_next,
    store_of,
)
from ondeck.system import events, heartbeat
from ondeck.system.heartbeat import JobsHealth
from ondeck.work import schedules
from ondeck.work.schedules import due_state

ACTOR = "dashboard"
PAGE_SIZE = 50
RULE_HINT = "daily, weekly:MON,THU, monthly:1,15,last or every:3"
# The form's choices and the list's filter, as the words the form sends.
KINDS = tuple(kind.value for kind in ScheduleKind)
MISSED_POLICIES = tuple(policy.value for policy in MissedPolicy)

router = APIRouter(include_in_schema=False, dependencies=[Depends(auth.require_login)])
Text = Annotated[str, Form()]
Next = Annotated[str, Form()]


# --- what a row says about its next date ------------------------------------------------


def _jobs(conn: Connection, now: datetime, tick_seconds: float) -> JobsHealth:
    return heartbeat.jobs_health(conn, now, tick_seconds=tick_seconds)


def _rows(
    items: list[Schedule], day: date, jobs: JobsHealth, zone: Any
) -> list[tuple[Schedule, Any]]:
    return [(s, due_state(s, day, jobs, zone)) for s in items]


# --- forms ----------------------------------------------------------------------------


def _empty_form() -> dict[str, str]:
    return {
        "title": "",
        "kind": ScheduleKind.TASK.value,
        "rule": "",
        "start_on": "",
        "project": "",
        "priority": str(PRIORITY_DEFAULT),
        "missed": MissedPolicy.LATEST.value,
        "body": "",
        "side": "",
    }


def _schedule_form(s: Schedule) -> dict[str, str]:
    return {
        "title": s.title,
        "kind": s.kind.value,
        "rule": s.rule,
        "start_on": s.start_on.isoformat(),
        "project": s.project or "",
        "priority": str(s.priority),
        "missed": s.missed.value,
        "body": s.body,
        "side": s.side or "",
    }


def _start(text: str) -> date | None:
    return parse_date(text, "start date") if text.strip() else None


def _form_context(form: dict[str, str], preview_from: date) -> dict[str, Any]:
    return {
        "form": form,
        "kinds": KINDS,
        "missed_policies": MISSED_POLICIES,
        "rule_max": MAX_LENGTH,
        "preview": _preview(form["rule"], form["start_on"], preview_from) if form["rule"] else None,
        "rule_hint": RULE_HINT,
    }


# --- pages ----------------------------------------------------------------------------


def _list_page(
    request: Request,
    *,
    kind: str,
    page: int,
    side: str = "",
    form: dict[str, str] | None = None,
    error: FormError | None = None,
) -> Response:
    store = store_of(request)
    settings = store.settings
    now = store.now()
    day = today(now, settings.zone)
    view, selected = sides.chosen(request, side)
    with store.read() as conn:
        found = queries.page_schedules(
            conn, kind=kind or None, page=page, size=PAGE_SIZE, view=view
        )
        jobs = _jobs(conn, now, settings.tick_seconds)
    extra: dict[str, Any] = {}
    if error is not None:
        extra = {"flash": str(error), "flash_kind": "error"}
    return render(
        request,
        "schedules.html",
        {
            "now": now,
            "page": found,
            "rows": _rows(found.items, day, jobs, settings.zone),
            "kind": kind,
            "jobs": jobs,
            **_form_context(form or _empty_form(), day),
            **sides.values(request, selected),
            **extra,
        },
        status=error.status if error else 200,
    )


@router.get("/schedules")
def schedules_page(
    request: Request,
    kind: Annotated[str, Query(max_length=16)] = "",
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    side: Annotated[str, Query(max_length=64)] = "",
) -> Response:
    if kind not in KINDS:
        kind = ""
    return _list_page(request, kind=kind, page=page, side=side)


def _preview(rule: str, start: str, day: date) -> dict[str, Any]:
    """The rules check the API uses: canonical form, words, next five dates, or the reason."""
    try:
        result = check_rule(rule, today=day, start=_start(start))
    except InvalidInput as exc:
        return {"rule": rule, "error": str(exc)}
    return {"rule": rule, "error": None, "check": result}


@router.get("/schedules/rule-preview")
def rule_preview(
    request: Request,
    rule: Annotated[str, Query(max_length=MAX_LENGTH * 4)] = "",
    start_on: Annotated[str, Query(max_length=40)] = "",
) -> Response:
    """The live check under the rule field (htmx), or a page of its own with JavaScript off."""
    store = store_of(request)
    day = today(store.now(), store.settings.zone)
    preview = _preview(rule, start_on, day) if rule.strip() else None
    context = {"preview": preview, "rule_hint": RULE_HINT}
    if is_htmx(request):
        return render(request, "_rule_preview.html", context)
    return render(request, "rule_preview.html", {**context, "rule": rule, "start_on": start_on})


def _schedule_page(
    request: Request,
    schedule_id: int,
    *,
    form: dict[str, str] | None = None,
    error: FormError | None = None,
) -> Response:
    store = store_of(request)
    settings = store.settings
    now = store.now()
    day = today(now, settings.zone)
    with store.read() as conn, refused():
        schedule = schedules.get_schedule(conn, schedule_id)
        fires = schedules.list_fires(conn, schedule_id, limit=20)
        history = events.list_events(conn, subject=f"schedule:{schedule_id}", limit=50)
        skipped = schedules.list_skipped(conn, settings.zone, schedule_id)
        jobs = _jobs(conn, now, settings.tick_seconds)
    try:
        upcoming = schedule.upcoming(day)
    except InvalidInput:
        upcoming = []
    extra: dict[str, Any] = {}
    if error is not None:
        extra = {"flash": str(error), "flash_kind": "error"}
    return render(
        request,
        "schedule.html",
        {
            "now": now,
            "s": schedule,
            "state": due_state(schedule, day, jobs, settings.zone),
            "fires": fires,
            "skipped": skipped,
            "events": history,
            "upcoming": upcoming,
            **_form_context(form or _schedule_form(schedule), day),
            **sides.values(request, schedule.side or ""),
            **extra,
        },
        status=error.status if error else 200,
    )


@router.get("/schedules/{schedule_id}")
def schedule_page(request: Request, schedule_id: Id) -> Response:
    return or_error_page(request, _schedule_page, schedule_id)


# --- changes --------------------------------------------------------------------------


@router.post("/schedules", dependencies=[Depends(auth.require_csrf)])
def add_schedule(
    request: Request,
    title: Text = "",
    kind: Text = ScheduleKind.TASK.value,
    rule: Text = "",
    start_on: Text = "",
    project: Text = "",
    priority: Text = "",
    missed: Text = MissedPolicy.LATEST.value,
    body: Text = "",
    side: Text = "",
    next: Next = "/schedules",
) -> Response:
    store = store_of(request)
    now = store.now()
    try:
        with refused():
            chosen_side = sides.to_write(request, side)
        with refused(), store.write() as conn:
            created = schedules.create_schedule(
                conn,
                now,
                store.settings.zone,
                title=title,
                rule=rule,
                kind=kind,
                body=body,
                start_on=_start(start_on),
                project=project.strip() or None,
                priority=parse_priority(priority),
                missed=missed,
                side=chosen_side,
                actor=ACTOR,
            )
    except FormError as exc:
        form = {
            "side": side,
            "title": title,
            "kind": kind,
            "rule": rule,
            "start_on": start_on,
            "project": project,
            "priority": priority,
            "missed": missed,
            "body": body,
        }
        return _list_page(request, kind="", page=1, form=form, error=exc)
    due = created.next_due.isoformat() if created.next_due else "none"
    return action_response(
        request,
        ok_message=f"added schedule {created.id}: {created.title} (next due {due})",
        next_url=safe_next(next, "/schedules"),
    )


@router.post("/schedules/{schedule_id}/edit", dependencies=[Depends(auth.require_csrf)])
def edit_schedule(
    request: Request,
    schedule_id: Id,
    title: Text = "",
    rule: Text = "",
    start_on: Text = "",
    project: Text = "",
    priority: Text = "",
    missed: Text = MissedPolicy.LATEST.value,
    body: Text = "",
    side: Text = "",
) -> Response:
    store = store_of(request)
    now = store.now()
    try:
        with refused(), store.write() as conn:
            if store.settings.sides:
                # The inbox is left by choosing a side here; a side is never taken away.
                side_wanted = sides.to_write(request, side)
            changes: dict[str, Any] = {
                "title": title,
                "rule": rule,
                "project": project.strip() or None,
                "priority": parse_priority(priority),
                "missed": missed,
                "body": body,
            }
            start = _start(start_on)
            if start is not None:  # an empty start keeps the stored one
                changes["start_on"] = start
            if store.settings.sides:
                changes["side"] = side_wanted
            edited = schedules.edit_schedule(
                conn, now, store.settings.zone, schedule_id, actor=ACTOR, **changes
            )
    except FormError as exc:
        form = {
            "title": title,
            "kind": "",
            "rule": rule,
            "start_on": start_on,
            "project": project,
            "priority": priority,
            "missed": missed,
            "body": body,
            "side": side,
        }
        return or_error_page(request, _schedule_page, schedule_id, form=form, error=exc)
    due = edited.next_due.isoformat() if edited.next_due else "none"
    return action_response(
        request,
        ok_message=f"saved schedule {schedule_id} (next due {due})",
        next_url=f"/schedules/{schedule_id}",
    )


def _row_action(
    request: Request,
    schedule_id: int,
    next_url: str,
    verb: str | Callable[[Schedule, date, JobsHealth], str],
    change: Any,
) -> Response:
    """now / pause / resume: one service call; htmx gets the row back, a browser a 303."""
    store = store_of(request)
    settings = store.settings
    now = store.now()
    day = today(now, settings.zone)
    try:
        with refused(), store.write() as conn:
            schedule: Schedule = change(conn, now, settings.zone)
            jobs = _jobs(conn, now, settings.tick_seconds)
    except FormError as exc:
        if is_htmx(request):
            return flash_fragment(request, str(exc), "error", status=exc.status)
        return or_error_page(request, _schedule_page, schedule_id, error=exc)
    back = safe_next(next_url, "/schedules")

    def row() -> HTMLResponse:
        state = due_state(schedule, day, jobs, settings.zone)
        return render(
            request, "_schedule_row.html", {"now": now, "s": schedule, "state": state, "back": back}
        )

    said = verb if isinstance(verb, str) else verb(schedule, day, jobs)
    return action_response(
        request,
        ok_message=f"schedule {schedule.id} ({schedule.title}) {said}",
        next_url=back,
        partial=row,
    )


@router.post("/schedules/{schedule_id}/now", dependencies=[Depends(auth.require_csrf)])
def now_schedule(request: Request, schedule_id: Id, next: Next = "/schedules") -> Response:
    zone = store_of(request).settings.zone
    return _row_action(
        request,
        schedule_id,
        next,
        lambda s, day, jobs: f"pulled now: {schedules.pulled_state(s, day, jobs, zone)}",
        lambda conn, now, zone: schedules.pull_now(conn, now, zone, schedule_id, actor=ACTOR),
    )


@router.post("/schedules/{schedule_id}/pause", dependencies=[Depends(auth.require_csrf)])
def pause_schedule(request: Request, schedule_id: Id, next: Next = "/schedules") -> Response:
    return _row_action(
        request,
        schedule_id,
        next,
        "paused",
        lambda conn, now, zone: schedules.pause_schedule(conn, now, schedule_id, actor=ACTOR),
    )


@router.post("/schedules/{schedule_id}/resume", dependencies=[Depends(auth.require_csrf)])
def resume_schedule(request: Request, schedule_id: Id, next: Next = "/schedules") -> Response:
    return _row_action(
        request,
        schedule_id,
        next,
        "resumed",
        lambda conn, now, zone: schedules.resume_schedule(
            conn, now, zone, schedule_id, actor=ACTOR
        ),
    )


@router.get("/schedules/{schedule_id}/delete")
def delete_confirm(request: Request, schedule_id: Id, next: str = "/schedules") -> Response:
    """The confirm step (`?confirm=1`)."""
    store = store_of(request)
    try:
        with store.read() as conn, refused():
            schedule = schedules.get_schedule(conn, schedule_id)
    except FormError as exc:
        return error_page(request, exc)
    return render(
        request,
        "confirm.html",
        {
            "title": f"Delete schedule {schedule.id}?",
            "schedule": schedule,
            "action": f"/schedules/{schedule.id}/delete",
            "fields": {"confirm": "1"},
            "button": "delete",
            "back": safe_next(next, "/schedules"),
        },
    )


@router.post("/schedules/{schedule_id}/delete", dependencies=[Depends(auth.require_csrf)])
def delete_schedule(
    request: Request, schedule_id: Id, confirm: Text = "", next: Next = "/schedules"
) -> Response:
    if confirm != "1":
        return delete_confirm(request, schedule_id, next)
    store = store_of(request)
    now = store.now()
    try:
        with refused(), store.write() as conn:
            removed = schedules.delete_schedule(conn, now, schedule_id, actor=ACTOR)
    except FormError as exc:
        return error_page(request, exc)
    back = safe_next(next, "/schedules")
    if back.startswith(f"/schedules/{schedule_id}"):
        back = "/schedules"  # its own page is gone
    return action_response(
        request, ok_message=f"deleted schedule {removed.id}: {removed.title}", next_url=back
    )
