"""build_context with 100,000 tasks, 10,000 schedules and 1,000,000 events, in-process and
over HTTP, on SQLite and PostgreSQL; and the session hook's whole-process time against
`python -c 'import sqlalchemy'` measured in the same run.

Run: .venv/bin/python bench/context.py [--events 1000000] [--rounds 200] [--pg-url URL]
Targets: p95 under 20 ms in-process and 40 ms over HTTP; hook at most 1.5x the import.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import date, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from _stores import percentiles, postgres_url, sqlite_url
from sqlalchemy import Engine, insert

from ondeck.context.build import build_context
from ondeck.context.render import fit_markdown
from ondeck.core import clock
from ondeck.db import open_database
from ondeck.db.engine import reading
from ondeck.db.tables import events, fires, schedules, tasks

# The data is laid out around the present, not a fixed date: the server measured over HTTP
# and the hook read the real clock. With a fixed date they saw another day than the
# in-process measure did (every reminder pending, every lease expired, every dated task
# overdue), which is a different workload: the "HTTP overhead" of the first figures.
NOW = clock.now()
TODAY = NOW.date()  # a UTC date: the servers and the hook run with ONDECK_TZ=UTC
WARMUP = 10  # unmeasured rounds first: connections, statement caches, the page cache
UTCZ = ZoneInfo("UTC")
BIN = Path(sys.executable).parent


def populate(engine: Engine, n_tasks: int, n_schedules: int, n_events: int) -> None:
    rng = random.Random(7)
    chunk = 5000
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            # For the VACUUM below to mark the pages all-visible (a settled table, as
            # autovacuum leaves it: index-only scans), this commit must be flushed when it
            # runs. The test cluster commits asynchronously: the tables were left settled
            # or not depending on a race with the WAL writer, and so were the figures.
            conn.exec_driver_sql("SET LOCAL synchronous_commit = on")
        rows = []
        for i in range(n_tasks):
            status = rng.choices(["READY", "DONE", "CANCELLED", "RUNNING"], [40, 50, 9, 1])[0]
            running = status == "RUNNING"
            rows.append(
                {
                    "title": f"task {i}",
                    "body": "",
                    "status": status,
                    "priority": rng.randint(0, 9),
                    "due_on": TODAY + timedelta(days=rng.randint(-30, 60))
                    if rng.random() < 0.3
                    else None,
                    "project": rng.choice([None, "site", "shop", "ops"]),
                    "lease_owner": "claude:x" if running else None,
                    "lease_until": NOW + timedelta(minutes=rng.randint(-600, 600))
                    if running
                    else None,
                    "lease_token": 1 if running else 0,
                    "created_at": NOW,
                    "updated_at": NOW,
                }
            )
            if len(rows) == chunk:
                conn.execute(insert(tasks), rows)
                rows = []
        if rows:
            conn.execute(insert(tasks), rows)
        rows = []
        for i in range(n_schedules):
            kind = rng.choice(["task", "remind"])
            rows.append(
                {
                    "title": f"schedule {i}",
                    "kind": kind,
                    "rule": rng.choice(["daily", "weekly:MON", "monthly:1", "every:3"]),
                    "start_on": date(2026, 1, 1),
                    "next_due": TODAY + timedelta(days=rng.randint(0, 30)),
                    "last_fired_on": TODAY - timedelta(days=1),
                    "last_fired_at": NOW - timedelta(days=1),
                    "created_at": NOW,
                    "updated_at": NOW,
                }
            )
        conn.execute(insert(schedules), rows)
        conn.execute(
            insert(fires),
            [
                {
                    "schedule_id": s,
                    "fire_date": TODAY - timedelta(days=d),
                    "fired_at": NOW - timedelta(days=d),
                }
                for s in range(1, n_schedules + 1)
                for d in (1, 2)
            ],
        )
        rows = []
        for i in range(n_events):
            rows.append(
                {
                    "at": NOW - timedelta(seconds=n_events - i),
                    "actor": "bench",
                    "kind": "task.created",
                    "subject": f"task:{i % max(n_tasks, 1) + 1}",
                    "details": {},
                }
            )
            if len(rows) == chunk:
                conn.execute(insert(events), rows)
                rows = []
        if rows:
            conn.execute(insert(events), rows)
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            # Two commands: a database-wide VACUUM ANALYZE left the visibility map of
            # these tables empty (PostgreSQL 15), VACUUM then ANALYZE fills it.
            conn.exec_driver_sql("VACUUM")
            conn.exec_driver_sql("ANALYZE")
    else:
        with engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE")
            conn.commit()


def in_process(engine: Engine, rounds: int) -> dict[str, float]:
    samples = []
    for i in range(WARMUP + rounds):
        project = None if i % 2 else "site"
        began = time.perf_counter()
        with reading(engine) as conn:  # the read-only transaction the API route takes
            ctx = build_context(conn, NOW, project, zone=UTCZ)
        fit_markdown(ctx, UTCZ)  # and the fitting it does (entrypoints/gateway.py)
        if i >= WARMUP:
            samples.append((time.perf_counter() - began) * 1000)
    return percentiles(samples)


def over_http(url: str, rounds: int) -> dict[str, float]:
    import httpx

    # A real server process on loopback, as a client would see it.
    port = 18000 + random.randint(0, 999)
    env = {**os.environ, "ONDECK_DATABASE_URL": url, "ONDECK_TZ": "UTC"}
    proc = subprocess.Popen(
        [str(BIN / "ondeck"), "serve", "--no-jobs", "--port", str(port)], env=env
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                httpx.get(f"{base}/api/v1/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        samples = []
        with httpx.Client(base_url=base) as client:
            for i in range(WARMUP + rounds):
                params = {} if i % 2 else {"project": "site"}
                began = time.perf_counter()
                response = client.get("/api/v1/context", params=params)
                elapsed = (time.perf_counter() - began) * 1000
                response.raise_for_status()
                if i == 0 and response.json()["date"] != TODAY.isoformat():
                    raise SystemExit(
                        f"the server's day {response.json()['date']} is not the data's {TODAY}"
                    )
                if i >= WARMUP:
                    samples.append(elapsed)
        return percentiles(samples)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def hook_ratio(url: str, runs: int = 11) -> dict[str, dict[str, float]]:
    """`ondeck hook session-start`'s whole-process time against `python -c 'import sqlalchemy'`,
    interleaved so both see the same machine load (medians of `runs`), on its two paths:
    `database` (no server answers on its port: the hook reads the store itself) and `server`
    (a real `ondeck serve --no-jobs` of the same database answers: the warm path).

    Both commands run with a bytecode cache, as an installed ondeck and SQLAlchemy have: a
    private `PYTHONPYCACHEPREFIX`, filled by one unmeasured run of each (an environment with
    PYTHONDONTWRITEBYTECODE would otherwise have the hook compile ondeck's modules from source
    on every run while SQLAlchemy's ship compiled).
    """
    import tempfile
    import urllib.request

    from support.pg import free_port

    with tempfile.TemporaryDirectory(prefix="ondeck-bench-pyc-") as pycache:
        env = {**os.environ, "ONDECK_DATABASE_URL": url, "ONDECK_TZ": "UTC"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
        found = {
            "database": _hook_vs_import(
                {**env, "ONDECK_PORT": str(free_port())}, runs, "the database"
            )
        }
        port = free_port()
        server = subprocess.Popen(
            [str(BIN / "ondeck"), "serve", "--no-jobs", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            found["server"] = _hook_vs_import(
                {**env, "ONDECK_PORT": str(port)}, runs, f"http://127.0.0.1:{port}"
            )
        finally:
            server.terminate()
            server.wait(timeout=30)
    return found


def _hook_vs_import(env: dict[str, str], runs: int, source: str) -> dict[str, float]:
    payload = json.dumps(
        {"session_id": "bench", "cwd": "/", "hook_event_name": "SessionStart", "source": "startup"}
    )

    def hook(debug: bool = False) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "ondeck"), "hook", "session-start"],
            input=payload,
            env={**env, "ONDECK_DEBUG": "1"} if debug else env,
            capture_output=True,
            check=True,
            text=True,
        )

    def import_sqlalchemy() -> None:
        subprocess.run([sys.executable, "-c", "import sqlalchemy"], env=env, check=True)

    # Unmeasured: fills the bytecode cache, and checks the hook takes the path measured.
    first = hook(debug=True)
    if f"session context from {source}" not in first.stderr or "On deck" not in first.stdout:
        raise SystemExit(f"the hook did not read its context from {source}: {first.stderr}")
    import_sqlalchemy()
    times: dict[str, list[float]] = {"hook": [], "import": []}
    for _ in range(runs):  # interleaved, so both see the same machine load
        for name, command in (("hook", hook), ("import", import_sqlalchemy)):
            began = time.perf_counter()
            command()
            times[name].append(time.perf_counter() - began)
    h, i = statistics.median(times["hook"]), statistics.median(times["import"])
    return {"hook_ms": h * 1000, "import_sqlalchemy_ms": i * 1000, "ratio": h / i}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--pg-url")
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    args = parser.parse_args()
    stores = {"sqlite": sqlite_url, "postgresql": lambda: postgres_url(args.pg_url)}
    for name, make in stores.items():
        if args.only and name != args.only:
            continue
        with make() as url:
            engine = open_database(url)
            began = time.perf_counter()
            populate(engine, args.tasks, args.schedules, args.events)
            print(f"{name}: populated in {time.perf_counter() - began:.0f} s", flush=True)
            fmt = lambda d: " ".join(f"{k} {v:.1f} ms" for k, v in d.items())  # noqa: E731
            print(
                f"{name}: build_context in-process {fmt(in_process(engine, args.rounds))}",
                flush=True,
            )
            print(
                f"{name}: GET /api/v1/context over HTTP {fmt(over_http(url, args.rounds))}",
                flush=True,
            )
            for path, ratio in hook_ratio(url).items():
                print(
                    f"{name}: hook session-start ({path} path) {ratio['hook_ms']:.0f} ms, "
                    f"import sqlalchemy {ratio['import_sqlalchemy_ms']:.0f} ms, "
                    f"ratio {ratio['ratio']:.2f}",
                    flush=True,
                )
            engine.dispose()


if __name__ == "__main__":
    main()
