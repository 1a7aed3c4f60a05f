"""Claim throughput on PostgreSQL: P processes claim-next and complete N tasks until none is left.

Each claim and each completion is its own transaction through the real services
(`backlog.claim_next`, `backlog.complete_task`), events and fencing tokens included: on
PostgreSQL each is one statement, run on a held connection that commits every statement
(`db.engine.autocommitting`), as a long-running worker would. Reports claims per second
(wall time from the start signal to the last worker's end) and the number of double claims:
tasks claimed more than once, counted both from what the workers got and from the
`task.claimed` events in the database. It must be 0.

Run: .venv/bin/python bench/claims.py [--tasks 20000] [--procs 4] [--url URL]
Without --url it starts a throwaway cluster (tests/support/pg.py). With --url it adds its
tasks under a project of its own in that database and leaves the rest alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing as mp
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, func, insert, select, text
from sqlalchemy.engine import make_url

from ondeck.core.errors import NothingClaimable
from ondeck.db import open_database
from ondeck.db.engine import autocommitting, make_engine
from ondeck.db.tables import events, tasks
from ondeck.work import backlog

ROOT = Path(__file__).resolve().parents[1]
NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


def _pg_support() -> Any:
    """The test suite's throwaway-cluster module, loaded by path (tests/ is not a package)."""
    spec = importlib.util.spec_from_file_location("ondeck_bench_pg", ROOT / "tests/support/pg.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


@contextmanager
def database(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    pg = _pg_support()
    bindir = pg.find_bindir()
    if bindir is None:
        raise SystemExit("no PostgreSQL server binaries found: install postgresql or pass --url")
    cluster = pg.start_cluster(bindir)
    try:
        admin = create_engine(cluster.admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text("CREATE DATABASE bench_claims"))
        admin.dispose()
        yield make_url(cluster.admin_url).set(database="bench_claims").render_as_string(False)
    finally:
        cluster.stop()


def fill(url: str, project: str, count: int) -> None:
    engine = open_database(url)
    rows = [
        {
            "title": f"bench task {i}",
            "priority": i % 10,
            "project": project,
            "created_at": NOW,
            "updated_at": NOW,
        }
        for i in range(count)
    ]
    with engine.begin() as conn:
        for start in range(0, count, 5000):
            conn.execute(insert(tasks), rows[start : start + 5000])
    with engine.begin() as conn:
        # What autovacuum does soon after a bulk load; without statistics the planner may
        # read every READY row and sort them for each claim instead of walking ix_tasks_ready.
        conn.execute(text("ANALYZE tasks"))
    engine.dispose()


def worker(
    url: str, project: str, n: int, start: Any, results: Any, mode: str = "separate"
) -> None:
    """One worker process: a held connection on which each claim and each completion commits
    by itself (each is one statement on PostgreSQL, its event included).

    mode "separate": `claim_next`, then `complete_task`, per task. Mode "next": `claim_next`
    once, then `complete_and_claim_next` per task (done and the next one in one call)."""
    engine = make_engine(url, pool_size=1, max_overflow=0)
    owner = f"bench:{n}"
    got: list[int] = []
    with autocommitting(engine) as conn:  # connected before the start signal
        start.wait()
        task = None
        while True:
            if task is None:
                try:
                    task = backlog.claim_next(
                        conn, NOW, owner=owner, project=project, actor="bench"
                    )
                except NothingClaimable:
                    # SKIP LOCKED passes over rows other claimers hold right now: only stop
                    # when no READY task is left at all.
                    left = conn.execute(
                        select(func.count())
                        .select_from(tasks)
                        .where(tasks.c.project == project, tasks.c.status == "READY")
                    ).scalar_one()
                    if left == 0:
                        break
                    continue
            got.append(task.id)
            if mode == "next":
                _, task = backlog.complete_and_claim_next(
                    conn,
                    NOW,
                    task.id,
                    token=task.lease_token,
                    owner=owner,
                    project=project,
                    actor="bench",
                )
            else:
                backlog.complete_task(conn, NOW, task.id, token=task.lease_token, actor="bench")
                task = None
    engine.dispose()
    results.put(got)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--url", help="a PostgreSQL database URL (default: a throwaway cluster)")
    args = parser.parse_args()
    project = f"bench-{uuid.uuid4().hex[:8]}"
    with database(args.url) as url:
        fill(url, project, args.tasks)
        ctx = mp.get_context("spawn")
        start = ctx.Barrier(args.procs + 1)
        results = ctx.Queue()
        procs = [
            ctx.Process(target=worker, args=(url, project, n, start, results))
            for n in range(args.procs)
        ]
        for proc in procs:
            proc.start()
        start.wait()
        began = time.perf_counter()
        claimed: list[int] = []
        for _ in procs:
            claimed.extend(results.get(timeout=3600))
        elapsed = time.perf_counter() - began
        for proc in procs:
            proc.join()
        engine = make_engine(url)
        with engine.connect() as conn:
            ids = select(tasks.c.id).where(tasks.c.project == project)
            per_task = (
                select(events.c.subject, func.count().label("n"))
                .where(events.c.kind == "task.claimed", events.c.actor == "bench")
                .group_by(events.c.subject)
                .subquery()
            )
            recorded_doubles = conn.execute(
                select(func.count()).select_from(per_task).where(per_task.c.n > 1)
            ).scalar_one()
            not_done = conn.execute(
                select(func.count())
                .select_from(tasks)
                .where(tasks.c.id.in_(ids), tasks.c.status != "DONE")
            ).scalar_one()
        engine.dispose()
    counts = Counter(claimed)
    summary = {
        "database": "postgresql",
        "processes": args.procs,
        "tasks": args.tasks,
        "claims": len(claimed),
        "seconds": round(elapsed, 2),
        "claims_per_second": round(len(claimed) / elapsed, 1),
        "double_claims": sum(1 for n in counts.values() if n > 1),
        "double_claims_in_events": recorded_doubles,
        "tasks_not_done": not_done,
        "python": sys.version.split()[0],
    }
    print(json.dumps(summary, indent=2))
    if summary["double_claims"] or recorded_doubles or not_done or len(claimed) != args.tasks:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
