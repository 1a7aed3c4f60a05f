"""The FastAPI application factory."""

from __future__ import annotations

import hmac
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from sqlalchemy import Engine
from starlette.responses import Response

from ondeck import __version__
from ondeck.core.config import Settings
from ondeck.entrypoints.api import errors
from ondeck.entrypoints.api.body_limit import BodyLimit
from ondeck.entrypoints.api.deps import Store

log = logging.getLogger("ondeck.api")

MAX_BODY_BYTES = 1024 * 1024


def create_app(settings: Settings, engine: Engine, *, run_jobs: bool = False) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        thread = None
        if run_jobs:
            from ondeck.entrypoints.jobs import Jobs

            jobs = Jobs(engine=engine, settings=settings)
            app.state.jobs = jobs
            thread = threading.Thread(target=jobs.run, name="ondeck-jobs", daemon=True)
            thread.start()
        yield
        if thread is not None:
            app.state.jobs.stop()
            thread.join(timeout=30)

    app = FastAPI(
        title="ondeck",
        version=__version__,
        description="What is on deck today: backlog, schedules, leases, session context.",
        lifespan=lifespan,
    )
    app.state.store = Store(settings=settings, engine=engine)
    app.state.jobs = None
    errors.install(app)

    @app.middleware("http")
    async def guard(request: Request, call_next):  # type: ignore[no-untyped-def]
        token = settings.token_value
        path = request.url.path
        if token and (path.startswith("/api/") or path in API_DOCUMENTS):
            given = request.headers.get("authorization", "")
            scheme, _, value = given.partition(" ")
            bearer = scheme.lower() == "bearer" and hmac.compare_digest(
                value.strip().encode(), token.encode()
            )
            # The API's description is readable with the bearer, or from a browser logged
            # in to the dashboard; the API itself only with the bearer.
            if not bearer and not (path in API_DOCUMENTS and _logged_in(request)):
                return errors.error_response(401, "unauthorized", "missing or wrong bearer token")
        response: Response = await call_next(request)
        response.headers["X-Ondeck-Store"] = settings.store_id
        return response

    # Added last, so it runs first: an oversized body is refused before the token check.
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)

    from ondeck.entrypoints.api import health

    app.include_router(health.router, prefix="/api/v1")
    for router in _optional_routers():
        app.include_router(router, prefix="/api/v1")

    # The dashboard (HTML pages, /static, /calendar.ics): its own login cookie and CSRF;
    # the bearer check above stays the API's alone.
    from ondeck.entrypoints import web

    web.install(app, settings)
    return app


# FastAPI's description of the API and its two browsable renderings.
API_DOCUMENTS = frozenset({"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})


def _logged_in(request: Request) -> bool:
    from ondeck.entrypoints.web.auth import guard_of

    return guard_of(request).has_session(request)


def _optional_routers() -> list:  # type: ignore[type-arg]
    """Routers of the areas that have landed; each module exposes `router`."""
    import importlib

    found = []
    for name in ("rules", "tasks", "events", "schedules", "context", "sessions", "memory"):
        try:
            module = importlib.import_module(f"ondeck.entrypoints.api.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ondeck.entrypoints.api.{name}":
                raise
            continue
        found.append(module.router)
    return found
