"""Backlog: list with filters, add, and per task done, cancel, release (forced, confirmed)
and edit; the task page shows its events. Each action calls one `ondeck.work.backlog` service.

Forms take every field as text and leave the checking to the services, so a bad value
comes back as the service's own sentence in a flash (status 4xx), never a 500.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query, Request
from starlette.responses import Response

from ondeck.core.errors import InvalidInput
from ondeck.core.models import OPEN, Task, TaskStatus
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
from ondeck.system import events
from ondeck.work import backlog

ACTOR = "dashboard"
PAGE_SIZE = 50
STATUS_CHOICES = ("open", *(status.value for status in TaskStatus), "all")

router = APIRouter(include_in_schema=False, dependencies=[Depends(auth.require_login)])
Text = Annotated[str, Form()]
Next = Annotated[str, Form()]


def _statuses(choice: str) -> tuple[TaskStatus, ...] | None:
    if choice == "open":
        return OPEN
    return backlog.parse_statuses(choice)


def _due(text: str) -> date | None:
    return parse_date(text, "due date") if text.strip() else None


def _project(text: str) -> str | None:
    return text.strip() or None


def _form(
    title: str, body: str, priority: str, due_on: str, project: str, side: str = ""
) -> dict[str, str]:
    return {
        "title": title,
        "body": body,
        "priority": priority,
        "due_on": due_on,
        "project": project,
        "side": side,
    }


def _empty_form() -> dict[str, str]:
    return _form("", "", str(PRIORITY_DEFAULT), "", "")


def _task_form(task: Task) -> dict[str, str]:
    due = task.due_on.isoformat() if task.due_on else ""
    return _form(
        task.title, task.body, str(task.priority), due, task.project or "", task.side or ""
    )


# --- pages ----------------------------------------------------------------------------


def _list_page(
    request: Request,
    *,
    status: str,
    project: str,
    page: int,
    side: str = "",
    form: dict[str, str] | None = None,
    error: FormError | None = None,
) -> Response:
    store = store_of(request)
    view, selected = sides.chosen(request, side)
    with store.read() as conn:
        found = queries.page_tasks(
            conn,
            statuses=_statuses(status),
            project=project or None,
            page=page,
            size=PAGE_SIZE,
            view=view,
        )
        projects = queries.task_projects(conn)
    extra: dict[str, Any] = {}
    if error is not None:
        extra = {"flash": str(error), "flash_kind": "error"}
    return render(
        request,
        "tasks.html",
        {
            "page": found,
            "status": status,
            "project": project,
            "projects": projects,
            "status_choices": STATUS_CHOICES,
            "form": form or _empty_form(),
            **sides.values(request, selected),
            **extra,
        },
        status=error.status if error else 200,
    )


@router.get("/tasks")
def tasks_page(
    request: Request,
    status: Annotated[str, Query(max_length=20)] = "open",
    project: Annotated[str, Query(max_length=64)] = "",
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    side: Annotated[str, Query(max_length=64)] = "",
) -> Response:
    if status not in STATUS_CHOICES:
        status = "open"
    try:
        return _list_page(request, status=status, project=project.strip(), page=page, side=side)
    except InvalidInput as exc:  # a project that is not a project name
        return _list_page(
            request, status=status, project="", page=1, side=side, error=FormError(exc)
        )


def _task_page(
    request: Request,
    task_id: int,
    *,
    form: dict[str, str] | None = None,
    error: FormError | None = None,
) -> Response:
    store = store_of(request)
    with store.read() as conn, refused():
        task = backlog.get_task(conn, task_id)
        history = events.list_events(conn, subject=f"task:{task_id}", limit=100)
    extra: dict[str, Any] = {}
    if error is not None:
        extra = {"flash": str(error), "flash_kind": "error"}
    shown = {"task": task, "events": history, "form": form or _task_form(task)}
    return render(
        request,
        "task.html",
        {**shown, **sides.values(request, task.side or ""), **extra},
        status=error.status if error else 200,
    )


@router.get("/tasks/{task_id}")
def task_page(request: Request, task_id: Id) -> Response:
    return or_error_page(request, _task_page, task_id)


# --- changes --------------------------------------------------------------------------


@router.post("/tasks", dependencies=[Depends(auth.require_csrf)])
def add_task(
    request: Request,
    title: Text = "",
    body: Text = "",
    priority: Text = "",
    due_on: Text = "",
    project: Text = "",
    side: Text = "",
    next: Next = "/tasks",
) -> Response:
    store = store_of(request)
    now = store.now()
    try:
        with refused():
            chosen_side = sides.to_write(request, side)
        with refused(), store.write() as conn:
            task = backlog.create_task(
                conn,
                now,
                title=title,
                body=body,
                priority=parse_priority(priority),
                due_on=_due(due_on),
                project=_project(project),
                side=chosen_side,
                actor=ACTOR,
            )
    except FormError as exc:
        form = _form(title, body, priority, due_on, project, side)
        return _list_page(request, status="open", project="", page=1, form=form, error=exc)
    return action_response(
        request,
        ok_message=f"added task {task.id}: {task.title}",
        next_url=safe_next(next, "/tasks"),
    )


@router.post("/tasks/{task_id}/edit", dependencies=[Depends(auth.require_csrf)])
def edit_task(
    request: Request,
    task_id: Id,
    title: Text = "",
    body: Text = "",
    priority: Text = "",
    due_on: Text = "",
    project: Text = "",
    side: Text = "",
) -> Response:
    store = store_of(request)
    now = store.now()
    changes: dict[str, Any] = {}
    try:
        with refused(), store.write() as conn:
            current = backlog.get_task(conn, task_id)
            wanted = {
                "title": title.strip(),
                "body": body,
                "priority": parse_priority(priority),
                "due_on": _due(due_on),
                "project": _project(project),
            }
            if store.settings.sides:
                # The inbox is left by choosing a side here; a side is never taken away.
                wanted["side"] = sides.to_write(request, side)
            # Only what changed: the event then says what the person actually edited.
            changes = {k: v for k, v in wanted.items() if getattr(current, k) != v}
            if changes:
                backlog.edit_task(conn, now, task_id, actor=ACTOR, **changes)
    except FormError as exc:
        form = _form(title, body, priority, due_on, project, side)
        return or_error_page(request, _task_page, task_id, form=form, error=exc)
    message = f"saved task {task_id}" if changes else "nothing changed"
    return action_response(request, ok_message=message, next_url=f"/tasks/{task_id}")


def _row_action(request: Request, task_id: int, next_url: str, verb: str, change: Any) -> Response:
    """done / cancel / release: one service call; htmx gets the row back, a browser a 303."""
    store = store_of(request)
    now = store.now()
    try:
        with refused(), store.write() as conn:
            task: Task = change(conn, now)
    except FormError as exc:
        if is_htmx(request):
            return flash_fragment(request, str(exc), "error", status=exc.status)
        return or_error_page(request, _task_page, task_id, error=exc)
    back = safe_next(next_url, "/tasks")
    return action_response(
        request,
        ok_message=f"task {task.id} {verb}: {task.title}",
        next_url=back,
        partial=lambda: render(request, "_task_row.html", {"t": task, "back": back}),
    )


@router.post("/tasks/{task_id}/done", dependencies=[Depends(auth.require_csrf)])
def done_task(request: Request, task_id: Id, next: Next = "/tasks") -> Response:
    return _row_action(
        request,
        task_id,
        next,
        "done",
        lambda conn, now: backlog.complete_task(conn, now, task_id, token=None, actor=ACTOR),
    )


@router.post("/tasks/{task_id}/cancel", dependencies=[Depends(auth.require_csrf)])
def cancel_task(request: Request, task_id: Id, next: Next = "/tasks") -> Response:
    return _row_action(
        request,
        task_id,
        next,
        "cancelled",
        lambda conn, now: backlog.cancel_task(conn, now, task_id, actor=ACTOR),
    )


@router.get("/tasks/{task_id}/release")
def release_confirm(request: Request, task_id: Id, next: str = "/tasks") -> Response:
    """The confirm step (`?confirm=1`): forcing a release takes the task from its holder."""
    store = store_of(request)
    try:
        with store.read() as conn, refused():
            task = backlog.get_task(conn, task_id)
    except FormError as exc:
        return error_page(request, exc)
    return render(
        request,
        "confirm.html",
        {
            "title": f"Release task {task.id}?",
            "task": task,
            "action": f"/tasks/{task.id}/release",
            "fields": {"force": "1"},
            "button": "release (force)",
            "back": safe_next(next, "/tasks"),
        },
    )


@router.post("/tasks/{task_id}/release", dependencies=[Depends(auth.require_csrf)])
def release_task(
    request: Request, task_id: Id, force: Text = "", next: Next = "/tasks"
) -> Response:
    if force != "1":
        return release_confirm(request, task_id, next)
    return _row_action(
        request,
        task_id,
        next,
        "released",
        lambda conn, now: backlog.release_task(conn, now, task_id, force=True, actor=ACTOR),
    )
