"""Two schedulers at once, day after day: zero duplicates, zero gaps.

Each simulated day, two `ondeck jobs --once` processes start at the same moment, their
clock set by libfaketime to 09:00 of that day (time is moved from outside; the product has
no clock switch). Over the days every (schedule, day it is due) fires exactly once, each
task schedule's fire has exactly one task, and the daily backup runs once a day.

Sizes: ONDECK_FAULT_DAYS (default 9, the full 60 under ONDECK_FAULT_FULL=1) and
ONDECK_FAULT_TWO_SCHEDULES (700 schedules).
"""

from __future__ import annotations

import contextlib
import re
import time as time_module
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from ondeck.db.engine import SQLITE_BUSY_TIMEOUT_MS
from support.firing_oracle import backup_record, check_exactly_once, make_schedules
from support.procs import Proc, Procs, at_time, knob, ondeck_env

pytestmark = pytest.mark.slow

DAYS = int(knob("DAYS", 9, 60))
# More than one firing batch (300) a day, so two processes can share a day's work.
SCHEDULES = int(knob("TWO_SCHEDULES", 700, 700))
# Nine days from here (24 June to 2 July) hold every weekday, a month's last day, a 1st
# and a 2nd.
FIRST_DAY = date(2026, 6, 24)
TICK = re.compile(r"tick done in [\d.]+ ms: fire \{'fired': (\d+)")


def _fired(log: str) -> int:
    """How many fires this process's tick recorded, from its log line."""
    found = TICK.search(log)
    assert found, log[-2000:]
    return int(found.group(1))


@contextlib.contextmanager
def _starting_line(engine: Engine, pair: list[Proc]) -> Iterator[None]:
    """Hold the schedules' write lock until both processes wait on it, then let go: they
    start firing at the same instant instead of one finishing before the other starts."""
    with engine.connect() as conn:
        trans = conn.begin()  # SQLite: BEGIN IMMEDIATE, the write lock
        if conn.dialect.name == "postgresql":
            conn.execute(text("LOCK TABLE schedules IN EXCLUSIVE MODE"))  # plain reads pass
        yield
        # A SQLite writer gives up after the busy timeout: let go well before that.
        patience = 10 if conn.dialect.name == "postgresql" else SQLITE_BUSY_TIMEOUT_MS / 2000
        deadline = time_module.monotonic() + patience
        while time_module.monotonic() < deadline and not _both_waiting(engine, pair):
            time_module.sleep(0.02)
        trans.commit()


def _both_waiting(engine: Engine, pair: list[Proc]) -> bool:
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            waiting = conn.execute(
                text(
                    "SELECT count(*) FROM pg_locks"
                    " WHERE NOT granted AND relation = 'schedules'::regclass"
                )
            ).scalar_one()
        return waiting >= len(pair) or not all(p.alive() for p in pair)
    # SQLite shows no waiters: a process past its imports whose CPU time stands still is
    # sleeping in SQLite's busy handler, waiting for the lock.
    before = [p.cpu_seconds() if p.alive() else 0.0 for p in pair]
    time_module.sleep(0.15)
    after = [p.cpu_seconds() if p.alive() else 0.0 for p in pair]
    return all(b == a and a > 0.25 for b, a in zip(before, after, strict=True))


def test_two_jobs_processes_a_day_for_many_days_fire_each_schedule_date_exactly_once(
    db_url: str, engine: Engine, tmp_path: Path, procs: Procs, report: dict[str, object]
) -> None:
    planned = make_schedules(engine, SCHEDULES, FIRST_DAY, seed=60)
    env = ondeck_env(db_url, tmp_path)
    days = [FIRST_DAY + timedelta(days=n) for n in range(DAYS)]
    shared = 0
    split: Counter[str] = Counter()
    for day in days:
        env_day = at_time(env, datetime.combine(day, time(9), tzinfo=UTC))
        pair: list[Proc] = []
        with _starting_line(engine, pair):
            pair += [procs.ondeck(f"jobs-{day}-{n}", "jobs", "--once", env=env_day) for n in "ab"]
        fired = []
        for proc in pair:
            assert proc.wait() == 0, proc.text()[-3000:]
            fired.append(_fired(proc.text()))
        shared += all(fired)
        split.update({"a": fired[0], "b": fired[1]})

    counts = check_exactly_once(engine, planned, days)
    backups = backup_record(engine)
    assert backups["fires"] == days, "the daily backup fired once a day, no gaps"
    ok_per_day = Counter(day for status, day, _ in backups["runs"] if status == "ok")
    assert ok_per_day == Counter(days), "one backup a day, never two"
    assert {status for status, _, _ in backups["runs"]} == {"ok"}
    report.update(
        counts,
        days=len(days),
        days_both_fired=shared,
        fired_by_each=dict(split),
        backups=len(backups["runs"]),
    )
