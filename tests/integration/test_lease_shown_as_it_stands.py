"""A lease is shown as it stands, by one judgement, everywhere.

The case it guards: claim with `--for 15m`, one jobs tick, then seven hours later the context said
"EXPIRED 7 h ago, holder silent; released 45 min ago" while the task was still RUNNING:
nothing had released it, and with the loop silent nothing would. Each state is checked on
every surface that shows a lease (tests/support/surfaces.py): context Markdown, JSON and
hook; CLI `task list`, `task show` and `--json`; dashboard Today, Backlog and task page;
the API's task and context; the MCP tools.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from ondeck.host.settings import Settings
from ondeck.system import heartbeat
from ondeck.work import backlog, backlog_leases
from ondeck.work.lease_state import LeaseState, lease_of, release_due
from ondeck.work.reaper import reap_stale_leases
from support.surfaces import read_all, task_objects, texts

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
GRACE = timedelta(hours=6)
# The lease ends at 09:15; the reaper may release it from 15:15 on.
LEASE_END = NOW + timedelta(minutes=15)
RELEASE = "2026-06-15 15:15"


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONDECK_TZ", "UTC")
    monkeypatch.setenv("COLUMNS", "400")  # a table cell on one line


def _claimed(engine: Engine) -> int:
    with engine.begin() as conn:
        task = backlog.create_task(conn, NOW, title="migrate the 데이터", actor="cli")
        backlog_leases.claim_task(
            conn, NOW, task.id, owner="claude:s1", duration="15m", actor="cli"
        )
    return task.id


def _beat(engine: Engine, at: datetime, settings: Settings) -> None:
    with engine.begin() as conn:
        heartbeat.beat(
            conn,
            at,
            name="jobs@test:1",
            started_at=NOW,
            tick_ms=1.0,
            summary={},
            **heartbeat.settings_of(settings),
        )


def _check_everywhere(
    found: dict[str, Any], task_id: int, state: LeaseState, ticking: bool, say: str, brief: str
) -> None:
    for where, task in task_objects(found, task_id).items():
        assert task["status"] == "RUNNING", where
        assert task["lease"]["state"] == state.value, where
        assert task["lease"]["jobs_ticking"] is ticking, where
        assert say in task["lease"]["summary"], where
    for where, text in texts(found).items():
        assert say in text, where
        # Never a release in the past tense for a task that is still RUNNING.
        assert not re.search(r"released \d+ (s|min|h|days) ago", text), where
    assert say in found[f"web /tasks/{task_id}"]
    assert brief in found["cli task list"]


def test_expired_within_the_grace_with_a_live_loop_says_when_the_loop_releases_it(
    engine: Engine, settings: Settings, db_url: str
) -> None:
    task_id = _claimed(engine)
    now = NOW + timedelta(hours=1)
    _beat(engine, now - timedelta(seconds=10), settings)
    found = read_all(engine, settings, db_url, now, task_id=task_id)
    _check_everywhere(
        found,
        task_id,
        LeaseState.EXPIRED,
        True,
        f"the jobs loop releases it at {RELEASE} (in 5 h) unless the holder renews",
        f"released {RELEASE} (in 5 h)",
    )


def test_past_the_grace_with_a_live_loop_is_due_for_release_at_the_next_tick(
    engine: Engine, settings: Settings, db_url: str
) -> None:
    task_id = _claimed(engine)
    now = NOW + timedelta(minutes=420)  # 45 min past the grace
    _beat(engine, now - timedelta(seconds=10), settings)
    found = read_all(engine, settings, db_url, now, task_id=task_id)
    _check_everywhere(
        found,
        task_id,
        LeaseState.RELEASE_DUE,
        True,
        f"EXPIRED 7 h ago, holder silent; past the 6 h grace since {RELEASE} (45 min ago): "
        "due for release at the next jobs tick",
        "released at the next jobs tick",
    )


def test_past_the_grace_with_a_silent_loop_says_nothing_will_release_it(
    engine: Engine, settings: Settings, db_url: str
) -> None:
    """One tick right after the claim, then seven hours of silence."""
    task_id = _claimed(engine)
    _beat(engine, NOW + timedelta(seconds=5), settings)
    now = NOW + timedelta(minutes=420)
    found = read_all(engine, settings, db_url, now, task_id=task_id)
    _check_everywhere(
        found,
        task_id,
        LeaseState.RELEASE_DUE,
        False,
        "but the jobs loop has not ticked since 2026-06-15T09:00:05+00:00 (7 h ago): "
        "nothing will release it until the loop runs",
        "nothing releases it (jobs loop not running)",
    )
    warning = {w["code"]: w["message"] for w in found["context.json"]["warnings"]}
    assert "nothing will release them" in warning["stale_leases"]
    assert "jobs_not_running" in warning


def test_expired_within_the_grace_with_a_silent_loop_promises_no_release(
    engine: Engine, settings: Settings, db_url: str
) -> None:
    task_id = _claimed(engine)
    now = NOW + timedelta(hours=1)  # no jobs loop ever ticked
    found = read_all(engine, settings, db_url, now, task_id=task_id)
    _check_everywhere(
        found,
        task_id,
        LeaseState.EXPIRED,
        False,
        f"due for release at {RELEASE} (in 5 h), but the jobs loop has never ticked: "
        "nothing will release it until the loop runs",
        "nothing releases it (jobs loop not running)",
    )


def test_a_running_lease_is_shown_with_its_end_and_no_heartbeat_is_read_for_it(
    engine: Engine, settings: Settings, db_url: str
) -> None:
    task_id = _claimed(engine)
    found = read_all(engine, settings, db_url, NOW + timedelta(minutes=5), task_id=task_id)
    for where, task in task_objects(found, task_id).items():
        assert task["lease"]["state"] == "running", where
        assert task["lease"]["jobs_ticking"] is None, where
        assert "lease until 2026-06-15 09:15 (in 10 min)" in task["lease"]["summary"], where
    for where, text in texts(found).items():
        assert "EXPIRED" not in text, where
    assert "claude:s1 until 2026-06-15 09:15" in found["cli task list"]


def test_the_release_predicate_is_the_reapers(engine: Engine) -> None:
    """`release_due` says "the next tick releases it" exactly when the reaper would."""
    task_id = _claimed(engine)
    for after in (
        GRACE,
        GRACE - timedelta(seconds=1),
        GRACE + timedelta(microseconds=1),
        GRACE + timedelta(seconds=1),
    ):
        now = LEASE_END + after
        with engine.connect() as conn:
            task = backlog.get_task(conn, task_id)
        predicted = lease_of(task, now, GRACE, None).state is LeaseState.RELEASE_DUE
        assert predicted == release_due(LEASE_END, now, GRACE)
        with engine.connect() as conn:
            reaped = reap_stale_leases(conn, now, GRACE)
            conn.rollback()  # ask only: the lease stays for the next instant
        assert bool(reaped) == predicted, after


def test_the_live_loops_own_grace_decides_the_release_time(
    engine: Engine, settings: Settings
) -> None:
    """A jobs process with a 1 h grace releases at 10:15, whatever this process assumes."""
    task_id = _claimed(engine)
    now = NOW + timedelta(minutes=90)
    short = settings.model_copy(update={"lease_grace": timedelta(hours=1)})
    _beat(engine, now - timedelta(seconds=10), short)
    with engine.connect() as conn:
        task = backlog.get_task(conn, task_id)
        jobs = heartbeat.jobs_health(conn, now, tick_seconds=60)
    lease = lease_of(task, now, GRACE, jobs)
    assert lease.state is LeaseState.RELEASE_DUE
    assert lease.releases_at == LEASE_END + timedelta(hours=1)
