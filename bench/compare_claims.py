"""Claims side by side on one throwaway PostgreSQL: ondeck, Procrastinate, and a bare psycopg
loop (the limit for this kind of design), each with N jobs and P worker processes that take
one job, mark it done, and take the next, in one run.

- ondeck: `backlog_leases.claim_next` + `backlog_leases.complete_task` per job, with their
  events and fencing tokens, each one statement committed by itself on a held connection (the worker
  of bench/claims.py, imported).
- ondeck_next: the same worker taking its first job with `claim_next`, then each next one
  with `backlog_leases.complete_and_claim_next` (done, and the next please: one statement,
  both events).
- Procrastinate (PyPI `procrastinate`, the `bench` extra): a no-op task, N jobs deferred in
  one batch, P processes each running `app.run_worker_async(wait=False, concurrency=1)`.
- bare: per item one `UPDATE … WHERE id = (SELECT … FOR UPDATE SKIP LOCKED LIMIT 1)
  RETURNING id` and one `UPDATE … SET status = 'DONE'`, autocommit, nothing else.

Throughput is N / wall time from the start signal (every worker connected and waiting) to
the last worker's end. Double takes are counted from what the workers report (and, for
ondeck and Procrastinate, from their own event tables); each must be 0. Every round uses
fresh databases; the figures are per round and the median of the rounds; the ratios are of
figures from the same round.

Run: .venv/bin/python bench/compare_claims.py [--jobs 20000] [--procs 4] [--rounds 3]
                                             [--durable] [--pg-url ADMIN_URL] [--json FILE]
`--durable` turns fsync and synchronous commits back on in the throwaway cluster (which the
test suite starts with them off), so that each commit waits for the disk as in production.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing as mp
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _stores import pg
from claims import fill
from claims import worker as ondeck_worker
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.engine import make_url

from ondeck.db.engine import make_engine
from ondeck.db.tables import events, tasks

SYSTEMS = ("ondeck", "ondeck_next", "procrastinate", "bare")


# --- databases --------------------------------------------------------------------------


def new_database(admin_url: str, prefix: str) -> str:
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_database(admin_url: str, url: str) -> None:
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {make_url(url).database} WITH (FORCE)"))
    admin.dispose()


def make_durable(cluster: Any) -> None:
    """Restart the throwaway cluster with fsync, synchronous_commit and full_page_writes on.

    tests/support/pg.py starts it with them off as command-line options, which ALTER SYSTEM
    cannot override: only a restart without them brings commits that wait for the disk.
    """
    pg_ctl = str(cluster.bindir / "pg_ctl")
    cluster._run(pg_ctl, "-D", str(cluster.data), "-m", "fast", "-w", "stop")
    options = " ".join(
        [
            f"-p {cluster.port}",
            "-c listen_addresses=127.0.0.1",
            f"-c unix_socket_directories={cluster.root}",
            "-c max_connections=300",
            "-c shared_buffers=128MB",
        ]
    )
    log = str(cluster.root / "log")
    cluster._run(pg_ctl, "-D", str(cluster.data), "-l", log, "-o", options, "-w", "start")
    admin = create_engine(cluster.admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        shown = {
            name: conn.execute(text(f"SHOW {name}")).scalar_one()
            for name in ("fsync", "synchronous_commit", "full_page_writes")
        }
    admin.dispose()
    assert set(shown.values()) == {"on"}, shown
    print(f"durable settings: {shown}", flush=True)


def libpq(url: str) -> str:
    """The SQLAlchemy URL as a plain libpq one (psycopg and Procrastinate take those)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


# --- the bare loop ----------------------------------------------------------------------

BARE_SCHEMA = """
CREATE TABLE bare_jobs (
    id bigserial PRIMARY KEY,
    status text NOT NULL DEFAULT 'READY',
    owner text,
    updated_at timestamptz
);
CREATE INDEX bare_jobs_ready ON bare_jobs (id) WHERE status = 'READY';
"""
BARE_CLAIM = """
UPDATE bare_jobs SET status = 'RUNNING', owner = %s, updated_at = now()
WHERE id = (SELECT id FROM bare_jobs WHERE status = 'READY' ORDER BY id
            FOR UPDATE SKIP LOCKED LIMIT 1)
RETURNING id
"""
BARE_DONE = "UPDATE bare_jobs SET status = 'DONE', updated_at = now() WHERE id = %s"


