"""Claimers racing: every task is claimed exactly once, whoever asks at the same moment."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, func, select, text

from ondeck.core.errors import Conflict, NothingClaimable
from ondeck.db.tables import events, tasks
from ondeck.work import backlog

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
THREADS = 8
TASKS = 500


def _fill(engine: Engine, count: int) -> None:
    with engine.begin() as conn:
        for i in range(count):
            backlog.create_task(conn, NOW, title=f"task {i}", priority=i % 10, actor="cli")


def test_eight_threads_claim_five_hundred_tasks_each_exactly_once(engine: Engine) -> None:
    _fill(engine, TASKS)
    claimed: list[tuple[int, str, int]] = []
    failures: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def worker(n: int) -> None:
        owner = f"thread:{n}"
        try:
            start.wait()
            while True:
                try:
                    with engine.begin() as conn:
                        task = backlog.claim_next(conn, NOW, owner=owner, actor="cli")
                except NothingClaimable:
                    return
                with lock:
                    claimed.append((task.id, owner, task.lease_token))
        except BaseException as exc:  # surfaced below: a thread must not fail silently
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures
    counts = Counter(task_id for task_id, _, _ in claimed)
    assert len(counts) == TASKS
    assert max(counts.values()) == 1, "a task was claimed twice"
    assert {token for _, _, token in claimed} == {1}
    with engine.connect() as conn:
        rows = conn.execute(select(tasks.c.id, tasks.c.status, tasks.c.lease_owner)).all()
        claims = conn.execute(
            select(func.count()).select_from(events).where(events.c.kind == "task.claimed")
        ).scalar_one()
    assert all(status == "RUNNING" for _, status, _ in rows)
    owners = {task_id: owner for task_id, _, owner in rows}
    assert all(owners[task_id] == owner for task_id, owner, _ in claimed)
    assert claims == TASKS
    if engine.dialect.name == "postgresql":
        # Not a requirement, but a sign SKIP LOCKED spread the work instead of serialising it.
        assert len({owner for _, owner, _ in claimed}) > 1


def test_two_claimers_of_one_task_one_wins(engine: Engine) -> None:
    _fill(engine, 1)
    results: list[str] = []
    start = threading.Barrier(THREADS)

    def worker(n: int) -> None:
        start.wait()
        try:
            with engine.begin() as conn:
                backlog.claim_task(conn, NOW, 1, owner=f"thread:{n}", actor="cli")
            results.append("won")
        except Conflict:
            results.append("conflict")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(results) == ["conflict"] * (THREADS - 1) + ["won"]


def test_claim_next_passes_over_a_task_another_claimer_holds_locked(engine: Engine) -> None:
    """PostgreSQL: SKIP LOCKED, so a claimer never waits behind another's open transaction."""
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite serialises writers at BEGIN: there is no row lock to pass over")
    _fill(engine, 2)
    with engine.connect() as first, engine.connect() as second, first.begin():
        taken = backlog.claim_next(first, NOW, owner="one", actor="cli")
        with second.begin():
            # Fail instead of hanging if the claim waited on the first one's lock.
            second.execute(text("SET LOCAL lock_timeout = '2s'"))
            other = backlog.claim_next(second, NOW, owner="two", actor="cli")
    assert {taken.id, other.id} == {1, 2}
