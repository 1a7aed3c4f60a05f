"""The FastAPI application factory."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from sqlalchemy import Engine
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ondeck import __version__
from ondeck.core import logs
from ondeck.core.http_limits import MAX_BODY_BYTES
from ondeck.entrypoints.api import body_limit, errors
from ondeck.entrypoints.api.access import admit, admit_channel
from ondeck.entrypoints.api.body_limit import BodyLimit
from ondeck.entrypoints.api.boundary import Boundary
from ondeck.entrypoints.gateway import Store
from ondeck.host.channel import channel_peer
from ondeck.host.settings import Settings

log = logs.logger("ondeck.api")


def create_app(settings: Settings, engine: Engine, *, run_jobs: bool = False) -> FastAPI:
    from ondeck.entrypoints.mcp.http import PATH, McpOverHttp

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
        # FastAPI's /docs and /redoc load their scripts from a CDN, unpinned: no page of
        # ondeck runs a third party's code. The document itself is /openapi.json, for any
        # OpenAPI viewer.
        docs_url=None,
        redoc_url=None,
    )
    app.state.store = store
    errors.install(app)

    # Added first, so it runs after the body limit below.
    app.add_middleware(Guard, settings=settings, store=store)
    # A foreign Host or a cross-origin write is refused before routing (api/boundary.py).
    app.add_middleware(Boundary, public_hosts=settings.public_hosts)
    # Added last, so it runs first: an oversized body is refused before anything else looks
    # at it (a declared length at once; a streamed body is held to the limit).
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

    describe_app = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = body_limit.describe(describe_app(), MAX_BODY_BYTES)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    # The dashboard (HTML pages, /static, /calendar.ics): its own login cookie and CSRF;
    # the bearer check above stays the API's and MCP's alone.
    from ondeck.entrypoints import web

    web.install(app, settings)
    return app


class Guard:
    """The bearer check of the API and of MCP, and the store's fingerprint on every answer
    (the hooks check it: the server they ask must serve their database).

    A plain ASGI middleware, not `@app.middleware("http")`: that one runs each request in a
    task group with memory streams, which a session hook waits for at every turn."""

    def __init__(self, app: ASGIApp, *, settings: Settings, store: Store) -> None:
        from ondeck.entrypoints.mcp.http import PATH

        self.app = app
        self.settings = settings
        self.store = store
        self.mcp_path = PATH

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = self.settings.token_value
        path = scope["path"]
        refused = None
        if channel_peer(scope) is not None:
            # The owner socket: who connected is the kernel's word, not a token's, and it is
            # asked on every path (api/access.admit_channel).
            gated = path == self.mcp_path or path.startswith("/api/") or path in API_DOCUMENTS
            surface = ("mcp" if path == self.mcp_path else "api") if gated else None
            refused = admit_channel(Request(scope, receive), surface=surface)
        elif token and path == self.mcp_path:
            # Every MCP request, each call of a session already open too (entrypoints/mcp/http.py).
            refused = await admit(Request(scope, receive), browsable=False, surface="mcp")
        elif token and (path.startswith("/api/") or path in API_DOCUMENTS):
            # The API's description is readable with a bearer, or from a browser logged in
            # to the dashboard; the API itself only with a bearer (api/access.py).
            refused = await admit(Request(scope, receive), browsable=path in API_DOCUMENTS)
        store_id = await self._store_id()

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start" and store_id is not None:
                MutableHeaders(scope=message)["X-Ondeck-Store"] = store_id
            await send(message)

        if refused is not None:
            await refused(scope, receive, send)  # unstamped: the caller proved nothing
            return
        await self.app(scope, receive, stamped)

    async def _store_id(self) -> str | None:
        """The database's random id (read once, in a thread: it may have to be made); None
        while the database cannot say (an answer then claims no store)."""
        known = self.store.known_store_id
        if known is not None:
            return known
        import anyio

        try:
            return await anyio.to_thread.run_sync(self.store.store_id)
        except Exception:  # the database is away: the route itself will say so
            return None


@asynccontextmanager
async def _jobs_running(store: Store, run_jobs: bool) -> AsyncIterator[None]:
    """The jobs loop in a thread of this process while the app runs (`serve`, `up`)."""
    if not run_jobs:
        yield
        return
    from ondeck.entrypoints.jobs.loop import Jobs

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


# FastAPI's description of the API (its browsable renderings are not served: see above).
API_DOCUMENTS = frozenset({"/openapi.json"})
