"""The files in the backup directory: their names, which are oldest, pruning, leftovers.

A copy is written under a temporary name (`.ondeck-<stamp>-<pid>-<thread>.tmp`), then
published as `ondeck-YYYYMMDD-HHMMSS.<db|dump>` (the run's start, UTC), or `…-2`, `…-3`
when that second already has one. Publishing never replaces a file: two runs in the same
second (two processes, or the CLI beside the jobs loop) each keep their own.

Which files are the oldest is decided by the time the `backups` table recorded for each
(the time in the name only for a file no run row knows, such as one written after the
backup a database was restored from), never by sorting names: `…-2.db` sorts before
`….db`, and a clock set back names a new file before older ones. The file a run has just
written is never pruned by that run. A file that cannot be deleted is reported, not
raised: the backup it made room for is good.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ondeck.core import logs
from ondeck.core.clock import aware
from ondeck.core.humanize import counted
from ondeck.host import private

log = logs.logger("ondeck.backups")

FILE_PATTERN = re.compile(r"^ondeck-(?P<stamp>\d{8}-\d{6})(?:-(?P<seq>\d+))?\.(?:db|dump)$")
# A run's temporary file (and SQLite's companions of it), named in `temp_path`.
TEMP_PATTERN = re.compile(r"^\.ondeck-\d{8}-\d{6}-\d+-\d+\.tmp(-journal|-wal|-shm)?$")
# A restore's copy of the database it replaced (backups/restore.py).
SAFETY_PATTERN = re.compile(r"^pre-restore-\d{8}-\d{6}(?:-\d+)?\.(?:db|dump)$")
STAMP_FORMAT = "%Y%m%d-%H%M%S"
# Hard links are how a name is taken without replacing a file; where the filesystem has
# none, publishing falls back to a check then a rename.
_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK}


@dataclass
class Pruned:
    """What pruning did: the files it deleted, and the ones it could not (with why)."""

    deleted: list[Path] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def stamp(now: datetime) -> str:
    """The name's time: UTC, so names do not jump at a change of daylight saving time."""
    return aware(now).strftime(STAMP_FORMAT)


def temp_path(folder: Path, now: datetime, prefix: str = "ondeck") -> Path:
    return folder / f".{prefix}-{stamp(now)}-{os.getpid()}-{threading.get_ident()}.tmp"


def publish(temp: Path, folder: Path, stem: str, ext: str) -> Path:
    """Give the finished copy its name (`stem.ext`, else `stem-2.ext`, …); never replaces."""
    n = 1
    while True:
        final = folder / (f"{stem}.{ext}" if n == 1 else f"{stem}-{n}.{ext}")
        try:
            os.link(temp, final)
        except FileExistsError:
            n += 1
            continue
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise
            if final.exists():
                n += 1
                continue
            os.replace(temp, final)
        else:
            temp.unlink()
        fsync(folder)
        return final


def name_time(name: str) -> tuple[datetime, int] | None:
    """(the UTC time in a backup file's name, its sequence number), or None if not ours."""
    match = FILE_PATTERN.match(name)
    if match is None:
        return None
    try:
        when = datetime.strptime(match["stamp"], STAMP_FORMAT).replace(tzinfo=UTC)
    except ValueError:  # ondeck-99999999-999999.db: our shape, not a time
        return None
    return when, int(match["seq"] or 1)


def backup_files(folder: Path, recorded: Mapping[str, datetime] | None = None) -> list[Path]:
    """ondeck's backup files in `folder`, oldest first.

    `recorded` maps a file name to the time its run recorded; files it does not name are
    placed by the time in their name.
    """
    recorded = recorded or {}
    if not folder.is_dir():
        return []
    found: list[tuple[datetime, int, str, Path]] = []
    for path in folder.iterdir():
        parsed = name_time(path.name)
        if parsed is None or not path.is_file():
            continue
        when, seq = parsed
        found.append((aware(recorded.get(path.name, when)), seq, path.name, path))
    return [item[-1] for item in sorted(found)]


def prune(
    folder: Path, keep: int, *, recorded: Mapping[str, datetime], protect: Path | None = None
) -> Pruned:
    """Delete the oldest backup files beyond `keep` (only files named like ours).

    `protect` (the file just written) counts among the kept ones whatever its time says.
    """
    result = Pruned()
    files = backup_files(folder, recorded)
    if protect is not None and protect in files:
        files.remove(protect)
        keep -= 1
    for path in files[: max(0, len(files) - keep)]:
        try:
            path.unlink()
        except FileNotFoundError:
            continue  # another run pruned it first
        except OSError as exc:
            result.failed.append(f"could not delete the old backup {path}: {exc.strerror or exc}")
            continue
        result.deleted.append(path)
    if result.deleted:
        log.info("pruned %s: %s", counted(len(result.deleted), "old backup file"), result.deleted)
    return result


def remove_stale_temps(folder: Path, now: datetime, older_than_s: float) -> Pruned:
    """Delete the temporary files of runs that died half-way: each is a whole copy of the
    database, and nothing else would ever remove it."""
    cutoff = aware(now).timestamp() - older_than_s
    result = Pruned()
    for path in folder.iterdir():
        if not TEMP_PATTERN.match(path.name):
            continue
        try:
            if path.stat().st_mtime >= cutoff:
                continue
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            result.failed.append(f"could not delete the leftover {path}: {exc.strerror or exc}")
            continue
        result.deleted.append(path)
    if result.deleted:
        log.warning(
            "removed %s left by backup runs that died", counted(len(result.deleted), "file")
        )
    return result


def private_folder(folder: Path) -> None:
    """The backup directory, made or found, and every copy in it the owner's alone: each
    is the whole database (host/private.py)."""
    private.make_dirs(folder, own=True)
    for path in folder.iterdir():
        if any(p.match(path.name) for p in (FILE_PATTERN, SAFETY_PATTERN, TEMP_PATTERN)):
            private.tighten(path)


def fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def discard(path: Path) -> None:
    """Remove a temporary file and SQLite's companions of it, if they are there."""
    for leftover in (path, *(path.with_name(path.name + s) for s in ("-journal", "-wal", "-shm"))):
        with contextlib.suppress(OSError):
            leftover.unlink()
