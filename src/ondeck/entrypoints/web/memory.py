"""Memory: search as you type (htmx; a plain GET form without JavaScript), the notes of a
side with pin, supersede, mark wrong, expire, and adding one. Each action calls one
`memory.notes` or `memory.recall` service; a refusal is the service's own sentence.

The dashboard is a person's: it reads any side (one at a time, chosen in the page, the
first configured by default) and the inbox of unclassified items, which no session sees.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query, Request
from starlette.responses import Response

from ondeck.core.errors import InvalidInput
from ondeck.core.memory import Note, Scope
from ondeck.core.sides import EVERY_SIDE, view_of
from ondeck.entrypoints.web import auth
from ondeck.entrypoints.web.render import (
    FormError,
    Id,
    action_response,
    error_page,
    flash_fragment,
    is_htmx,
    refused,
    render,
    safe_next,
    store_of,
)
from ondeck.memory import notes

ACTOR = "dashboard"
INBOX = "(inbox)"
PAGE_SIZE = 100

router = APIRouter(include_in_schema=False, dependencies=[Depends(auth.require_login)])
Text = Annotated[str, Form()]
Short = Annotated[str, Query(max_length=200)]
Name = Annotated[str, Query(max_length=64)]


def _scope(request: Request, side: str, project: str) -> tuple[Scope, str]:
    """The side shown: the one asked for, the inbox, else the first configured."""
    sides = sorted(store_of(request).settings.sides)
    project_name = project.strip() or None
    if not sides:
        return Scope(view=EVERY_SIDE, project=project_name), ""
    if side == INBOX:
        return Scope(view=view_of(sides, None, inbox=True), project=project_name), INBOX
    chosen = side if side in sides else sides[0]
    return Scope(view=view_of(sides, chosen), project=project_name), chosen


def _results(request: Request, q: str, scope: Scope, include_all: bool) -> dict[str, Any]:
    from ondeck.memory.recall import recall
    from ondeck.sessions.records import lost_before

    store = store_of(request)
    if not q.strip():
        return {"results": None, "query": "", "search_error": None}
    try:
        with store.write() as conn:  # the index is brought up to date first
            found = recall(
                conn,
                q,
                scope,
                _today(request),
                include_all=include_all,
                limit=PAGE_SIZE,
                lost_before=lost_before(store.now(), store.settings),
            )
    except InvalidInput as exc:
        return {"results": None, "query": q, "search_error": str(exc)}
    return {"results": found, "query": q, "search_error": None}


def _today(request: Request) -> Any:
    from ondeck.core.clock import today

    store = store_of(request)
    return today(store.now(), store.settings.zone)


def _page_values(
    request: Request, q: str, side: str, project: str, include_all: bool
) -> dict[str, Any]:
    store = store_of(request)
    extra: dict[str, Any] = {}
    try:
        from ondeck.core.validation import check_project

        check_project(project.strip() or None)
        scope, chosen = _scope(request, side, project)
    except InvalidInput as exc:
        scope, chosen = _scope(request, side, "")
        project = ""
        extra = {"flash": str(exc), "flash_kind": "error"}
    with store.read() as conn:
        listed = notes.list_notes(
            conn, scope, _today(request), include_all=include_all, limit=PAGE_SIZE
        )
    return {
        **_results(request, q, scope, include_all),
        "notes": listed,
        "side": chosen,
        "sides": sorted(store.settings.sides),
        "inbox": INBOX,
        "project": project,
        "include_all": include_all,
        "scope": scope,
        "day": _today(request),
        **extra,
    }


@router.get("/memory")
def memory_page(
    request: Request,
    q: Short = "",
    side: Name = "",
    project: Name = "",
    all: Annotated[str, Query(max_length=5)] = "",
) -> Response:
    values = _page_values(request, q, side, project, bool(all))
    return render(request, "memory.html", values, status=422 if "flash" in values else 200)


@router.get("/memory/search")
def memory_search(
    request: Request,
    q: Short = "",
    side: Name = "",
    project: Name = "",
    all: Annotated[str, Query(max_length=5)] = "",
) -> Response:
    """The results alone, for htmx as the person types; without htmx, the whole page."""
    if not is_htmx(request):
        return memory_page(request, q, side, project, all)
    try:
        scope, chosen = _scope(request, side, project)
    except InvalidInput as exc:
        return flash_fragment(request, str(exc), "error", status=422)
    values = _results(request, q, scope, bool(all))
    return render(
        request, "_memory_results.html", {**values, "side": chosen, "day": _today(request)}
    )


def _row(request: Request, note: Note, back: str, message: str) -> Response:
    return action_response(
        request,
        ok_message=message,
        next_url=back,
        partial=lambda: render(
            request, "_note_row.html", {"n": note, "back": back, "day": _today(request)}
        ),
    )


def _act(request: Request, next_url: str, change: Any, message: Any) -> Response:
    store = store_of(request)
    back = safe_next(next_url, "/memory")
    try:
        with refused(), store.write() as conn:
            note = change(conn, store.now())
    except FormError as exc:
        return error_page(request, exc)
    return _row(request, note, back, message(note))


@router.post("/memory/notes", dependencies=[Depends(auth.require_csrf)])
def add_note(
    request: Request,
    text: Text = "",
    kind: Text = "note",
    side: Text = "",
    project: Text = "",
    pinned: Text = "",
    expires_on: Text = "",
    next: Text = "/memory",
) -> Response:
    from ondeck.core.validation import parse_date

    store = store_of(request)
    back = safe_next(next, "/memory")
    try:
        with refused(), store.write() as conn:
            note = notes.add_note(
                conn,
                store.now(),
                text=text,
                kind=kind,
                side=None if side == INBOX else side.strip() or None,
                project=project.strip() or None,
                sides=store.settings.sides,
                zone=store.settings.zone,
                pinned=bool(pinned),
                expires_on=parse_date(expires_on, "expires") if expires_on.strip() else None,
                actor=ACTOR,
            )
    except FormError as exc:
        return error_page(request, exc)
    return action_response(request, ok_message=f"added {note.kind.value} {note.id}", next_url=back)


@router.post("/memory/notes/{note_id}/pin", dependencies=[Depends(auth.require_csrf)])
def pin_note(request: Request, note_id: Id, next: Text = "/memory") -> Response:
    return _act(
        request,
        next,
        lambda conn, now: notes.set_pinned(
            conn, now, note_id, True, zone=store_of(request).settings.zone, actor=ACTOR
        ),
        lambda n: f"pinned note {n.id}",
    )


@router.post("/memory/notes/{note_id}/unpin", dependencies=[Depends(auth.require_csrf)])
def unpin_note(request: Request, note_id: Id, next: Text = "/memory") -> Response:
    return _act(
        request,
        next,
        lambda conn, now: notes.set_pinned(
            conn, now, note_id, False, zone=store_of(request).settings.zone, actor=ACTOR
        ),
        lambda n: f"unpinned note {n.id}",
    )


@router.post("/memory/notes/{note_id}/wrong", dependencies=[Depends(auth.require_csrf)])
def wrong_note(
    request: Request, note_id: Id, reason: Text = "", next: Text = "/memory"
) -> Response:
    return _act(
        request,
        next,
        lambda conn, now: notes.mark_wrong(conn, now, note_id, reason, actor=ACTOR),
        lambda n: f"note {n.id} marked wrong: {n.status_reason}",
    )


@router.post("/memory/notes/{note_id}/expire", dependencies=[Depends(auth.require_csrf)])
def expire_note(request: Request, note_id: Id, next: Text = "/memory") -> Response:
    return _act(
        request,
        next,
        lambda conn, now: notes.expire_note(
            conn, now, note_id, zone=store_of(request).settings.zone, actor=ACTOR
        ),
        lambda n: f"note {n.id} expired",
    )


@router.post("/memory/notes/{note_id}/supersede", dependencies=[Depends(auth.require_csrf)])
def supersede_note(
    request: Request, note_id: Id, text: Text = "", next: Text = "/memory"
) -> Response:
    store = store_of(request)
    back = safe_next(next, "/memory")
    try:
        with refused(), store.write() as conn:
            old, new = notes.supersede(
                conn, store.now(), note_id, text, zone=store.settings.zone, actor=ACTOR
            )
    except FormError as exc:
        return error_page(request, exc)
    # The list changes shape (a new note on top): the page again, not one row.
    return action_response(
        request, ok_message=f"note {new.id} replaces note {old.id}", next_url=back
    )
