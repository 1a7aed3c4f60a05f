"""Restore: the database's contents replaced by a backup, everything checked first.

    1. the file: a readable regular file of this store's kind, not the database itself;
    2. verified: intact, an ondeck schema, at a revision this ondeck knows (a newer one
       would be put in place, then fail every command with "Can't locate revision");
    3. a safety copy of the current database, unless it is empty, in the backup directory
       as `pre-restore-<stamp>.<db|dump>` (never pruned; restoring it undoes the restore);
    4. replaced (pg_restore in one transaction; SQLite's backup API under the write lock),
       then migrated up if the backup came from an older ondeck;
    5. the backup runs that were in flight when the copy was taken, settled (below).
Anything refused in 1–3 leaves the database as it was.

A backup holds its own run as `running` (the copy is taken while the run works) and not
the fire that the run's success recorded later. That run did succeed: its file exists and
has just been verified. So the restored database says so: the run `ok` with this file,
finished when the file was last written, and its schedule's fire recorded as firing records
every fire. Any other run in flight ended after the copy, in a way the backup cannot know:
it is marked `abandoned` saying exactly that, not left for the next tick to guess at.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection, Engine, func, select, text, update

from ondeck.backups import copies as backup_copies
from ondeck.backups import files as backup_files
from ondeck.backups.copies import BackupFailed
from ondeck.backups.liveness import abandon
from ondeck.core import logs
from ondeck.core.clock import aware, iso, today
from ondeck.core.errors import InvalidInput, OndeckError, Unavailable
from ondeck.core.models import BackupStatus
from ondeck.db.tables import backups, events
from ondeck.host import private
from ondeck.host.settings import Settings
from ondeck.system import events as event_log

log = logs.logger("ondeck.backups")

_KINDS = {"sqlite": "a SQLite database", "pg_dump": "a PostgreSQL dump (pg_dump)"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Restored:
    file: str
    bytes: int
    database: str
    revision: str
    # The backup's own time: when its run took the copy (None when no run in it is known
    # to be the one that wrote it), and the last event in it.
    taken_at: datetime | None
    last_event_at: datetime | None
    safety_copy: str | None
    replaced: dict[str, Any] = field(default_factory=dict)

    def to_json(self, zone: tzinfo) -> dict[str, Any]:
        data = asdict(self)
        data["taken_at"] = iso(self.taken_at, zone)
        data["last_event_at"] = iso(self.last_event_at, zone)
        replaced = dict(self.replaced)
        if replaced.get("last_event_at"):
            replaced["last_event_at"] = iso(replaced["last_event_at"], zone)
        data["replaced"] = replaced
        return data


def check_file(path: Path, *, postgres: bool) -> str:
    """Refuse (InvalidInput) anything but a readable backup file of this store's kind;
    the file's schema revision, one this ondeck knows."""
    if not path.exists():
        raise InvalidInput(f"{path}: no such file")
    if path.is_dir():
        newest = backup_files.backup_files(path)
        hint = f"; the newest in it is {newest[-1].name}" if newest else ""
        raise InvalidInput(
            f"{path} is a directory: give a backup file written by `ondeck backup` "
            f"(ondeck-YYYYMMDD-HHMMSS.{'dump' if postgres else 'db'}){hint}"
        )
    if not path.is_file():
        raise InvalidInput(f"{path} is not a regular file: a backup is a file ondeck wrote")
    try:
        kind = backup_copies.file_kind(path)
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    wanted = "pg_dump" if postgres else "sqlite"
    if kind is None:
        what = "empty" if path.stat().st_size == 0 else "neither a SQLite database nor a pg_dump"
        raise InvalidInput(f"{path} is {what}: not an ondeck backup")
    if kind != wanted:
        store = "PostgreSQL" if postgres else "SQLite"
        raise InvalidInput(
            f"{path} is {_KINDS[kind]} but the configured database is {store}: "
            f"give a backup of a {store} database ({_KINDS[wanted]})"
        )
    revision = (
        backup_copies.verify_postgres(path) if postgres else backup_copies.verify_sqlite(path)
    )
    if revision is None:
        raise InvalidInput(f"{path}: no schema version in it (alembic_version is empty)")
    from ondeck.db.migrate import known_revisions, unknown_revision

    if revision not in known_revisions():
        raise InvalidInput(f"{unknown_revision(str(path), revision)}, then restore it")
    return revision


def restore(
    engine: Engine, settings: Settings, path: Path, now: datetime, *, actor: str = "cli"
) -> Restored:
    """Replace the configured database's contents with the backup at `path` (module doc)."""
    from ondeck.db.migrate import upgrade

    path = Path(path).expanduser()
    postgres = engine.dialect.name == "postgresql"
    revision = check_file(path, postgres=postgres)
    if not postgres and path.resolve() == backup_copies.sqlite_path(engine).resolve():
        raise InvalidInput(f"{path} is the configured database itself: nothing to restore")
    replaced = describe(engine)
    safety = None if replaced["empty"] else _safety_copy(engine, settings, now)
    engine.dispose()
    if postgres:
        _restore_postgres(engine, path)
    else:
        _restore_sqlite(engine, path)
    engine.dispose()
    upgrade(engine)
    size = path.stat().st_size
    with engine.begin() as conn:
        last_event_at = conn.execute(select(func.max(events.c.at))).scalar()
        writer = settle_runs(conn, path, now, settings.zone, actor=actor)
        event_log.record(
            conn,
            now,
            actor=actor,
            kind="backup.restored",
            subject="backup:restore",
            details={
                "file": str(path),
                "bytes": size,
                "revision": revision,
                "taken_at": writer.isoformat() if writer else None,
                "safety_copy": str(safety) if safety else None,
                "replaced": {
                    k: v.isoformat() if isinstance(v, datetime) else v for k, v in replaced.items()
                },
            },
        )
    return Restored(
        file=str(path),
        bytes=size,
        database=engine.dialect.name,
        revision=revision,
        taken_at=writer,
        last_event_at=aware(last_event_at) if last_event_at else None,
        safety_copy=str(safety) if safety else None,
        replaced=replaced,
    )


