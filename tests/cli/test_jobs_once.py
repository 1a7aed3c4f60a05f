"""`ondeck jobs --once` as cron runs it: a step that fails is logged, named in the heartbeat,
the other steps still run, and the exit code says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, select, text

from ondeck.core import clock
from ondeck.db.tables import fires, workers
from ondeck.work import schedules
from support.procs import ondeck_env, run_ondeck

pytestmark = pytest.mark.slow


def test_a_failing_step_makes_jobs_once_exit_1_and_the_rest_of_the_tick_runs(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    env = ondeck_env(db_url, tmp_path)
    with engine.begin() as conn:
        made = schedules.create_schedule(
            conn, clock.now(), clock.now().tzinfo, title="water the plants", rule="daily"
        )
        # A database someone tampered with: the backups step and the maintain step fail.
        conn.execute(text("DROP TABLE backups"))
    result = run_ondeck("jobs", "--once", env=env)
    assert result.returncode == 1, result.stderr
    assert "step backups failed" in result.stderr
    assert "step maintain failed" in result.stderr
    with engine.connect() as conn:
        summary = conn.execute(select(workers.c.summary)).scalar_one()
        fired = conn.execute(select(fires.c.schedule_id)).scalars().all()
    assert summary["failed_steps"] == ["backups", "maintain"]
    assert "error" in summary["backups"] and "error" in summary["maintain"]
    assert summary["reap"] == {"released": 0, "ids": []}
    assert fired == [made.id]