def bare_fill(url: str, count: int) -> None:
    import psycopg

    with psycopg.connect(libpq(url), autocommit=True) as conn:
        conn.execute(BARE_SCHEMA)
        conn.execute(
            "INSERT INTO bare_jobs (status) SELECT 'READY' FROM generate_series(1, %s)", [count]
        )
        conn.execute("ANALYZE bare_jobs")


def bare_worker(url: str, n: int, start: Any, results: Any) -> None:
    import psycopg

    got: list[int] = []
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        start.wait()
        while True:
            row = conn.execute(BARE_CLAIM, [f"bare:{n}"]).fetchone()
            if row is None:
                left = conn.execute("SELECT count(*) FROM bare_jobs WHERE status = 'READY'")
                if left.fetchone()[0] == 0:  # type: ignore[index]
                    break
                continue  # SKIP LOCKED passed over rows others held: look again
            got.append(row[0])
            conn.execute(BARE_DONE, [row[0]])
    results.put(got)


# --- Procrastinate ----------------------------------------------------------------------


def procrastinate_app(url: str) -> Any:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=libpq(url)))
    return app


def procrastinate_fill(url: str, count: int) -> None:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.SyncPsycopgConnector(conninfo=libpq(url)))

    @app.task(name="noop")
    def noop() -> None:
        pass

    with app.open():
        app.schema_manager.apply_schema()
        for begin in range(0, count, 5000):
            noop.batch_defer(*[{} for _ in range(min(5000, count - begin))])


def procrastinate_worker(url: str, n: int, start: Any, results: Any) -> None:
    logging.getLogger("procrastinate").setLevel(logging.ERROR)
    app = procrastinate_app(url)
    done: list[int] = []

    @app.task(name="noop", pass_context=True)
    def noop(context: Any) -> None:
        done.append(context.job.id)

    async def main() -> None:
        async with app.open_async():
            await app.check_connection_async()  # connected before the start signal
            start.wait()
            await app.run_worker_async(
                name=f"bench-{n}", concurrency=1, wait=False, install_signal_handlers=False
            )

    asyncio.run(main())
    results.put(done)


# --- one system, one round ---------------------------------------------------------------

Args = Callable[[int, Any, Any], tuple[Any, ...]]


def run_workers(target: Callable[..., None], args: Args, procs: int) -> tuple[float, list[int]]:
    """Start `procs` workers, release them together, and time them until the last is done."""
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(procs + 1)
    results = ctx.Queue()
    workers = [ctx.Process(target=target, args=args(n, start, results)) for n in range(procs)]
    for proc in workers:
        proc.start()
    start.wait()
    began = time.perf_counter()
    taken: list[int] = []
    for _ in workers:
        taken.extend(results.get(timeout=3600))
    elapsed = time.perf_counter() - began
    for proc in workers:
        proc.join()
    return elapsed, taken


def run_ondeck(url: str, jobs: int, procs: int, mode: str = "separate") -> dict[str, Any]:
    project = f"bench-{uuid.uuid4().hex[:8]}"
    fill(url, project, jobs)
    elapsed, taken = run_workers(
        ondeck_worker, lambda n, start, results: (url, project, n, start, results, mode), procs
    )
    engine = make_engine(url)
    with engine.connect() as conn:
        per_task = (
            select(events.c.subject, func.count().label("n"))
            .where(events.c.kind == "task.claimed")
            .group_by(events.c.subject)
            .subquery()
        )
        recorded = conn.execute(
            select(func.count()).select_from(per_task).where(per_task.c.n > 1)
        ).scalar_one()
        done = conn.execute(
            select(func.count()).select_from(tasks).where(tasks.c.status == "DONE")
        ).scalar_one()
    engine.dispose()
    return _result(jobs, elapsed, taken, done, recorded)


def run_procrastinate(url: str, jobs: int, procs: int) -> dict[str, Any]:
    import psycopg

    procrastinate_fill(url, jobs)
    elapsed, taken = run_workers(
        procrastinate_worker, lambda n, start, results: (url, n, start, results), procs
    )
    with psycopg.connect(libpq(url)) as conn:
        recorded = conn.execute(
            "SELECT count(*) FROM (SELECT job_id FROM procrastinate_events WHERE type = 'started'"
            " GROUP BY job_id HAVING count(*) > 1) AS twice"
        ).fetchone()[0]  # type: ignore[index]
        done = conn.execute(
            "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"
        ).fetchone()[0]  # type: ignore[index]
    return _result(jobs, elapsed, taken, done, recorded)


