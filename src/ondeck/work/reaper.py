"""Releasing stale leases: the jobs tick's second step.

A RUNNING task whose lease ended more than the grace period ago (`ONDECK_LEASE_GRACE`,
default 6 h) has a silent holder: it goes back to READY with owner and end cleared, and an
event names the former owner. Its token stays, so that holder, if it wakes up, is refused
with "lease lost" (the next claim's token is greater).

The release is a compare-and-set: the UPDATE re-checks status, lease end and token as they
were read, so a lease renewed or a task completed between the read and the write is never
touched (River's rescuer once overwrote jobs that had finished in that window).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, select, update

from ondeck.core import logs
from ondeck.core.clock import aware
from ondeck.core.durations import format_duration
from ondeck.core.models import TaskStatus
from ondeck.db.tables import tasks
from ondeck.host.settings import Settings
from ondeck.system import events

log = logs.logger("ondeck.reaper")


@dataclass(frozen=True, kw_only=True, slots=True)
class Reaped:
    task_id: int
    owner: str
    lease_until: datetime
    lease_token: int


def reap_stale_leases(
    conn: Connection, now: datetime, grace: timedelta, *, actor: str = "jobs"
) -> list[Reaped]:
    """Every lease that ended more than `grace` before `now` goes back to READY."""
    cutoff = aware(now) - grace
    # Reads the partial index ix_tasks_running. SKIP LOCKED: a task that a holder is
    # completing or renewing right now is left alone (and is re-checked below anyway).
    candidates = conn.execute(
        select(tasks.c.id, tasks.c.lease_owner, tasks.c.lease_until, tasks.c.lease_token)
        .where(tasks.c.status == TaskStatus.RUNNING.value, tasks.c.lease_until < cutoff)
        .order_by(tasks.c.id)
        .with_for_update(skip_locked=True)
    ).all()
    reaped: list[Reaped] = []
    for task_id, owner, lease_until, token in candidates:
        released = conn.execute(
            update(tasks)
            .where(
                tasks.c.id == task_id,
                tasks.c.status == TaskStatus.RUNNING.value,
                tasks.c.lease_token == token,
                tasks.c.lease_until == lease_until,
                tasks.c.lease_until < cutoff,
            )
            .values(
                status=TaskStatus.READY.value,
                lease_owner=None,
                lease_until=None,
                updated_at=aware(now),
            )
            .returning(tasks.c.id)
        ).first()
        if released is None:
            continue  # renewed, completed or released since the read: not stale any more
        item = Reaped(task_id=task_id, owner=owner, lease_until=lease_until, lease_token=token)
        events.record(
            conn,
            now,
            actor=actor,
            kind="task.reaped",
            subject=f"task:{task_id}",
            details={
                "owner": owner,
                "lease_until": aware(lease_until).isoformat(),
                "lease_token": token,
                "grace": format_duration(grace),
            },
        )
        reaped.append(item)
    return reaped


def reap_step(engine: Engine, now: datetime, settings: Settings) -> dict[str, Any]:
    """The jobs tick's reap step: one transaction, a summary of what was released."""
    with engine.begin() as conn:
        reaped = reap_stale_leases(conn, now, settings.lease_grace)
    ids = [r.task_id for r in reaped]
    if ids:
        log.info("released %d stale leases: ids %s", len(ids), ids)
    # The summary lands in the heartbeat row: keep it small however many were released.
    return {"released": len(ids), "ids": ids[:50]}
