"""GET /api/v1/health: is the database reachable, is the jobs loop ticking."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlalchemy import text

from ondeck.db.migrate import revision_of
from ondeck.entrypoints.api.deps import StoreDep
from ondeck.services import workers

router = APIRouter()


@router.get("/health")
def health(store: StoreDep) -> dict[str, Any]:
    now = store.now()
    with store.read() as conn:
        conn.execute(text("SELECT 1"))
        last = workers.last_tick_at(conn)
        revision = revision_of(conn)
    age = round((now - last).total_seconds(), 1) if last else None
    return {
        "database": "ok",
        "database_kind": store.engine.dialect.name,
        "schema_version": revision,
        "jobs_last_tick_at": last.astimezone(store.settings.zone).isoformat() if last else None,
        "jobs_heartbeat_age_seconds": age,
        "jobs_ticking": age is not None and age <= 3 * store.settings.tick_seconds,
        "timezone": store.settings.tz,
        "now": now.astimezone(store.settings.zone).isoformat(),
    }
