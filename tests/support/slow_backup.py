"""`ondeck` whose backups are slow, for the tests that show a long backup holds nothing back.

    python slow_backup.py SECONDS [ondeck arguments…]

SQLite: the copy (`VACUUM INTO`, holding its read snapshot as a long copy would) pauses in
its progress handler until SECONDS have passed since it began, or until it is told to stop.
PostgreSQL needs no hook: the tests put a `pg_dump` on PATH that sleeps, then runs the real
one (`slow_pg_dump`).
"""

from __future__ import annotations

import stat
import sys
import threading
import time
from pathlib import Path


def slow_pg_dump(folder: Path, seconds: float, real: str) -> Path:
    """A `pg_dump` in `folder` that sleeps `seconds`, then is the real one; the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "pg_dump"
    script.write_text(f'#!/bin/sh\nsleep {seconds}\nexec {real} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder


def main() -> None:
    from ondeck.backups import copies as backup_copies
    from ondeck.entrypoints.cli import main as ondeck

    seconds = float(sys.argv[1])
    began: list[float] = []

    def pace(stop: threading.Event | None) -> None:
        if not began:
            began.append(time.monotonic())
        while time.monotonic() - began[0] < seconds and not (stop and stop.is_set()):
            time.sleep(0.05)

    backup_copies.PACE = pace
    ondeck(sys.argv[2:])


if __name__ == "__main__":
    main()
