"""What a moved clock must not hide, through real `ondeck` processes, the clock moved from
outside with libfaketime, in Seoul.

`jobs --once` with a clock three days ahead, then `ondeck context` with the real clock:
   the loop is not running and the heartbeat from the future is named, with both instants.
A 15 min lease, one tick, seven hours later: not "released 45 min ago" while RUNNING.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from support.procs import at_time, ondeck_env, run_ondeck

# Real instants near the present would make the test depend on the day it runs: everything
# happens at fixed faked instants instead (libfaketime's absolute start, then real time).
T0 = datetime(2026, 6, 15, 0, 0, tzinfo=UTC)  # 09:00 in Seoul


def _env(db_url: str, tmp_path: Path) -> dict[str, str]:
    return {**ondeck_env(db_url, tmp_path, tick=60), "ONDECK_TZ": "Asia/Seoul"}


def _run(env: dict[str, str], at: datetime, *args: str) -> str:
    done = run_ondeck(*args, env=at_time(env, at))
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_a_tick_from_three_days_ahead_does_not_hide_the_dead_loop(
    db_url: str, tmp_path: Path
) -> None:
    env = _env(db_url, tmp_path)
    _run(env, T0, "schedule", "add", "daily report", "--rule", "daily")
    _run(env, T0 + timedelta(days=3), "jobs", "--once")
    context = json.loads(_run(env, T0 + timedelta(minutes=5), "context", "--format", "json"))
    warnings = {w["code"]: w["message"] for w in context["warnings"]}
    assert "jobs_not_running" in warnings
    assert "2026-06-18T09:00" in warnings["clock_skew"]  # the heartbeat, in Seoul
    assert "2026-06-15T09:05" in warnings["clock_skew"]  # and this clock's now
    assert "backup_stale" in warnings and "in the future" in warnings["backup_stale"]
    assert "fired_early" in warnings
    assert context["jobs"]["ticking"] is False


@pytest.mark.slow
def test_seven_hours_after_a_15_minute_lease_nothing_claims_it_was_released(
    db_url: str, tmp_path: Path
) -> None:
    env = _env(db_url, tmp_path)
    _run(env, T0, "task", "add", "deploy")
    _run(env, T0, "task", "claim", "1", "--owner", "cli:me", "--for", "15m")
    _run(env, T0 + timedelta(seconds=30), "jobs", "--once")
    later = T0 + timedelta(minutes=420)
    markdown = _run(env, later, "context")
    assert "released 45 min ago" not in markdown
    assert "past the 6 h grace since 2026-06-15 15:15 (45 min ago)" in markdown
    assert "nothing will release it until the loop runs" in markdown
    shown = _run(env, later, "task", "show", "1")
    assert "RUNNING (expired)" in shown and "nothing will release it" in shown
    _run(env, later, "jobs", "--once")  # the loop comes back: its reaper releases it
    task = json.loads(_run(env, later + timedelta(seconds=5), "task", "show", "1", "--json"))
    assert task["task"]["status"] == "READY" and task["task"]["lease"] is None
