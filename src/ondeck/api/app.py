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
from ondeck.api import errors
from ondeck.api.body_limit import BodyLimit
from ondeck.api.deps import Store
from ondeck.config import Settings

log = logging.getLogger("ondeck.api")

MAX_BODY_BYTES = 1024 * 1024


def create_app(settings: Settings, engine: Engine, *, run_jobs: bool = False) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        thread = None
        if run_jobs:
            from ondeck.jobs import Jobs

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
        if token and request.url.path.startswith("/api/"):
            given = request.headers.get("authorization", "")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                value.strip().encode(), token.encode()
            ):
                return errors.error_response(401, "unauthorized", "missing or wrong bearer token")
        response: Response = await call_next(request)
        response.headers["X-Ondeck-Store"] = settings.store_id
        return response

    # Added last, so it runs first: an oversized body is refused before the token check.
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)

    from ondeck.api import health

    app.include_router(health.router, prefix="/api/v1")
    for router in _optional_routers():
        app.include_router(router, prefix="/api/v1")

    # The dashboard (HTML pages, /static, /calendar.ics): its own login cookie and CSRF;
    # the bearer check above stays the API's alone.
    from ondeck import web

    web.install(app, settings)
    return app


def _optional_routers() -> list:  # type: ignore[type-arg]
    """Routers of the areas that have landed; each module exposes `router`."""
    import importlib

    found = []
    for name in ("rules", "tasks", "events", "schedules", "context"):
        try:
            module = importlib.import_module(f"ondeck.api.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ondeck.api.{name}":
                raise
            continue
        found.append(module.router)
    return found
