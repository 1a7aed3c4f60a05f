"""The dashboard: server-rendered pages (Jinja2) with htmx, usable with JavaScript off.

Every page and form is a thin entry point: parse the input, call one service (the same ones
the CLI and the API call), render. The routes live in `pages` (Today, Activity, System,
the calendar feed), `tasks` (Backlog), `schedules`, `sessions`, `memory` and `login`;
`auth` holds the login cookie and CSRF, `render` the templates and how errors become a
flash.

`install(app, settings)` mounts all of it on the API's FastAPI app. None of it appears in
the OpenAPI document.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import RedirectResponse, Response
from starlette.staticfiles import StaticFiles

from ondeck.core.errors import OndeckError
from ondeck.entrypoints.web import auth
from ondeck.host.settings import Settings


def install(app: FastAPI, settings: Settings) -> None:
    from ondeck.entrypoints.web import login, memory, pages, schedules, sessions, tasks

    app.state.dashboard_guard = auth.Guard.create(settings.token_value)
    app.mount(
        "/static", StaticFiles(packages=[("ondeck.entrypoints.web", "static")]), name="static"
    )
    app.include_router(login.router)
    app.include_router(pages.public)
    for module in (pages, tasks, schedules, sessions, memory):
        app.include_router(module.router)
    app.include_router(login.private)
    _install_handlers(app)


def is_dashboard_path(path: str) -> bool:
    return not (path.startswith("/api/") or path in ("/docs", "/redoc", "/openapi.json"))


def _install_handlers(app: FastAPI) -> None:
    from ondeck.entrypoints.web.render import flash_fragment, is_htmx, render, with_query

    api_http = app.exception_handlers[HTTPException]
    api_validation = app.exception_handlers[RequestValidationError]
    api_ondeck = app.exception_handlers[OndeckError]

    async def login_required(request: Request, _: Exception) -> Response:
        target = with_query("/login", next=request.url.path)
        if is_htmx(request):
            return Response(status_code=401, headers={"HX-Redirect": target})
        return RedirectResponse(target, status_code=303)

    async def csrf_refused(request: Request, _: Exception) -> Response:
        message = (
            "refused: this form's security token is missing or out of date; "
            "reload the page and try again (nothing was changed)"
        )
        if is_htmx(request):
            return flash_fragment(request, message, "error", status=403)
        return render(request, "error.html", {"status": 403, "message": message}, status=403)

    async def http_error(request: Request, exc: Exception) -> Response:
        if not is_dashboard_path(request.url.path) or not isinstance(exc, HTTPException):
            return await _handled(api_http, request, exc)
        message = "no such page" if exc.status_code == 404 else str(exc.detail)
        return render(
            request,
            "error.html",
            {"status": exc.status_code, "message": message},
            status=exc.status_code,
        )

    async def invalid_request(request: Request, exc: Exception) -> Response:
        if not is_dashboard_path(request.url.path) or not isinstance(exc, RequestValidationError):
            return await _handled(api_validation, request, exc)
        parts = []
        for err in exc.errors()[:3]:
            where = ".".join(
                str(p) for p in err.get("loc", ()) if p not in ("query", "path", "body")
            )
            parts.append(f"{where or 'request'}: {err.get('msg', 'invalid')}")
        message = "; ".join(parts)
        if is_htmx(request):
            return flash_fragment(request, message, "error", status=422)
        return render(request, "error.html", {"status": 422, "message": message}, status=422)

    async def service_error(request: Request, exc: Exception) -> Response:
        """What a page's own reads raise (the database unavailable, above all): a page."""
        if not is_dashboard_path(request.url.path) or not isinstance(exc, OndeckError):
            return await _handled(api_ondeck, request, exc)
        status = exc.http_status if exc.http_status in (404, 409, 422, 503) else 500
        if is_htmx(request):
            return flash_fragment(request, str(exc), "error", status=status)
        return render(request, "error.html", {"status": status, "message": str(exc)}, status=status)

    app.add_exception_handler(auth.LoginRequired, login_required)
    app.add_exception_handler(OndeckError, service_error)
    app.add_exception_handler(auth.CsrfRefused, csrf_refused)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid_request)


async def _handled(handler: Callable[..., Any], request: Request, exc: Exception) -> Response:
    """The API's own handler for what is not a dashboard page's (Starlette allows a plain
    or an async handler)."""
    result = handler(request, exc)
    response: Response = await result if inspect.isawaitable(result) else result
    return response
