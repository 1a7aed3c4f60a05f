"""Backups and restore, run by the server itself, and the runs that died half-way.

A run is a `backups` row: `running` while it works, then `ok` (file, bytes) or `failed`
(error); a run whose process died is marked `abandoned` by the next tick instead of
staying "running" forever. The file is written under a temporary name, verified (SQLite
`PRAGMA integrity_check`, PostgreSQL `pg_restore --list`), then renamed to
`ondeck-YYYYMMDD-HHMMSS.<db|dump>` (UTC, so names sort in time order across DST changes);
files beyond `ONDECK_BACKUP_KEEP` are deleted, oldest first.

The `backup` schedule (created on first start, rule `daily`) is due like any other, but its
fire is recorded only after the backup succeeded. A failure leaves `next_due` where it was
and is retried at most once an hour, never hidden.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, desc, insert, select, text, update
from sqlalchemy.engine import make_url

from ondeck.core.clock import aware, iso, today
from ondeck.core.config import Settings
from ondeck.core.errors import InvalidInput, OndeckError
from ondeck.db.dialect import insert_for, is_postgres
from ondeck.db.tables import SCHEDULES_LIVE, backups, fires, schedules
from ondeck.services import events, workers

log = logging.getLogger("ondeck.maintenance")

RETRY_AFTER = timedelta(hours=1)
# A run older than this, whose process cannot be checked, is taken for dead.
ABANDON_AFTER = timedelta(hours=1)
DUMP_TIMEOUT_S = 6 * 3600
VERIFY_TIMEOUT_S = 600
FILE_PATTERN = re.compile(r"^ondeck-\d{8}-\d{6}(-\d+)?\.(db|dump)$")
# A run's temporary file (and SQLite's companions of it), named in `write_backup`.
TEMP_PATTERN = re.compile(r"^\.ondeck-\d{8}-\d{6}-\d+-\d+\.tmp(-journal|-wal|-shm)?$")
# A live run writes its file within DUMP_TIMEOUT_S and verifies it within VERIFY_TIMEOUT_S:
# one untouched for longer was left by a process that died (kill -9, power loss).
STALE_TEMP_AFTER_S = DUMP_TIMEOUT_S + VERIFY_TIMEOUT_S
DEFAULT_BACKUP_TITLE = "Back up the database"
_PG_DEFAULTS_LOCK = 0x0DEC_0002

# Backup runs this process is working on right now: how a run of ours is told from a run
# of an earlier process that had the same name (a restarted container often reuses pids).
_active: set[int] = set()
_active_lock = threading.Lock()
_defaults_done: set[str] = set()


class BackupFailed(OndeckError):
    """The backup did not complete."""

    code = "backup_failed"


@dataclass(frozen=True, kw_only=True, slots=True)
class Backup:
    id: int
    started_at: datetime
    finished_at: datetime | None
    status: str
    worker: str | None
    file: str | None
    bytes: int | None
    error: str | None
    schedule_id: int | None

    def to_json(self, zone: tzinfo) -> dict[str, Any]:
        data = asdict(self)
        data["started_at"] = iso(self.started_at, zone)
        data["finished_at"] = iso(self.finished_at, zone)
        return data


def list_backups(conn: Connection, *, limit: int = 20) -> list[Backup]:
    query = select(backups).order_by(desc(backups.c.id)).limit(max(1, min(limit, 500)))
    return [Backup(**row._mapping) for row in conn.execute(query)]


def get_backup(conn: Connection, backup_id: int) -> Backup:
    row = conn.execute(select(backups).where(backups.c.id == backup_id)).one()
    return Backup(**row._mapping)


# --- the default schedule -------------------------------------------------------------


def ensure_default_schedules(conn: Connection, now: datetime, zone: tzinfo) -> bool:
    """Create the daily backup schedule once per database; True if it was created now.

    Any backup schedule that ever existed (removed or edited) counts: the user's choice
    stands, and a second jobs process starting at the same moment does not add another.
    """
    from ondeck.services.schedules import create_schedule

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


def ensure_defaults_once(engine: Engine, now: datetime, zone: tzinfo) -> None:
    """`ensure_default_schedules` the first time this process ticks on a database."""
    key = str(engine.url)
    if key in _defaults_done:
        return
    with engine.begin() as conn:
        if ensure_default_schedules(conn, now, zone):
            log.info("created the daily backup schedule")
    _defaults_done.add(key)


# --- running a backup -----------------------------------------------------------------


def runner_name(kind: str = "jobs") -> str:
    """`jobs@host:pid` (the jobs heartbeat name) or `cli@host:pid`."""
    return workers.worker_name().replace("jobs@", f"{kind}@", 1)


def _start_run(conn: Connection, now: datetime, *, runner: str, schedule_id: int | None) -> int:
    backup_id = conn.execute(
        insert(backups)
        .values(started_at=aware(now), status="running", worker=runner, schedule_id=schedule_id)
        .returning(backups.c.id)
    ).scalar_one()
    with _active_lock:
        _active.add(int(backup_id))
    return int(backup_id)


def _finish_run(
    conn: Connection,
    finished: datetime,
    backup_id: int,
    *,
    actor: str,
    file: Path | None = None,
    size: int | None = None,
    error: str | None = None,
) -> None:
    status = "failed" if error else "ok"
    conn.execute(
        update(backups)
        .where(backups.c.id == backup_id)
        .values(
            finished_at=finished,
            status=status,
            file=str(file) if file else None,
            bytes=size,
            error=error,
        )
    )
    details: dict[str, Any] = {"file": str(file), "bytes": size} if file else {"error": error}
    events.record(
        conn,
        finished,
        actor=actor,
        kind="backup.done" if status == "ok" else "backup.failed",
        subject=f"backup:{backup_id}",
        details=details,
    )


def write_backup(engine: Engine, settings: Settings, now: datetime) -> tuple[Path, int]:
    """Write, verify and rename one backup file, then prune old ones; (path, bytes).

    Raises `BackupFailed` with one line saying what went wrong.
    """
    folder = settings.backups_path
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BackupFailed(f"cannot create the backup directory {folder}: {exc.strerror}") from None
    postgres = engine.dialect.name == "postgresql"
    stamp = aware(now).strftime("%Y%m%d-%H%M%S")
    ext = "dump" if postgres else "db"
    temp = folder / f".ondeck-{stamp}-{os.getpid()}-{threading.get_ident()}.tmp"
    try:
        if postgres:
            _dump_postgres(engine, temp)
            verify_postgres(temp)
        else:
            _copy_sqlite(engine, temp)
            verify_sqlite(temp)
        _fsync(temp)
        final = _free_name(folder, f"ondeck-{stamp}", ext)
        os.replace(temp, final)
        _fsync(folder)
    except OSError as exc:
        raise BackupFailed(f"cannot write the backup in {folder}: {exc.strerror or exc}") from None
    except InvalidInput as exc:
        raise BackupFailed(f"the new backup failed verification: {exc}") from None
    finally:
        with contextlib.suppress(OSError):
            temp.unlink()
    size = final.stat().st_size
    prune(folder, settings.backup_keep)
    remove_stale_temps(folder, now)
    return final, size


def run_backup(
    engine: Engine,
    settings: Settings,
    now: datetime,
    *,
    actor: str = "cli",
    runner: str | None = None,
    schedule_id: int | None = None,
    backup_id: int | None = None,
) -> Backup:
    """One backup run, recorded from start to end; never raises for a failed backup."""
    began = time.perf_counter()
    if backup_id is None:
        with engine.begin() as conn:
            backup_id = _start_run(
                conn, now, runner=runner or runner_name("cli"), schedule_id=schedule_id
            )
    try:
        file, size = write_backup(engine, settings, now)
        error = None
    except BackupFailed as exc:
        file, size, error = None, None, str(exc)
    except Exception as exc:  # recorded, never hidden: the run must not stay "running"
        log.exception("backup %s failed", backup_id)
        file, size, error = None, None, f"{type(exc).__name__}: {exc}"[:2000]
    # The backup took real time: the record says when it ended, on the caller's clock.
    finished = aware(now) + timedelta(seconds=time.perf_counter() - began)
    with engine.begin() as conn:
        _finish_run(conn, finished, backup_id, actor=actor, file=file, size=size, error=error)
        if error is None and schedule_id is not None:
            _record_backup_fire(conn, now, settings.zone, schedule_id, actor)
        backup = get_backup(conn, backup_id)
    with _active_lock:
        _active.discard(backup_id)
    if error:
        log.error("backup %s failed: %s", backup_id, error)
    else:
        log.info("backup %s written: %s (%d bytes)", backup_id, file, size or 0)
    return backup


def _record_backup_fire(
    conn: Connection, now: datetime, zone: tzinfo, schedule_id: int, actor: str
) -> None:
    """The fire of a backup schedule, only once its backup succeeded (guarded like any)."""
    from ondeck.services.firing import plan

    row = conn.execute(select(schedules).where(schedules.c.id == schedule_id)).first()
    if row is None or row.next_due is None:
        return
    day = today(now, zone)
    if row.next_due > day:
        return  # advanced meanwhile (edited, or another run finished first)
    p = plan(row, day)
    fire_date, skipped = p.fires[-1]
    moved = conn.execute(
        update(schedules)
        .where(schedules.c.id == schedule_id, schedules.c.next_due == row.next_due)
        .values(next_due=p.new_next, last_fired_on=fire_date, last_fired_at=aware(now))
    ).rowcount
    if moved != 1:
        return
    inserted = conn.execute(
        insert_for(conn, fires)
        .values(schedule_id=schedule_id, fire_date=fire_date, fired_at=aware(now), skipped=skipped)
        .on_conflict_do_nothing(index_elements=[fires.c.schedule_id, fires.c.fire_date])
        .returning(fires.c.id)
    ).scalar()
    if inserted is not None:
        events.record(
            conn,
            now,
            actor=actor,
            kind="schedule.fired",
            subject=f"schedule:{schedule_id}",
            details={"fire_date": fire_date.isoformat(), "skipped": skipped, "task_id": None},
        )


def run_due_backups(engine: Engine, now: datetime, settings: Settings) -> dict[str, int]:
    """Run the backup of every due backup schedule (called by the fire step).

    Claiming a run is one short transaction (the schedule row locked on PostgreSQL, the
    write lock on SQLite), so two jobs processes never back up the same schedule at once.
    """
    mark_abandoned(engine, now)
    day = today(now, settings.zone)
    with engine.connect().execution_options(readonly=True) as conn, conn.begin():
        due = list(
            conn.execute(
                select(schedules.c.id)
                .where(
                    SCHEDULES_LIVE,
                    schedules.c.next_due <= day,
                    schedules.c.kind == "backup",
                )
                .order_by(schedules.c.id)
            ).scalars()
        )
    summary = {"ok": 0, "failed": 0, "waiting": 0}
    for schedule_id in due:
        backup_id = _claim(engine, now, day, schedule_id)
        if backup_id is None:
            summary["waiting"] += 1
            continue
        result = run_backup(
            engine,
            settings,
            now,
            actor="jobs",
            runner=runner_name("jobs"),
            schedule_id=schedule_id,
            backup_id=backup_id,
        )
        summary["ok" if result.status == "ok" else "failed"] += 1
    return {k: v for k, v in summary.items() if v}


def _claim(engine: Engine, now: datetime, day: Any, schedule_id: int) -> int | None:
    """Start a run for a due backup schedule, unless one is running or failed within the hour."""
    with engine.begin() as conn:
        query = select(schedules.c.next_due, schedules.c.enabled).where(
            schedules.c.id == schedule_id, schedules.c.deleted_at.is_(None)
        )
        if is_postgres(conn):
            query = query.with_for_update(skip_locked=True)
        row = conn.execute(query).first()
        if row is None or not row.enabled or row.next_due is None or row.next_due > day:
            return None
        last = conn.execute(
            select(backups.c.status, backups.c.started_at)
            .where(backups.c.schedule_id == schedule_id)
            .order_by(desc(backups.c.id))
            .limit(1)
        ).first()
        if last is not None:
            if last.status == "running":
                return None
            if (
                last.status in ("failed", "abandoned")
                and last.started_at > aware(now) - RETRY_AFTER
            ):
                return None
        return _start_run(conn, now, runner=runner_name("jobs"), schedule_id=schedule_id)


# --- runs that died --------------------------------------------------------------------


def _runner_alive(runner: str | None, started_at: datetime, now: datetime, backup_id: int) -> bool:
    if runner is None:
        return started_at > now - ABANDON_AFTER
    match = re.fullmatch(r"[a-z]+@(?P<host>.+):(?P<pid>\d+)", runner)
    if match and match["host"] == socket.gethostname():
        pid = int(match["pid"])
        if pid == os.getpid():
            with _active_lock:
                return backup_id in _active
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
    return started_at > now - ABANDON_AFTER


def mark_abandoned(engine: Engine, now: datetime) -> int:
    """Mark `running` runs whose process is gone as `abandoned`; returns how many."""
    now = aware(now)
    with engine.connect().execution_options(readonly=True) as conn, conn.begin():
        running = list(conn.execute(select(backups).where(backups.c.status == "running")))
    dead = [r for r in running if not _runner_alive(r.worker, r.started_at, now, r.id)]
    if not dead:
        return 0
    count = 0
    with engine.begin() as conn:
        for row in dead:
            error = f"the process running it ({row.worker or 'unknown'}) stopped before it ended"
            changed = conn.execute(
                update(backups)
                .where(backups.c.id == row.id, backups.c.status == "running")
                .values(status="abandoned", finished_at=now, error=error)
            ).rowcount
            if changed:
                count += 1
                events.record(
                    conn,
                    now,
                    actor="jobs",
                    kind="backup.abandoned",
                    subject=f"backup:{row.id}",
                    details={"worker": row.worker, "error": error},
                )
    log.warning("marked %d backup run(s) abandoned", count)
    return count


def maintain_step(engine: Engine, now: datetime, settings: Settings) -> dict[str, Any]:
    """The jobs tick's maintenance step: runs left "running" by a dead process."""
    return {"abandoned": mark_abandoned(engine, now)}


