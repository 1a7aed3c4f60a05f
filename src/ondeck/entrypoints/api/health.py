"""GET /api/v1/health: is the database reachable, is the jobs loop ticking."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlalchemy import text

from ondeck.db.migrate import revision_of
from ondeck.entrypoints.api.deps import StoreDep
from ondeck.entrypoints.api.models import SideRule, sided
from ondeck.system import heartbeat

router = APIRouter()


@router.get("/health", openapi_extra=sided(SideRule.NONE))
def health(store: StoreDep) -> dict[str, Any]:
    now = store.now()
    zone = store.settings.zone
    with store.read() as conn:
        conn.execute(text("SELECT 1"))
        jobs = heartbeat.jobs_health(conn, now, tick_seconds=store.settings.tick_seconds)
        revision = revision_of(conn)
    # The latest heartbeat at or before now: one from the future (a clock ahead) is no sign
    # of life; `jobs.ahead_tick_at` names it.
    last = jobs.last_tick
    age = round((now - last).total_seconds(), 1) if last else None
    return {
        "database": "ok",
        "database_kind": store.engine.dialect.name,
        "schema_version": revision,
        "jobs_last_tick_at": last.astimezone(zone).isoformat() if last else None,
        "jobs_heartbeat_age_seconds": age,
        "jobs_ticking": jobs.alive,
        "jobs": jobs.to_json(zone),
        "timezone": store.settings.tz,
        "now": now.astimezone(zone).isoformat(),
    }