def describe(engine: Engine) -> dict[str, Any]:
    """What the database holds now, in a few figures: what a restore would replace."""
    from ondeck.db.engine import is_unavailable
    from ondeck.db.sqlite_errors import broken

    try:
        with engine.connect() as conn:
            revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
            counts = {
                name: conn.execute(text(f"SELECT count(*) FROM {name}")).scalar_one()
                for name in ("tasks", "schedules", "events")
            }
            last = conn.execute(select(func.max(events.c.at))).scalar()
    except Exception as exc:  # no schema (empty), or a database that cannot be read
        engine.dispose()  # nothing pooled keeps the file open: the user may move it away
        message = str(getattr(exc, "orig", None) or exc)
        if is_unavailable(exc) and not broken(message):
            raise Unavailable(f"database unavailable: {message.strip()[:300]}") from None
        if "no such table" in message or "does not exist" in message:
            return {"empty": True}
        reason = message.strip().splitlines()[0] if message.strip() else type(exc).__name__
        if engine.dialect.name == "postgresql":
            way = "repair it, or drop and create it empty, then restore again"
        else:
            way = f"move {backup_copies.sqlite_path(engine)} away, then restore again"
        raise OndeckError(
            f"cannot read the current database to keep a safety copy of it ({reason}); "
            f"nothing was changed: {way}",
            code="safety_copy_failed",
        ) from None
    return {
        "empty": False,
        "revision": revision,
        **counts,
        "last_event_at": aware(last) if last else None,
    }


def _safety_copy(engine: Engine, settings: Settings, now: datetime) -> Path:
    folder = settings.backups_path
    ext = "dump" if engine.dialect.name == "postgresql" else "db"
    temp = backup_files.temp_path(folder, now)
    try:
        backup_files.private_folder(folder)
        backup_copies.write_copy(engine, temp)
        backup_files.fsync(temp)
        return backup_files.publish(temp, folder, f"pre-restore-{backup_files.stamp(now)}", ext)
    except (OSError, BackupFailed, InvalidInput) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise OndeckError(
            f"cannot keep a safety copy of the current database in {folder} ({reason}); "
            "nothing was changed",
            code="safety_copy_failed",
        ) from None
    finally:
        backup_files.discard(temp)


def _restore_postgres(engine: Engine, path: Path) -> None:
    url, env = backup_copies.pg_target(engine)
    try:
        backup_copies.run_tool(
            [
                backup_copies.pg_tool("pg_restore"),
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
            backup_copies.DUMP_TIMEOUT_S,
            "pg_restore",
        )
    except BackupFailed as exc:
        raise OndeckError(f"restore failed, the database is unchanged: {exc}") from None


def _restore_sqlite(engine: Engine, path: Path) -> None:
    target = backup_copies.sqlite_path(engine)
    with contextlib.suppress(OSError):  # there already, or SQLite will say why not
        private.create_file(target)  # not SQLite's 0644 (host/private.py)
    source = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
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


# --- the runs in flight when the copy was taken ----------------------------------------


def settle_runs(
    conn: Connection, path: Path, now: datetime, zone: tzinfo, *, actor: str
) -> datetime | None:
    """Settle the `running` rows of a just-restored database (module doc); returns when
    the run that wrote `path` took it, if that run is known."""
    running = list(conn.execute(select(backups).where(backups.c.status == BackupStatus.RUNNING)))
    writer = _writer(running, path)
    for run in running:
        if writer is not None and run.id == writer.id:
            _succeeded(conn, run, path, now, zone, actor=actor)
        else:
            _unknown(conn, run, path, now, actor=actor)
    return aware(writer.started_at) if writer is not None else None


def _writer(running: list[Any], path: Path) -> Any | None:
    """The run that wrote `path`, if it can be told: the running row whose start the name
    gives (the name is the run's start); for a file renamed since, the only running row
    (a run's own row is in every copy it takes). A safety copy has no run."""
    named = backup_files.name_time(path.name)
    if named is not None:
        matches = [r for r in running if aware(r.started_at).replace(microsecond=0) == named[0]]
    elif path.name.startswith("pre-restore-"):
        matches = []
    else:
        matches = running
    return matches[0] if len(matches) == 1 else None


def _succeeded(
    conn: Connection, run: Any, path: Path, now: datetime, zone: tzinfo, *, actor: str
) -> None:
    from ondeck.work.firing import record_fire

    started = aware(run.started_at)
    written = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    # The file was last written when the run published it; a copied file may say later.
    finished = min(max(written, started), aware(now))
    size = path.stat().st_size
    conn.execute(
        update(backups)
        .where(backups.c.id == run.id)
        .values(status=BackupStatus.OK, finished_at=finished, file=str(path.resolve()), bytes=size)
    )
    event_log.record(
        conn,
        finished,
        actor=actor,
        kind="backup.done",
        subject=f"backup:{run.id}",
        details={
            "file": str(path.resolve()),
            "bytes": size,
            "recorded": "at restore: the backup holds its own run as running",
        },
    )
    if run.schedule_id is not None:
        record_fire(conn, today(started, zone), finished, run.schedule_id, actor=actor)


def _unknown(conn: Connection, run: Any, path: Path, now: datetime, *, actor: str) -> None:
    error = (
        f"was running when the backup {path.name} was taken; how it ended is not in that "
        "backup (restored)"
    )
    abandon(conn, now, run.id, run.worker, error, actor=actor)
