"""Backup runs whose runner went away: `running` rows that nothing is working on any more.

A run is judged by the one idea of "alive" ondeck has, the jobs heartbeat (`workers`):

    runner is the process asking     alive while that process is working on it (it knows
                                     its own runs: a restarted container often reuses the
                                     pid, so a run under its name may be a predecessor's)
    runner is a jobs process         alive while its heartbeat is fresh and it has not
                                     stopped; with no heartbeat row yet (it claims before
                                     its first beat), for as long as a heartbeat may be due
    anything else (`ondeck backup`)  no heartbeat: alive until older than the longest a
                                     run can take (`backup_copies.MAX_RUN`)

A dead run is marked `abandoned` with the reason, and an event; the maintain step of every
jobs tick does it, once per tick.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, select, update

from ondeck.backups.copies import MAX_RUN
from ondeck.core import logs
from ondeck.core.clock import aware
from ondeck.core.humanize import counted, span
from ondeck.core.models import BackupStatus
from ondeck.db.tables import backups, workers
from ondeck.host.settings import Settings
from ondeck.system import events

log = logs.logger("ondeck.backups")

# A runner's heartbeat silent for this many of our intervals (and at least SILENT_FLOOR)
# means its process is gone. More generous than the context's warning (3 ticks): this one
# acts, and a tick that fired 10,000 schedules on a busy machine may take a while.
SILENT_TICKS = 10
SILENT_FLOOR = timedelta(minutes=2)


def silent_after(tick_seconds: float) -> timedelta:
    return max(timedelta(seconds=SILENT_TICKS * tick_seconds), SILENT_FLOOR)


def verdict(
    run: Any, worker: Any, now: datetime, *, me: str, mine: Collection[int], silence: timedelta
) -> str | None:
    """Why `run` (a `running` row) is dead, or None while it may still be going.

    `worker` is the `workers` row of its runner, if any; `me` the asking process's name and
    `mine` the runs it is working on.
    """
    runner = run.worker or "unknown"
    started = aware(run.started_at)
    if runner == me:
        if run.id in mine:
            return None
        return (
            f"{runner} is not running it: that process was restarted under the same name, "
            "or could not record how the run ended"
        )
    if runner.startswith("jobs@"):
        if worker is None:
            if started >= now - silence:
                return None  # its first heartbeat is written at the end of its tick
            return f"its jobs process ({runner}) never wrote a heartbeat"
        if worker.stopped_at is not None and aware(worker.stopped_at) >= started:
            return f"its jobs process ({runner}) stopped at {aware(worker.stopped_at).isoformat()}"
        last = aware(worker.last_tick_at or worker.started_at)
        if last >= now - silence:
            return None
        return f"its jobs process ({runner}) has not ticked since {last.isoformat()}"
    if started >= now - MAX_RUN:
        return None
    return (
        f"started {span(now - started)} ago by {runner}, "
        f"longer than any run may take ({span(MAX_RUN)})"
    )


def mark_abandoned(
    engine: Engine,
    now: datetime,
    settings: Settings,
    *,
    me: str = "",
    mine: Collection[int] = (),
    actor: str = "jobs",
) -> int:
    """Mark `running` runs whose runner is gone as `abandoned`; returns how many."""
    now = aware(now)
    with engine.connect().execution_options(readonly=True) as conn, conn.begin():
        running = list(
            conn.execute(select(backups).where(backups.c.status == BackupStatus.RUNNING))
        )
        names = {r.worker for r in running if r.worker}
        beats = {w.name: w for w in conn.execute(select(workers).where(workers.c.name.in_(names)))}
    silence = silent_after(settings.tick_seconds)
    dead = []
    for run in running:
        why = verdict(run, beats.get(run.worker), now, me=me, mine=mine, silence=silence)
        if why is not None:
            dead.append((run, why))
    if not dead:
        return 0
    count = 0
    with engine.begin() as conn:
        for run, why in dead:
            error = f"stopped before it ended: {why}"
            if abandon(conn, now, run.id, run.worker, error, actor=actor):
                count += 1
    if count:
        log.warning("marked %s abandoned", counted(count, "backup run"))
    return count


def abandon(
    conn: Connection, now: datetime, run_id: int, worker: str | None, error: str, *, actor: str
) -> bool:
    """Mark a `running` run `abandoned` with why, and its event; False if it was no longer
    running (it ended meanwhile: its own outcome stands)."""
    changed = conn.execute(
        update(backups)
        .where(backups.c.id == run_id, backups.c.status == BackupStatus.RUNNING)
        .values(status=BackupStatus.ABANDONED, finished_at=aware(now), error=error)
    ).rowcount
    if changed:
        events.record(
            conn,
            now,
            actor=actor,
            kind="backup.abandoned",
            subject=f"backup:{run_id}",
            details={"worker": worker, "error": error},
        )
    return bool(changed)
