"""Real `ondeck jobs --once` processes: at once, one after another, and killed mid-way.

Whatever the interleaving, each (schedule, date) ends with exactly one task and one fire.
The schedules are made due today (real time): these processes read the real clock.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from datetime import date
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, func, insert, select

from ondeck.core import clock
from ondeck.db.tables import fires, schedules, tasks

pytestmark = pytest.mark.slow

ZONE = "UTC"
ONDECK = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "ondeck"


def _ondeck() -> str:
    if ONDECK.exists():
        return str(ONDECK)
    found = shutil.which("ondeck")
    if found is None:
        pytest.fail("the ondeck command is not installed (pip install -e .)")
    return found


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    values = dict(os.environ)
    values.update(
        ONDECK_TZ=ZONE,
        ONDECK_DATA_DIR=str(tmp_path / "data"),
        ONDECK_BACKUP_DIR=str(tmp_path / "backups"),
    )
    return values


def _jobs_once(db_url: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [_ondeck(), "--db", db_url, "jobs", "--once"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _finish(process: subprocess.Popen[bytes]) -> None:
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err.decode()[-2000:]


def _today() -> date:
    return clock.today(clock.now(), ZoneInfo(ZONE))


def _due_schedules(engine: Engine, count: int) -> set[int]:
    """`count` daily task schedules, due today."""
    now, day = clock.now(), _today()
    rows = [
        {
            "title": f"daily {i}",
            "rule": "daily",
            "start_on": day,
            "next_due": day,
            "created_at": now,
            "updated_at": now,
        }
        for i in range(count)
    ]
    with engine.begin() as conn:
        conn.execute(insert(schedules), rows)
        return set(conn.execute(select(schedules.c.id)).scalars())


def _counts(engine: Engine) -> tuple[int, int]:
    """(fires of task schedules, tasks made by schedules), read without holding the jobs back."""
    with engine.connect().execution_options(readonly=True) as conn:
        made = conn.execute(
            select(func.count()).select_from(fires).where(fires.c.task_id.is_not(None))
        ).scalar_one()
        made_tasks = conn.execute(
            select(func.count()).select_from(tasks).where(tasks.c.source.like("sch:%"))
        ).scalar_one()
    return int(made), int(made_tasks)


def _assert_exactly_once(engine: Engine, ids: set[int]) -> None:
    day = _today()
    with engine.connect().execution_options(readonly=True) as conn:
        fired = list(
            conn.execute(
                select(fires.c.schedule_id, fires.c.fire_date, fires.c.task_id).where(
                    fires.c.schedule_id.in_(ids)
                )
            )
        )
        sources = list(conn.execute(select(tasks.c.id, tasks.c.source)))
        advanced = conn.execute(
            select(func.count())
            .select_from(schedules)
            .where(schedules.c.id.in_(ids), schedules.c.next_due > day)
        ).scalar_one()
    assert sorted(f.schedule_id for f in fired) == sorted(ids), "one fire per schedule"
    assert {f.fire_date for f in fired} == {day}
    expected = {f"sch:{i}:{day.isoformat()}" for i in ids}
    assert sorted(s.source for s in sources) == sorted(expected), "one task per schedule"
    by_source = {s.source: s.id for s in sources}
    assert all(by_source[f"sch:{f.schedule_id}:{day}"] == f.task_id for f in fired)
    assert advanced == len(ids)


def test_three_at_once_then_two_more_fire_each_schedule_once(
    engine: Engine, db_url: str, env: dict[str, str]
) -> None:
    ids = _due_schedules(engine, 300)
    together = [_jobs_once(db_url, env) for _ in range(3)]
    for process in together:
        _finish(process)
    for _ in range(2):
        _finish(_jobs_once(db_url, env))
    assert _counts(engine) == (300, 300)
    _assert_exactly_once(engine, ids)
    with engine.connect() as conn:
        kinds = conn.execute(select(schedules.c.kind).where(schedules.c.id.not_in(ids))).all()
    assert kinds == [("backup",)], "five first starts made one backup schedule"


def test_kill_9_in_the_middle_of_firing_then_a_restart_loses_and_doubles_nothing(
    engine: Engine, db_url: str, env: dict[str, str]
) -> None:
    ids = _due_schedules(engine, 2000)
    caught_mid_way = False
    for _ in range(5):
        process = _jobs_once(db_url, env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            fired, _ = _counts(engine)
            if fired > 0:
                break
            time.sleep(0.002)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
        fired, made = _counts(engine)
        if 0 < fired < len(ids):
            caught_mid_way = True
            assert process.returncode == -signal.SIGKILL
            # Each committed batch holds its tasks and fires together; the batch in flight
            # left nothing behind.
            assert made == fired
            break
        if fired == len(ids):
            pytest.fail("the jobs process finished before it could be killed; raise the count")
    assert caught_mid_way, "never caught the jobs process in the middle of firing"
    _finish(_jobs_once(db_url, env))
    _assert_exactly_once(engine, ids)
