"""Backup runs: the `backups` rows, from start to outcome, and the default schedule.

A run is a row: `running` while it works, then `ok` (file, bytes), `failed` (error), or
`abandoned` (it stopped before it ended; see `backup_liveness`).

    start    one short transaction: the row, `running`, with its runner's name
             (`jobs@host:pid`, the jobs heartbeat's name, or `cli@host:pid`)
    write    `backup_copies` writes and verifies the copy; `backup_files` publishes it
             under its name and prunes old files (what it could not delete is a warning
             on a good run, never a failure)
    finish   one transaction: the outcome and its event and, for a scheduled run that
             succeeded, the schedule's fire, recorded by firing (`firing.record_fire`)

The jobs loop starts a run in its tick (`claim_due`) and writes it in a thread of its own
(`complete`), so a backup that takes hours holds back neither firing nor the heartbeat;
the row is the guard against a second run of the same schedule. `ondeck backup` does both
in one go (`run_backup`).

The `backup` schedule (created on first start, rule `daily`) is due like any other, but its
fire is recorded only after the backup succeeded. A failure leaves `next_due` where it was
and is retried at most once an hour, never hidden.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, desc, insert, select, text, update

from ondeck.backups import copies as backup_copies
from ondeck.backups import files as backup_files
from ondeck.backups.copies import BackupFailed, Cancelled
from ondeck.core import logs
from ondeck.core.clock import aware, today
from ondeck.core.errors import InvalidInput
from ondeck.core.models import Backup, BackupStatus
from ondeck.db.dialect import is_postgres
from ondeck.db.tables import SCHEDULES_LIVE, backups, schedules
from ondeck.host.settings import Settings
from ondeck.system import events

log = logs.logger("ondeck.backups")

RETRY_AFTER = timedelta(hours=1)
DEFAULT_BACKUP_TITLE = "Back up the database"
_PG_DEFAULTS_LOCK = 0x0DEC_0002


@dataclass(frozen=True, kw_only=True, slots=True)
class Claim:
    """A run started for a due backup schedule, to be written by `complete`."""

    backup_id: int
    schedule_id: int | None
    started_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class Ran:
    """A run's outcome, and what went wrong around a good backup (old files not pruned)."""

    backup: Backup
    warnings: list[str] = field(default_factory=list)


def list_backups(conn: Connection, *, limit: int = 20) -> list[Backup]:
    query = select(backups).order_by(desc(backups.c.id)).limit(max(1, min(limit, 500)))
    return [Backup.from_values(row._mapping) for row in conn.execute(query)]


def get_backup(conn: Connection, backup_id: int) -> Backup:
    row = conn.execute(select(backups).where(backups.c.id == backup_id)).one()
    return Backup.from_values(row._mapping)


def runner_name(kind: str = "cli") -> str:
    """`cli@host:pid`: a run's runner when no jobs process (with a heartbeat) runs it."""
    return f"{kind}@{socket.gethostname()}:{os.getpid()}"


# --- the default schedule -------------------------------------------------------------


def ensure_default_schedules(conn: Connection, now: datetime, zone: tzinfo) -> bool:
    """Create the daily backup schedule once per database; True if it was created now.

    Any backup schedule that ever existed (removed or edited) counts: the user's choice
    stands, and a second jobs process starting at the same moment does not add another.
    """
    from ondeck.work.schedules import create_schedule

    if is_postgres(conn):
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_DEFAULTS_LOCK})
    exists = conn.execute(select(schedules.c.id).where(schedules.c.kind == "backup").limit(1))
    if exists.first() is not None:
        return False
    create_schedule(
        conn,
        now,
        zone,
        title=DEFAULT_BACKUP_TITLE,
        rule="daily",
        kind="backup",
        body="ondeck backs up its own database; edit the rule or pause it like any schedule.",
        actor="jobs",
    )
    return True


# --- starting and finishing -----------------------------------------------------------


def _start(conn: Connection, now: datetime, *, runner: str, schedule_id: int | None) -> Claim:
    backup_id = conn.execute(
        insert(backups)
        .values(
            started_at=aware(now),
            status=BackupStatus.RUNNING,
            worker=runner,
            schedule_id=schedule_id,
        )
        .returning(backups.c.id)
    ).scalar_one()
    return Claim(backup_id=int(backup_id), schedule_id=schedule_id, started_at=aware(now))


