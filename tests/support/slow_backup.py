"""`ondeck` whose backups are slow, for the tests that show a long backup holds nothing back.

    python slow_backup.py SECONDS [ondeck arguments…]

SQLite: the copy (`VACUUM INTO`, holding its read snapshot as a long copy would) pauses in
its progress handler until SECONDS have passed since it began, or until it is told to stop.
PostgreSQL needs no hook: the tests put a `pg_dump` on PATH that sleeps, then runs the real
one (`slow_pg_dump`). Either goes on at once when the file named by RELEASE exists: a test
that has seen all it needs while the backup was running need not wait out the rest.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from pathlib import Path

RELEASE = "ONDECK_TEST_BACKUP_RELEASE"


def slow_pg_dump(folder: Path, seconds: float, real: str, release: Path) -> Path:
    """A `pg_dump` in `folder` that sleeps `seconds` (in tenths, so never less), or until
    `release` exists, then is the real one; the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "pg_dump"
    tenths = round(seconds * 10)
    script.write_text(
        f"#!/bin/sh\ni=0\nwhile [ $i -lt {tenths} ] && [ ! -e '{release}' ]; do\n"
        f'  sleep 0.1; i=$((i + 1))\ndone\nexec {real} "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder


def main() -> None:
    from ondeck.backups import copies as backup_copies
    from ondeck.entrypoints.cli import main as ondeck

    seconds = float(sys.argv[1])
    release = Path(os.environ[RELEASE])
    began: list[float] = []

    def pace(stop: threading.Event | None) -> None:
        if not began:
            began.append(time.monotonic())
        while time.monotonic() - began[0] < seconds and not (stop and stop.is_set()):
            if release.exists():
                return
            time.sleep(0.05)

    backup_copies.PACE = pace
    ondeck(sys.argv[2:])


if __name__ == "__main__":
    main()