# --- files -----------------------------------------------------------------------------


def _free_name(folder: Path, stem: str, ext: str) -> Path:
    candidate = folder / f"{stem}.{ext}"
    n = 2
    while candidate.exists():
        candidate = folder / f"{stem}-{n}.{ext}"
        n += 1
    return candidate


def backup_files(folder: Path) -> list[Path]:
    """ondeck's backup files in `folder`, oldest first (names sort by time)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if FILE_PATTERN.match(p.name) and p.is_file())


def prune(folder: Path, keep: int) -> list[Path]:
    """Delete the oldest backup files beyond `keep`; only files named like ours."""
    files = backup_files(folder)
    doomed = files[: max(0, len(files) - keep)]
    for path in doomed:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return doomed


def remove_stale_temps(folder: Path, now: datetime) -> list[Path]:
    """Delete the temporary files of runs that died half-way: each is a whole copy of the
    database, and nothing else would ever remove it."""
    cutoff = aware(now).timestamp() - STALE_TEMP_AFTER_S
    removed = []
    for path in folder.iterdir():
        if not TEMP_PATTERN.match(path.name):
            continue
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed.append(path)
    if removed:
        log.warning("removed %d file(s) left by backup runs that died", len(removed))
    return removed


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- SQLite ----------------------------------------------------------------------------


def _sqlite_path(engine: Engine) -> Path:
    database = engine.url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        raise BackupFailed("only a SQLite database file can be backed up")
    return Path(database).expanduser()


def _copy_sqlite(engine: Engine, target: Path) -> None:
    """The online backup API: a consistent copy while others keep reading and writing."""
    # Created here first: SQLite says only "unable to open database file" about a file it
    # cannot create; the OSError says why (read-only, permission denied, no space left).
    target.touch(exist_ok=False)
    source = sqlite3.connect(_sqlite_path(engine), timeout=15)
    try:
        copy = sqlite3.connect(target)
        try:
            source.backup(copy)
            # A self-contained file: no -wal companion needed to read it.
            copy.execute("PRAGMA journal_mode=DELETE")
        finally:
            copy.close()
    except sqlite3.Error as exc:
        raise BackupFailed(f"SQLite backup: {exc}") from None
    finally:
        source.close()


def verify_sqlite(path: Path) -> None:
    """An intact SQLite file holding an ondeck schema, or `InvalidInput` saying why not."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise InvalidInput(f"{path}: cannot open: {exc}") from None
    try:
        result = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
        if result != ["ok"]:
            raise InvalidInput(f"{path}: integrity check failed: {'; '.join(result)[:300]}")
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as exc:
        raise InvalidInput(f"{path}: not a usable SQLite database: {exc}") from None
    finally:
        conn.close()
    if not {"alembic_version", "schedules", "tasks"} <= names:
        raise InvalidInput(f"{path}: not an ondeck database (its tables are missing)")