def claim_due(engine: Engine, now: datetime, zone: tzinfo, *, runner: str) -> list[Claim]:
    """Start a run for every due backup schedule that has none going; the runs started.

    Each claim is one short transaction (the schedule row locked on PostgreSQL, the write
    lock on SQLite), so two jobs processes never back up the same schedule at once.
    """
    day = today(now, zone)
    with engine.connect().execution_options(readonly=True) as conn, conn.begin():
        due = list(
            conn.execute(
                select(schedules.c.id)
                .where(SCHEDULES_LIVE, schedules.c.next_due <= day, schedules.c.kind == "backup")
                .order_by(schedules.c.id)
            ).scalars()
        )
    claims = []
    for schedule_id in due:
        claim = _claim(engine, now, day, schedule_id, runner)
        if claim is not None:
            claims.append(claim)
    return claims


def _claim(engine: Engine, now: datetime, day: date, schedule_id: int, runner: str) -> Claim | None:
    """Start a run unless one is running, or one failed within the hour."""
    with engine.begin() as conn:
        query = select(schedules.c.next_due).where(
            schedules.c.id == schedule_id, SCHEDULES_LIVE, schedules.c.next_due <= day
        )
        if is_postgres(conn):
            query = query.with_for_update(skip_locked=True)
        if conn.execute(query).first() is None:
            return None  # advanced, paused or removed meanwhile, or another process has it
        last = conn.execute(
            select(backups.c.status, backups.c.started_at)
            .where(backups.c.schedule_id == schedule_id)
            .order_by(desc(backups.c.id))
            .limit(1)
        ).first()
        if last is not None:
            if last.status == BackupStatus.RUNNING:
                return None
            if (
                last.status in (BackupStatus.FAILED, BackupStatus.ABANDONED)
                and last.started_at > aware(now) - RETRY_AFTER
            ):
                return None
        return _start(conn, now, runner=runner, schedule_id=schedule_id)


def _finish(
    conn: Connection,
    finished: datetime,
    claim: Claim,
    *,
    actor: str,
    status: str,
    file: Path | None = None,
    size: int | None = None,
    error: str | None = None,
    warnings: list[str] | None = None,
    pruned: list[str] | None = None,
) -> bool:
    """Record the outcome. A run another process took for dead (`abandoned`) that did end
    gets its real outcome: that was a guess, this is what happened."""
    was = conn.execute(select(backups.c.status).where(backups.c.id == claim.backup_id)).scalar()
    changed = conn.execute(
        update(backups)
        .where(
            backups.c.id == claim.backup_id,
            backups.c.status.in_((BackupStatus.RUNNING.value, BackupStatus.ABANDONED.value)),
        )
        .values(
            finished_at=finished,
            status=status,
            file=str(file) if file else None,
            bytes=size,
            error=error,
        )
    ).rowcount
    if not changed:
        return False  # not a run of this database any more (it was restored meanwhile)
    details: dict[str, Any] = {"file": str(file), "bytes": size} if file else {"error": error}
    if pruned:
        details["pruned"] = pruned  # their runs' rows still name them: this says where they went
    if warnings:
        details["warnings"] = warnings
    if was == BackupStatus.ABANDONED:
        details["was"] = "abandoned"
    kinds = {
        BackupStatus.OK: "backup.done",
        BackupStatus.FAILED: "backup.failed",
        BackupStatus.ABANDONED: "backup.abandoned",
    }
    events.record(
        conn,
        finished,
        actor=actor,
        kind=kinds[BackupStatus(status)],
        subject=f"backup:{claim.backup_id}",
        details=details,
    )
    return True


def complete(
    engine: Engine,
    settings: Settings,
    claim: Claim,
    *,
    actor: str = "jobs",
    stop: threading.Event | None = None,
) -> Ran:
    """Write the backup of a started run and record how it ended; never raises for a
    failed backup. `stop` set: the copy is abandoned, and so recorded."""
    began = time.perf_counter()
    warnings: list[str] = []
    pruned: list[str] = []
    file: Path | None = None
    size: int | None = None
    error: str | None = None
    status = BackupStatus.OK
    try:
        written = write_backup(engine, settings, claim.started_at, stop=stop)
        file, size, pruned, warnings = written.file, written.size, written.pruned, written.warnings
    except Cancelled as exc:
        status, error = BackupStatus.ABANDONED, f"{exc}: the process running it was stopping"
    except BackupFailed as exc:
        status, error = BackupStatus.FAILED, str(exc)
    except Exception as exc:  # recorded, never hidden: the run must not stay "running"
        log.exception("backup %s failed", claim.backup_id)
        status, error = BackupStatus.FAILED, f"{type(exc).__name__}: {exc}"[:2000]
    # The backup took real time: the record says when it ended, on the caller's clock.
    finished = claim.started_at + timedelta(seconds=time.perf_counter() - began)
    with engine.begin() as conn:
        recorded = _finish(
            conn,
            finished,
            claim,
            actor=actor,
            status=status,
            file=file,
            size=size,
            error=error,
            warnings=warnings,
            pruned=pruned,
        )
        if recorded and status == BackupStatus.OK and claim.schedule_id is not None:
            from ondeck.work.firing import record_fire

            day = today(claim.started_at, settings.zone)
            record_fire(conn, day, finished, claim.schedule_id, actor=actor)
        row = conn.execute(select(backups).where(backups.c.id == claim.backup_id)).first()
    backup = (
        Backup.from_values(row._mapping)
        if row is not None and recorded
        else Backup(
            id=claim.backup_id,
            started_at=claim.started_at,
            finished_at=finished,
            status=status,
            worker=None,
            file=str(file) if file else None,
            bytes=size,
            error=error,
            schedule_id=claim.schedule_id,
        )
    )
    if status != BackupStatus.OK:
        log.error("backup %s %s: %s", claim.backup_id, status, error)
    else:
        log.info("backup %s written: %s (%d bytes)", claim.backup_id, file, size or 0)
    for warning in warnings:
        log.warning("backup %s: %s", claim.backup_id, warning)
    return Ran(backup=backup, warnings=warnings)


