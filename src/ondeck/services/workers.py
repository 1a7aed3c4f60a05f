"""Jobs heartbeats: one `workers` row per jobs process, updated at the end of every tick.

The heartbeat is what lets the context and the dashboard say "the scheduler is not
running" instead of silently showing a schedule that never fires.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select, update

from ondeck.db.dialect import insert_for
from ondeck.db.tables import workers


@dataclass(frozen=True, kw_only=True, slots=True)
class Worker:
    name: str
    started_at: datetime
    last_tick_at: datetime | None
    tick_ms: float | None
    ticks: int
    summary: dict[str, Any] | None
    stopped_at: datetime | None


def worker_name() -> str:
    return f"jobs@{socket.gethostname()}:{os.getpid()}"


def beat(
    conn: Connection,
    now: datetime,
    *,
    name: str,
    started_at: datetime,
    tick_ms: float,
    summary: dict[str, Any],
) -> None:
    stmt = insert_for(conn, workers).values(
        name=name,
        started_at=started_at,
        last_tick_at=now,
        tick_ms=tick_ms,
        ticks=1,
        summary=summary,
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[workers.c.name],
        set_={
            "last_tick_at": now,
            "tick_ms": tick_ms,
            "summary": summary,
            "ticks": workers.c.ticks + 1,
            "stopped_at": None,
        },
    )
    conn.execute(stmt)


def stopped(conn: Connection, now: datetime, name: str) -> None:
    conn.execute(update(workers).where(workers.c.name == name).values(stopped_at=now))


def last_tick_at(conn: Connection) -> datetime | None:
    """The most recent tick of any jobs process."""
    return conn.execute(select(func.max(workers.c.last_tick_at))).scalar()


def list_workers(conn: Connection, limit: int = 20) -> list[Worker]:
    query = (
        select(workers)
        .order_by(workers.c.last_tick_at.desc().nulls_last(), workers.c.name)
        .limit(limit)
    )
    return [Worker(**row._mapping) for row in conn.execute(query)]