# --- PostgreSQL ------------------------------------------------------------------------


def _pg_tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise BackupFailed(
            f"{name} not found on PATH: install the PostgreSQL client tools "
            "(Debian: postgresql-client) matching the server's version"
        )
    return found


def _pg_target(engine_or_url: Engine | str) -> tuple[str, dict[str, str]]:
    """A libpq URL without the password, and the environment carrying it."""
    url = make_url(str(engine_or_url.url if isinstance(engine_or_url, Engine) else engine_or_url))
    env = dict(os.environ)
    if url.password:
        env["PGPASSWORD"] = str(url.password)
    env.setdefault("PGCONNECT_TIMEOUT", "10")
    plain = url.set(drivername="postgresql", password=None)
    return plain.render_as_string(hide_password=False), env


def _run_tool(args: list[str], env: dict[str, str], timeout: int, what: str) -> str:
    try:
        result = subprocess.run(
            args, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise BackupFailed(f"{what} did not finish within {timeout} s") from None
    if result.returncode != 0:
        lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
        reason = lines[-1] if lines else f"exit status {result.returncode}"
        raise BackupFailed(f"{what} failed: {reason[:500]}")
    return result.stdout


def _dump_postgres(engine: Engine, target: Path) -> None:
    url, env = _pg_target(engine)
    _run_tool(
        [_pg_tool("pg_dump"), "--format=custom", f"--file={target}", f"--dbname={url}"],
        env,
        DUMP_TIMEOUT_S,
        "pg_dump",
    )


def verify_postgres(path: Path) -> None:
    """A readable pg_dump custom-format archive, or `InvalidInput` saying why not."""
    try:
        listing = _run_tool(
            [_pg_tool("pg_restore"), "--list", str(path)],
            dict(os.environ),
            VERIFY_TIMEOUT_S,
            "pg_restore --list",
        )
    except BackupFailed as exc:
        raise InvalidInput(f"{path}: {exc}") from None
    if "TABLE DATA" not in listing or " schedules " not in listing:
        raise InvalidInput(f"{path}: not an ondeck database dump (its tables are missing)")


# --- restore ---------------------------------------------------------------------------


def verify_file(path: Path, *, postgres: bool) -> None:
    if not path.is_file():
        raise InvalidInput(f"{path}: no such file")
    if postgres:
        verify_postgres(path)
    else:
        verify_sqlite(path)


def restore(engine: Engine, path: Path, now: datetime, *, actor: str = "cli") -> dict[str, Any]:
    """Replace the configured database's contents with the backup at `path`.

    Refuses (InvalidInput, nothing changed) a file that fails verification. The schema is
    then brought up to date, in case the backup came from an older ondeck.
    """
    from ondeck.db.migrate import upgrade

    path = Path(path).expanduser()
    postgres = engine.dialect.name == "postgresql"
    verify_file(path, postgres=postgres)
    engine.dispose()
    if postgres:
        url, env = _pg_target(engine)
        try:
            _run_tool(
                [
                    _pg_tool("pg_restore"),
                    "--clean",
                    "--if-exists",
                    "--no-owner",
                    "--no-privileges",
                    "--single-transaction",
                    "--exit-on-error",
                    f"--dbname={url}",
                    str(path),
                ],
                env,
                DUMP_TIMEOUT_S,
                "pg_restore",
            )
        except BackupFailed as exc:
            raise OndeckError(f"restore failed, the database is unchanged: {exc}") from None
    else:
        _restore_sqlite(engine, path)
    engine.dispose()
    upgrade(engine)
    with engine.begin() as conn:
        events.record(
            conn,
            now,
            actor=actor,
            kind="backup.restored",
            subject="backup:restore",
            details={"file": str(path), "bytes": path.stat().st_size},
        )
    return {"file": str(path), "bytes": path.stat().st_size, "database": engine.dialect.name}


def _restore_sqlite(engine: Engine, path: Path) -> None:
    target = _sqlite_path(engine)
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        dest = sqlite3.connect(target, timeout=15)
        try:
            # The backup API swaps every page in one step under the write lock.
            source.backup(dest)
        finally:
            dest.close()
    except sqlite3.Error as exc:
        raise OndeckError(f"restore failed: {exc}") from None
    finally:
        source.close()
