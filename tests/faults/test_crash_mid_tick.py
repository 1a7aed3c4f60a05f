"""`kill -9` of `ondeck jobs` at random moments, restarted each time, day after day.

Schedules of every kind, rule and missed policy (many days behind at first) are fired by
real `ondeck jobs --once` processes whose clock libfaketime sets to 09:00 of each simulated
day. Each run is killed at a random moment: at a random point of its progress through the
day's fires (between batches, or inside one), or a random time after it started (while it
starts up, checks the schema, fires, backs up, or writes its heartbeat). Runs restart until
one ends on its own; then the next day. At the end every (schedule, fire date) has exactly
one fire and, for task schedules, exactly one task; none is missing.

Sizes: ONDECK_FAULT_SCHEDULES (default 500, the full 2000 under ONDECK_FAULT_FULL=1)
and ONDECK_FAULT_KILLS (20).
"""

from __future__ import annotations

import random
import signal
import time
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from ondeck.db.tables import fires
from support.firing_oracle import backup_record, check_exactly_once, expected_fires, make_schedules
from support.procs import Proc, Procs, at_time, knob, ondeck_env

pytestmark = pytest.mark.slow

SCHEDULES = int(knob("SCHEDULES", 500, 2000))
KILLS = int(knob("KILLS", 20, 20))
KILLS_PER_DAY = 4
FIRST_DAY = date(2026, 7, 1)
MAX_DAYS = 40  # a cap: a day whose first run ends before its kill gets none


def _fired(engine: Engine, last_id: int) -> int:
    """Fires of the test's schedules so far (the backup schedule, made later, has a higher id)."""
    with engine.connect().execution_options(readonly=True) as conn:
        return int(
            conn.execute(
                select(func.count()).select_from(fires).where(fires.c.schedule_id <= last_id)
            ).scalar_one()
        )


def _kill_at_random(
    proc: Proc, engine: Engine, rng: random.Random, last_id: int, before: int, due: int
) -> str:
    """Kill `proc` at a random moment; which phase it was in (or "finished" if it won)."""
    if due == 0 or rng.random() < 0.3:
        deadline = time.monotonic() + rng.uniform(0.0, 1.2)
        while time.monotonic() < deadline and proc.alive():
            time.sleep(0.005)
    else:
        # A batch commits every few tens of milliseconds: kill within a few of seeing one.
        target = before + rng.randint(1, due)
        while proc.alive() and _fired(engine, last_id) < target:
            time.sleep(0.001)
        time.sleep(rng.uniform(0.0, 0.004))
    proc.kill9()
    if proc.popen.returncode == 0:
        return "finished"  # it ended on its own just before the kill
    assert proc.popen.returncode == -signal.SIGKILL, proc.text()[-3000:]
    done = _fired(engine, last_id) - before
    if done == 0:
        return "before any commit"
    return "mid-firing" if done < due else "after firing"


def test_kill_9_at_random_moments_loses_and_doubles_nothing(
    db_url: str, engine: Engine, tmp_path: Path, procs: Procs, report: dict[str, object]
) -> None:
    rng = random.Random(20260701)
    planned = make_schedules(engine, SCHEDULES, FIRST_DAY, seed=8)
    last_id = max(s.id for s in planned)
    env = ondeck_env(db_url, tmp_path)
    phases: Counter[str] = Counter()
    kills = runs = 0
    days: list[date] = []
    expected_total = 0
    while kills < KILLS or not days:
        assert len(days) < MAX_DAYS, "kills never landed"
        day = FIRST_DAY + timedelta(days=len(days))
        days.append(day)
        expected_total = sum(len(expected_fires(s, days)) for s in planned)
        env_day = at_time(env, datetime.combine(day, clock_time(9), tzinfo=UTC))
        budget = min(KILLS_PER_DAY, KILLS - kills)
        while True:
            runs += 1
            before = _fired(engine, last_id)
            proc = procs.ondeck(f"jobs-{day}", "jobs", "--once", env=env_day)
            if budget == 0:
                assert proc.wait() == 0, proc.text()[-3000:]
                break
            phase = _kill_at_random(proc, engine, rng, last_id, before, expected_total - before)
            if phase == "finished":
                break
            phases[phase] += 1
            kills += 1
            budget -= 1
        assert _fired(engine, last_id) == expected_total, f"day {day} not complete"

    counts = check_exactly_once(engine, planned, days)
    # A run killed half-way is abandoned once its process's heartbeat has been silent long
    # enough (backup_liveness): by the next day's runs, or by this one an hour later.
    late = at_time(env, datetime.combine(days[-1], clock_time(10), tzinfo=UTC))
    assert procs.ondeck("jobs-late", "jobs", "--once", env=late).wait() == 0
    # The backup schedule: at most one fire a day, each after a backup that succeeded; no
    # run is left "running".
    backups = backup_record(engine)
    ok_days = {day for status, day, _ in backups["runs"] if status == "ok"}
    assert len(set(backups["fires"])) == len(backups["fires"])
    assert set(backups["fires"]) <= ok_days
    assert all(status in ("ok", "abandoned") for status, _, _ in backups["runs"])
    assert phases["mid-firing"] > 0, f"no kill landed in the middle of firing: {phases}"
    report.update(
        counts,
        days=len(days),
        runs=runs,
        kills=kills,
        phases=dict(phases),
        backup_runs=dict(Counter(status for status, _, _ in backups["runs"])),
        backup_fires=len(backups["fires"]),
    )
