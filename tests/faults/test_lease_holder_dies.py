"""A lease holder is killed: its task shows expired, the reaper (a real `ondeck jobs`) gives
it back after the grace period naming the dead holder, and the holder's late completion is
refused with "lease lost", before and after somebody else took the task."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from ondeck.core import clock
from ondeck.core.models import TaskStatus
from ondeck.db.tables import events
from ondeck.work import backlog
from support.procs import Procs, ondeck_env, run_ondeck, wait_for

pytestmark = pytest.mark.slow

LEASE = timedelta(seconds=2)
GRACE = timedelta(seconds=3)


def _show(task_id: int, env: dict[str, str]) -> tuple[dict, float]:
    """`ondeck task show --json` in its own process, and the wall time when it answered."""
    result = run_ondeck("task", "show", str(task_id), "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["task"], time.time()


def _history(engine: Engine, task_id: int) -> list[tuple[str, dict]]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(events.c.kind, events.c.details)
            .where(events.c.subject == f"task:{task_id}")
            .order_by(events.c.id)
        ).all()
    return [(kind, details) for kind, details in rows]


def test_a_killed_holder_s_task_expires_is_reaped_after_the_grace_and_its_late_complete_refused(
    db_url: str, engine: Engine, tmp_path: Path, procs: Procs, report: dict[str, object]
) -> None:
    with engine.begin() as conn:
        task = backlog.create_task(conn, clock.now(), title="work its holder dies on", actor="cli")
    env = ondeck_env(db_url, tmp_path, tick=0.5, grace=f"{GRACE.seconds}s")
    owner = "holder:doomed"
    holder = procs.worker(
        "holder", "hold", db_url, str(task.id), owner, f"{LEASE.seconds}s", env=env
    )
    line = wait_for(lambda: holder.text().strip(), timeout=30, what="the holder's claim")
    lease = json.loads(line.splitlines()[0])
    token = lease["token"]
    lease_until = datetime.fromisoformat(lease["lease_until"]).astimezone(UTC)
    holder.kill9()

    shown, at = _show(task.id, env)
    if at < lease_until.timestamp():
        assert (shown["status"], shown["expired"]) == ("RUNNING", False)

    # Past the lease end, before any reaper runs: still RUNNING, but shown as expired, holder
    # named. The jobs loop starts only after these looks, so a slow machine cannot let the
    # reaper get there first (the looks race nothing but the lease end, which has passed).
    time.sleep(max(0.0, lease_until.timestamp() - time.time()) + 0.2)
    shown, at = _show(task.id, env)
    assert shown["status"] == "RUNNING"
    assert shown["expired"] is True
    assert shown["lease_owner"] == owner
    context = run_ondeck("context", "--format", "json", env=env)
    assert context.returncode == 0, context.stderr
    warnings = {w["code"]: w["message"] for w in json.loads(context.stdout)["warnings"]}
    assert owner in warnings["stale_leases"]
    jobs = procs.ondeck("jobs", "jobs", env=env)

    # The reaper gives it back after the grace, and says whose lease it was.
    wait_for(
        lambda: dict(_history(engine, task.id)).get("task.reaped"),
        timeout=GRACE.seconds + 15,
        what="the reaper",
    )
    with engine.connect() as conn:
        row = backlog.get_task_row(conn, task.id)
        reaped_at = conn.execute(
            select(events.c.at).where(
                events.c.subject == f"task:{task.id}", events.c.kind == "task.reaped"
            )
        ).scalar_one()
    assert row is not None
    assert (row.status, row.lease_owner, row.lease_until) == (TaskStatus.READY, None, None)
    assert reaped_at > lease_until + GRACE, "reaped before the grace period was over"
    reaped = dict(_history(engine, task.id))["task.reaped"]
    assert reaped["owner"] == owner
    assert reaped["lease_token"] == token
    # The jobs process logs the release after its transaction commits: the event can be read
    # here a moment before the line is written (on a busy machine, by more than a moment).
    logged = f"released 1 stale leases: ids [{task.id}]"
    wait_for(lambda: logged in jobs.text(), timeout=15, what="the reaper's log line")

    # The holder comes back: its completion with its old token is refused.
    late = run_ondeck("task", "done", str(task.id), "--token", str(token), env=env)
    assert late.returncode == 3, late.stderr
    assert "lease lost" in late.stderr
    # Somebody else takes it; the old token is still refused; the new holder finishes.
    taken = run_ondeck("task", "claim", str(task.id), "--owner", "holder:next", "--json", env=env)
    assert taken.returncode == 0, taken.stderr
    new_token = json.loads(taken.stdout)["lease_token"]
    assert new_token > token
    later = run_ondeck("task", "done", str(task.id), "--token", str(token), env=env)
    assert later.returncode == 3
    assert "lease lost" in later.stderr
    finished = run_ondeck("task", "done", str(task.id), "--token", str(new_token), env=env)
    assert finished.returncode == 0, finished.stderr
    assert jobs.stop() == 0

    kinds = [
        (kind, d.get("owner"), d.get("token", d.get("lease_token")))
        for kind, d in _history(engine, task.id)
    ]
    assert kinds == [
        ("task.created", None, None),
        ("task.claimed", owner, token),
        ("task.reaped", owner, token),
        ("task.claimed", "holder:next", new_token),
        ("task.completed", "holder:next", new_token),
    ]
    report.update(
        lease_end_to_reaped_s=round((reaped_at - lease_until).total_seconds(), 2),
        grace_s=GRACE.seconds,
    )
