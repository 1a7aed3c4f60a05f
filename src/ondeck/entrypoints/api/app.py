"""The FastAPI application factory."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from sqlalchemy import Engine
from starlette.responses import Response

from ondeck import __version__
from ondeck.core import logs
from ondeck.core.config import Settings
from ondeck.entrypoints.api import errors
from ondeck.entrypoints.api.access import admit
from ondeck.entrypoints.api.body_limit import BodyLimit
from ondeck.entrypoints.store import Store

log = logs.logger("ondeck.api")

MAX_BODY_BYTES = 1024 * 1024


def create_app(settings: Settings, engine: Engine, *, run_jobs: bool = False) -> FastAPI:
    from ondeck.entrypoints.mcp_http import PATH, McpOverHttp

    store = Store(settings=settings, engine=engine)
    mcp = McpOverHttp(store)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with mcp.running(), _jobs_running(store, run_jobs):
            yield

    app = FastAPI(
        title="ondeck",
        version=__version__,
        description="What is on deck today: backlog, schedules, leases, session context.",
        lifespan=lifespan,
    )
    app.state.store = store
    errors.install(app)

    @app.middleware("http")
    async def guard(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        token = settings.token_value
        path = request.url.path
        if token and path == PATH:
            # Every MCP request, each call of a session already open too (mcp_http.py).
            refused = await admit(request, browsable=False, surface="mcp")
            if refused is not None:
                return refused
        elif token and (path.startswith("/api/") or path in API_DOCUMENTS):
            # The API's description is readable with a bearer, or from a browser logged in
            # to the dashboard; the API itself only with a bearer (api/access.py).
            refused = await admit(request, browsable=path in API_DOCUMENTS)
            if refused is not None:
                return refused
        response: Response = await call_next(request)
        response.headers["X-Ondeck-Store"] = settings.store_id
        return response

    # Added last, so it runs first: an oversized body is refused before the token check.
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)

    from ondeck.entrypoints.api import health

    app.include_router(health.router, prefix="/api/v1")
    from ondeck.entrypoints.api import (
        context,
        events,
        exchange,
        memory,
        rules,
        schedules,
        sessions,
        tasks,
    )

    for area in (rules, tasks, events, schedules, context, sessions, memory, exchange):
        app.include_router(area.router, prefix="/api/v1")

    from starlette.routing import Route

    # An ASGI endpoint (not a function): Starlette hands it the request's scope as it is.
    app.router.routes.append(Route(PATH, mcp, methods=["GET", "POST", "DELETE"]))

    # The dashboard (HTML pages, /static, /calendar.ics): its own login cookie and CSRF;
    # the bearer check above stays the API's and MCP's alone.
    from ondeck.entrypoints import web

    web.install(app, settings)
    return app


@asynccontextmanager
async def _jobs_running(store: Store, run_jobs: bool) -> AsyncIterator[None]:
    """The jobs loop in a thread of this process while the app runs (`serve`, `up`)."""
    if not run_jobs:
        yield
        return
    from ondeck.entrypoints.jobs import Jobs

    jobs = Jobs(engine=store.engine, settings=store.settings)
    thread = threading.Thread(target=jobs.run, name="ondeck-jobs", daemon=True)
    store.jobs = jobs  # every Call of this app wakes it after a "now" commits
    thread.start()
    try:
        yield
    finally:
        store.jobs = None
        jobs.stop()
        thread.join(timeout=30)


# FastAPI's description of the API and its two browsable renderings.
API_DOCUMENTS = frozenset({"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})
