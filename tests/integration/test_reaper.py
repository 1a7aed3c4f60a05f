"""The reaper: silent holders' leases go back to READY after the grace period, and only those."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from sqlalchemy import Connection, Engine, text, update
from sqlalchemy.sql.dml import Update

from ondeck.core.models import TaskStatus
from ondeck.db.tables import tasks
from ondeck.entrypoints.jobs.loop import Jobs
from ondeck.host.settings import Settings
from ondeck.system import events
from ondeck.work import backlog
from ondeck.work.reaper import reap_stale_leases, reap_step

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
GRACE = timedelta(hours=6)
LEASE_END = NOW + timedelta(hours=1)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def reaper_log() -> Iterator[list[str]]:
    """What the reaper logs. On the logger itself: `logs.setup` may have stopped propagation."""
    logger = logging.getLogger("ondeck.reaper")
    handler, old_level = _Lines(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler.lines
    logger.removeHandler(handler)
    logger.setLevel(old_level)


def claimed(engine: Engine, owner: str = "claude:s1") -> backlog.Task:
    with engine.begin() as conn:
        task = backlog.create_task(conn, NOW, title="t", actor="cli")
        return backlog.claim_task(conn, NOW, task.id, owner=owner, duration="1h", actor="cli")


def status(engine: Engine, task_id: int) -> TaskStatus:
    with engine.connect() as conn:
        return backlog.get_task(conn, task_id).status


def tick_at(engine: Engine, settings: Settings, instant: datetime) -> dict[str, Any]:
    """One jobs tick with the clock moved to `instant` (the loop reads the clock itself)."""
    with time_machine.travel(instant, tick=False):
        return Jobs(engine=engine, settings=settings, steps=[("reap", reap_step)]).tick()


def test_it_releases_after_the_grace_period_and_not_before(
    engine: Engine, settings: Settings, reaper_log: list[str]
) -> None:
    assert settings.lease_grace == GRACE
    task = claimed(engine)

    summary = tick_at(engine, settings, LEASE_END + timedelta(hours=5, minutes=59))
    assert summary["reap"] == {"released": 0, "ids": []}
    assert status(engine, task.id) is TaskStatus.RUNNING
    assert reaper_log == []

    summary = tick_at(engine, settings, LEASE_END + timedelta(hours=6, minutes=1))
    assert summary["reap"] == {"released": 1, "ids": [task.id]}
    with engine.connect() as conn:
        after = backlog.get_task(conn, task.id)
        [event] = events.list_events(conn, kind="task.reaped")
    assert after.status is TaskStatus.READY
    assert (after.lease_owner, after.lease_until) == (None, None)
    assert after.lease_token == task.lease_token, "the token stays so the old holder is fenced"
    assert event.subject == f"task:{task.id}"
    assert event.actor == "jobs"
    assert event.at == LEASE_END + timedelta(hours=6, minutes=1)
    assert event.details == {
        "owner": "claude:s1",
        "lease_until": LEASE_END.isoformat(),
        "lease_token": task.lease_token,
        "grace": "6h",
    }
    assert reaper_log == [f"released 1 stale leases: ids [{task.id}]"]

    summary = tick_at(engine, settings, LEASE_END + timedelta(hours=6, minutes=2))
    assert summary["reap"] == {"released": 0, "ids": []}
    with engine.connect() as conn:
        assert len(events.list_events(conn, kind="task.reaped")) == 1


def test_between_lease_end_and_reaping_the_task_is_expired_not_running(engine: Engine) -> None:
    task = claimed(engine)
    late = LEASE_END + timedelta(hours=2)
    with engine.begin() as conn:
        assert reap_stale_leases(conn, late, GRACE) == []
        shown = backlog.get_task(conn, task.id).to_json(late, UTC)
    assert shown["status"] == "RUNNING"
    assert shown["expired"] is True


def test_it_releases_every_stale_lease_in_one_run_and_leaves_live_ones(engine: Engine) -> None:
    stale = [claimed(engine, owner=f"claude:{n}") for n in range(3)]
    with engine.begin() as conn:
        task = backlog.create_task(conn, NOW, title="live", actor="cli")
        live = backlog.claim_task(conn, NOW, task.id, owner="cli:a", duration="2d", actor="cli")
    with engine.begin() as conn:
        reaped = reap_stale_leases(conn, LEASE_END + timedelta(hours=7), GRACE)
    assert [r.task_id for r in reaped] == [t.id for t in stale]
    assert [r.owner for r in reaped] == ["claude:0", "claude:1", "claude:2"]
    assert status(engine, live.id) is TaskStatus.RUNNING


class _RaceBeforeWrite:
    """A connection on which another holder's change lands between the reaper's read and write."""

    def __init__(self, conn: Connection, change: Update) -> None:
        self.conn = conn
        self.change: Update | None = change

    def execute(self, statement: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(statement, Update) and self.change is not None:
            self.conn.execute(self.change)
            self.change = None
        return self.conn.execute(statement, *args, **kwargs)


@pytest.mark.parametrize(
    ("race", "values", "expected"),
    [
        ("renewed", {"lease_until": NOW + timedelta(days=1)}, TaskStatus.RUNNING),
        (
            "completed",
            {"status": "DONE", "lease_owner": None, "lease_until": None, "done_at": NOW},
            TaskStatus.DONE,
        ),
        ("retaken", {"lease_owner": "claude:s2", "lease_token": tasks.c.lease_token + 1}, None),
    ],
)
def test_a_lease_changed_between_read_and_write_is_never_touched(
    engine: Engine, race: str, values: dict[str, Any], expected: TaskStatus | None
) -> None:
    """The compare-and-set: River's rescuer overwrote jobs that finished in this window."""
    task = claimed(engine)
    change = update(tasks).where(tasks.c.id == task.id).values(**values)
    with engine.begin() as conn:
        raced = _RaceBeforeWrite(conn, change)
        reaped = reap_stale_leases(raced, LEASE_END + timedelta(hours=7), GRACE)  # type: ignore[arg-type]
    assert reaped == [], race
    with engine.connect() as conn:
        after = backlog.get_task(conn, task.id)
        assert events.list_events(conn, kind="task.reaped") == []
    assert after.status is (expected or TaskStatus.RUNNING)
    if race == "retaken":
        assert after.lease_owner == "claude:s2"


def test_a_holder_completing_right_now_is_skipped_not_overwritten(engine: Engine) -> None:
    """PostgreSQL: the holder's transaction has the row locked; the reaper passes it by."""
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite serialises writers at BEGIN: the reaper cannot run in between")
    task = claimed(engine)
    late = LEASE_END + timedelta(hours=7)
    with engine.connect() as holder, holder.begin():
        backlog.complete_task(holder, late, task.id, token=task.lease_token, actor="cli")
        with engine.connect() as jobs, jobs.begin():
            jobs.execute(text("SET LOCAL lock_timeout = '2s'"))
            assert reap_stale_leases(jobs, late, GRACE) == []
    assert status(engine, task.id) is TaskStatus.DONE