def run_bare(url: str, jobs: int, procs: int) -> dict[str, Any]:
    import psycopg

    bare_fill(url, jobs)
    elapsed, taken = run_workers(
        bare_worker, lambda n, start, results: (url, n, start, results), procs
    )
    with psycopg.connect(libpq(url)) as conn:
        done = conn.execute("SELECT count(*) FROM bare_jobs WHERE status = 'DONE'").fetchone()[0]  # type: ignore[index]
    return _result(jobs, elapsed, taken, done, None)


def _result(
    jobs: int, elapsed: float, taken: list[int], done: int, recorded: int | None
) -> dict[str, Any]:
    counts = Counter(taken)
    return {
        "jobs": jobs,
        "taken": len(taken),
        "seconds": round(elapsed, 2),
        "per_second": round(len(taken) / elapsed, 1),
        "double_takes": sum(1 for n in counts.values() if n > 1),
        "double_takes_recorded": recorded,
        "done": done,
    }


def run_ondeck_next(url: str, jobs: int, procs: int) -> dict[str, Any]:
    return run_ondeck(url, jobs, procs, mode="next")


RUNNERS = {
    "ondeck": run_ondeck,
    "ondeck_next": run_ondeck_next,
    "procrastinate": run_procrastinate,
    "bare": run_bare,
}


# --- the run ----------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=SYSTEMS, action="append", help="(repeatable)")
    parser.add_argument("--pg-url", help="an admin URL of a PostgreSQL server to use")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--durable",
        action="store_true",
        help="turn fsync, synchronous_commit and full_page_writes back on in the throwaway "
        "cluster (it starts with them off, as the test suite's does)",
    )
    args = parser.parse_args()
    if args.durable and args.pg_url:
        raise SystemExit("--durable changes the server's settings: only with the throwaway one")
    # Procrastinate warns that the App of the deferring side lives in __main__: harmless here.
    logging.getLogger("procrastinate").setLevel(logging.ERROR)
    systems = args.only or list(SYSTEMS)
    cluster = None
    admin_url = args.pg_url
    if admin_url is None:
        bindir = pg.find_bindir()
        if bindir is None:
            raise SystemExit("no PostgreSQL server binaries; pass --pg-url")
        cluster = pg.start_cluster(bindir)
        admin_url = cluster.admin_url
        if args.durable:
            make_durable(cluster)
    rounds: list[dict[str, dict[str, Any]]] = []
    ok = True
    try:
        for number in range(1, args.rounds + 1):
            found: dict[str, dict[str, Any]] = {}
            for system in systems:
                url = new_database(admin_url, f"cmp_{system}")
                try:
                    found[system] = RUNNERS[system](url, args.jobs, args.procs)
                finally:
                    drop_database(admin_url, url)
                r = found[system]
                print(
                    f"round {number} {system:14} {r['per_second']:8.1f} jobs/s "
                    f"({r['taken']:,} in {r['seconds']:.1f} s), double takes {r['double_takes']}"
                    + (
                        f" ({r['double_takes_recorded']} in its events)"
                        if r["double_takes_recorded"] is not None
                        else ""
                    ),
                    flush=True,
                )
                ok = ok and r["double_takes"] == 0 and not r["double_takes_recorded"]
                ok = ok and r["taken"] == args.jobs == r["done"]
            ratios = _ratios(found)
            if ratios:
                print(
                    f"round {number} ratios: "
                    + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items())
                )
            rounds.append({**found, "ratios": ratios})  # type: ignore[dict-item]
    finally:
        if cluster is not None:
            cluster.stop()
    summary = _summary(rounds, systems)
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({"rounds": rounds, "summary": summary}, indent=2))
    return 0 if ok else 1


def _ratios(found: dict[str, dict[str, Any]]) -> dict[str, float]:
    ratios = {}
    for ours in ("ondeck", "ondeck_next"):
        for other in ("procrastinate", "bare"):
            if ours in found and other in found:
                ratios[f"{ours}/{other}"] = found[ours]["per_second"] / found[other]["per_second"]
    return ratios


def _summary(rounds: list[dict[str, Any]], systems: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        f"{s}_per_second_median": statistics.median(r[s]["per_second"] for r in rounds)
        for s in systems
    }
    for key in rounds[0]["ratios"]:
        out[f"{key}_median"] = round(statistics.median(r["ratios"][key] for r in rounds), 3)
    out["double_takes_total"] = sum(r[s]["double_takes"] for r in rounds for s in systems)
    out["python"] = sys.version.split()[0]
    return out


if __name__ == "__main__":
    sys.exit(main())