def run_backup(
    engine: Engine,
    settings: Settings,
    now: datetime,
    *,
    actor: str = "cli",
    runner: str | None = None,
) -> Ran:
    """One unscheduled backup (`ondeck backup`), recorded from start to end."""
    with engine.begin() as conn:
        claim = _start(conn, now, runner=runner or runner_name("cli"), schedule_id=None)
    return complete(engine, settings, claim, actor=actor)


# --- writing --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Written:
    file: Path
    size: int
    pruned: list[str]  # the old files deleted to make room
    warnings: list[str]  # what could not be tidied, one line each


def write_backup(
    engine: Engine, settings: Settings, now: datetime, *, stop: threading.Event | None = None
) -> Written:
    """Write, verify and publish one backup file, then prune old ones.

    Raises `BackupFailed` with one line saying what went wrong with the backup itself;
    what goes wrong after it is written is a warning.
    """
    folder = settings.backups_path
    try:
        backup_files.private_folder(folder)
    except OSError as exc:
        raise BackupFailed(f"cannot create the backup directory {folder}: {exc.strerror}") from None
    ext = "dump" if engine.dialect.name == "postgresql" else "db"
    temp = backup_files.temp_path(folder, now)
    try:
        backup_copies.write_copy(engine, temp, stop=stop)
        backup_files.fsync(temp)
        final = backup_files.publish(temp, folder, f"ondeck-{backup_files.stamp(now)}", ext)
    except OSError as exc:
        raise BackupFailed(f"cannot write the backup in {folder}: {exc.strerror or exc}") from None
    except InvalidInput as exc:
        raise BackupFailed(f"the new backup failed verification: {exc}") from None
    finally:
        backup_files.discard(temp)
    size = final.stat().st_size
    pruned, warnings = tidy(engine, settings, now, keep=final)
    return Written(file=final, size=size, pruned=pruned, warnings=warnings)


def tidy(
    engine: Engine, settings: Settings, now: datetime, *, keep: Path
) -> tuple[list[str], list[str]]:
    """Prune old files beyond ONDECK_BACKUP_KEEP (never `keep`), remove runs' leftovers;
    the names of the files pruned, and what could not be deleted, one line each."""
    folder = settings.backups_path
    warnings: list[str] = []
    try:
        with engine.connect().execution_options(readonly=True) as conn, conn.begin():
            recorded = _recorded_times(conn)
    except Exception as exc:  # the backup is written: tidying must not undo that
        recorded = {}
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        warnings.append(
            f"could not read the runs' times ({reason[0] if reason else type(exc).__name__}): "
            "old backups ordered by the times in their names"
        )
    try:
        pruned = backup_files.prune(folder, settings.backup_keep, recorded=recorded, protect=keep)
        leftovers = backup_files.remove_stale_temps(
            folder, now, backup_copies.MAX_RUN.total_seconds()
        )
    except OSError as exc:  # the directory itself cannot be listed any more
        return [], [*warnings, f"could not prune old backups in {folder}: {exc.strerror or exc}"]
    return [p.name for p in pruned.deleted], warnings + pruned.failed + leftovers.failed


def _recorded_times(conn: Connection) -> dict[str, datetime]:
    """Each backup file's name and the time its run recorded (the oldest run of a name)."""
    rows = conn.execute(
        select(backups.c.file, backups.c.started_at)
        .where(backups.c.status == BackupStatus.OK, backups.c.file.is_not(None))
        .order_by(desc(backups.c.id))
    )
    return {Path(row.file).name: aware(row.started_at) for row in rows}
