"""Eight processes hammer claim / renew / complete / release on thousands of tasks while a
real `ondeck jobs` reaps every second with a 1 s grace.

Workers (tests/support/worker.py) take short leases (1-3 s), renew, complete, release, walk
away without a word (the reaper must take those back), and come back late with old tokens
or send a completion twice (those must be refused). Afterwards each task's events are
replayed as a state machine: no illegal transition, never completed twice, never two
holders at once, tokens growing by one per claim, reaps only after lease end + grace. The
replay's final state must be the table's, every success a worker saw must be in the record
(and nothing else), every refusal must be of a lease that had really ended, and the counts
must add up.

Sizes: ONDECK_FAULT_HAMMER_SECONDS (default 15, the full 60 under ONDECK_FAULT_FULL=1)
and ONDECK_FAULT_HAMMER_TASKS (5000).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, insert, select

from ondeck.core import clock
from ondeck.db.tables import events as events_table
from ondeck.db.tables import tasks
from ondeck.system import events
from support.procs import Procs, knob, ondeck_env, wait_for

pytestmark = pytest.mark.slow

HAMMER = knob("HAMMER_SECONDS", 15, 60)
TASKS = int(knob("HAMMER_TASKS", 5000, 5000))
WORKERS = 8
GRACE = timedelta(seconds=1)
# Outcomes a worker may see: anything else (a generic conflict, an internal error) is a bug.
ALLOWED = {"ok", "lease_lost", "nothing_claimable", "unavailable"}


def _fill(engine: Engine, count: int) -> None:
    """`count` READY tasks with their `task.created` events, in one go."""
    now = clock.now()
    rows = [
        {
            "title": f"task {i}",
            "status": "READY",
            "priority": i % 10,
            "due_on": (now + timedelta(days=i % 7)).date() if i % 3 else None,
            "created_at": now,
            "updated_at": now,
        }
        for i in range(count)
    ]
    with engine.begin() as conn:
        conn.execute(insert(tasks), rows)
        ids = conn.execute(select(tasks.c.id)).scalars().all()
        events.record_many(
            conn,
            now,
            [{"actor": "cli", "kind": "task.created", "subject": f"task:{i}"} for i in ids],
        )


@dataclass
class Lease:
    status: str = "READY"
    owner: str | None = None
    token: int = 0
    until: datetime | None = None


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def replay(rows: list[Any]) -> tuple[dict[int, Lease], dict[str, Counter[tuple[int, int]]]]:
    """Each task's events in order as a state machine; asserts every transition is legal.

    Returns the final state per task and, per kind, how often each (task, token) occurs.
    """
    state: dict[int, Lease] = {}
    seen: dict[str, Counter[tuple[int, int]]] = {}
    for row in rows:
        task_id = int(row.subject.split(":")[1])
        d = row.details
        where = f"task {task_id}, event {row.id} {row.kind} {d}"
        if row.kind == "task.created":
            assert task_id not in state, where
            state[task_id] = Lease()
            continue
        s = state[task_id]
        token = d.get("token", d.get("lease_token"))
        seen.setdefault(row.kind, Counter())[(task_id, token)] += 1
        if row.kind == "task.claimed":
            assert s.status == "READY", f"claimed while {s.status} (two holders): {where}"
            assert token == s.token + 1, f"token after {s.token}: {where}"
            state[task_id] = Lease("RUNNING", d["owner"], token, _instant(d["lease_until"]))
            continue
        assert s.status == "RUNNING", f"{row.kind} while {s.status}: {where}"
        assert (d["owner"], token) == (s.owner, s.token), f"not the holder's lease: {where}"
        if row.kind == "task.renewed":
            s.until = _instant(d["lease_until"])
        elif row.kind == "task.completed":
            assert d["by_hand"] is False, where
            state[task_id] = Lease("DONE", None, s.token)
        elif row.kind == "task.released":
            state[task_id] = Lease("READY", None, s.token)
        elif row.kind == "task.reaped":
            assert s.until is not None and _instant(d["lease_until"]) == s.until, where
            assert row.at - GRACE > s.until, f"reaped within the grace period: {where}"
            state[task_id] = Lease("READY", None, s.token)
        else:
            raise AssertionError(f"unexpected event: {where}")
    return state, seen


def _records(folder: Path) -> list[dict[str, Any]]:
    found = []
    for path in sorted(folder.glob("hammer-*.jsonl")):
        owner = "hammer:" + path.stem.split("-", 1)[1]
        found += [{**json.loads(line), "owner": owner} for line in path.read_text().splitlines()]
    return found


def test_eight_processes_hammering_leases_while_the_reaper_runs_leave_valid_histories(
    db_url: str, engine: Engine, tmp_path: Path, procs: Procs, report: dict[str, object]
) -> None:
    _fill(engine, TASKS)
    env = ondeck_env(db_url, tmp_path, tick=1.0, grace="1s")
    jobs = procs.ondeck("jobs", "jobs", env=env)
    wait_for(lambda: "tick done" in jobs.text(), timeout=30, what="the reaper's first tick")
    out = tmp_path / "hammer"
    out.mkdir()
    workers = [
        procs.worker(
            f"hammer-{n}",
            "hammer",
            db_url,
            str(n),
            str(HAMMER),
            str(1000 + n),
            str(out / f"hammer-{n}.jsonl"),
            env=env,
        )
        for n in range(WORKERS)
    ]
    for worker in workers:
        assert worker.wait(timeout=HAMMER + 120) == 0, worker.text()[-3000:]

    # The leases the workers still held when they stopped are the reaper's: all go back.
    def settled() -> bool:
        with engine.connect() as conn:
            running = conn.execute(
                select(func.count()).where(tasks.c.status == "RUNNING")
            ).scalar_one()
        return running == 0

    wait_for(settled, timeout=30, interval=0.2, what="the reaper to release every lease")
    assert jobs.stop() == 0, jobs.text()[-3000:]

    with engine.connect() as conn:
        rows = conn.execute(
            select(events_table)
            .where(events_table.c.subject.like("task:%"))
            .order_by(events_table.c.id)
        ).all()
        table = {
            r.id: r
            for r in conn.execute(
                select(tasks.c.id, tasks.c.status, tasks.c.lease_owner, tasks.c.lease_token)
            )
        }
    state, seen = replay(rows)

    # The replay ends where the table is.
    assert set(state) == set(table)
    for task_id, lease in state.items():
        row = table[task_id]
        assert (row.status, row.lease_owner, row.lease_token) == (
            lease.status,
            lease.owner,
            lease.token,
        ), f"task {task_id}: table {row} but events say {lease}"

    records = _records(out)
    outcomes = Counter(r["result"] for r in records)
    assert set(outcomes) <= ALLOWED, [r for r in records if r["result"] not in ALLOWED][:5]

    # Every success a worker saw is in the record, exactly, and nothing else is.
    def ok(*ops: str) -> Counter[tuple[int, int]]:
        return Counter(
            (r["task"], r["token"]) for r in records if r["op"] in ops and r["result"] == "ok"
        )

    assert ok("claim") == seen.get("task.claimed", Counter())
    assert ok("complete", "late_complete") == seen.get("task.completed", Counter())
    assert ok("renew") == seen.get("task.renewed", Counter())
    assert ok("release") == seen.get("task.released", Counter())
    claims = {
        (r["task"], r["token"]): r["owner"]
        for r in records
        if r["op"] == "claim" and r["result"] == "ok"
    }
    claimed_by = {
        (int(r.subject.split(":")[1]), r.details["token"]): r.details["owner"]
        for r in rows
        if r.kind == "task.claimed"
    }
    assert claims == claimed_by
    # A refusal is only ever of a lease that had really ended.
    ended = set()
    for kind in ("task.completed", "task.released", "task.reaped"):
        ended |= set(seen.get(kind, Counter()))
    refused = [r for r in records if r["result"] == "lease_lost"]
    assert all((r["task"], r["token"]) in ended for r in refused), refused[:5]
    assert max(seen.get("task.completed", Counter({None: 1})).values()) == 1

    # The counts add up.
    statuses = Counter(lease.status for lease in state.values())
    claimed = sum(seen.get("task.claimed", Counter()).values())
    completed = sum(seen.get("task.completed", Counter()).values())
    released = sum(seen.get("task.released", Counter()).values())
    reaped = sum(seen.get("task.reaped", Counter()).values())
    assert statuses["RUNNING"] == 0
    assert claimed == completed + released + reaped, "a lease that neither ended nor stayed"
    assert statuses["DONE"] == completed
    assert statuses["READY"] + statuses["DONE"] == TASKS
    assert reaped > 0 and refused, "the run never exercised the reaper and fencing"
    report.update(
        seconds=HAMMER,
        tasks=TASKS,
        calls=len(records),
        calls_per_s=round(len(records) / HAMMER),
        outcomes=dict(outcomes),
        claims=claimed,
        completed=completed,
        released=released,
        reaped=reaped,
        renewed=sum(seen.get("task.renewed", Counter()).values()),
        refused_late=len(refused),
        final=dict(statuses),
    )
