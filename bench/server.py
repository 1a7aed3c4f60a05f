"""The HTTP server under load: requests per second and p95 latency for `GET /api/v1/context`
and `POST /api/v1/tasks/{id}/claim` with 16 concurrent clients over loopback, and the
server's resident memory (VmRSS) idle and under load.

A real `ondeck serve --no-jobs` process on 127.0.0.1, over SQLite and a throwaway
PostgreSQL. The database holds 1,000 open tasks and 200 schedules for the context runs;
then, for the claim runs, enough READY tasks are added that every claim request takes a
different one (a claim of a task already taken would be a 409, not a claim). The load
tool is `wrk` (Debian package `wrk`: a C client, so the client takes little of the two
cores from the server), with a Lua script that reports p95 and gives each request its own
task id; without `wrk`, or with `--client httpx`, an asyncio httpx client with 16
concurrent workers is used instead.

Each figure is the median of `--runs` runs of `--seconds` seconds (default 3 x 10 s),
after a 2 s warm-up. Memory: VmRSS from /proc/<pid>/status after start-up and warm-up
(idle), its maximum sampled every 0.1 s during the runs (under load), and again after.

Run: .venv/bin/python bench/server.py [--only sqlite|postgresql] [--client wrk|httpx]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _stores import pg, postgres_url, sqlite_url
from sqlalchemy import insert

from ondeck.db import open_database
from ondeck.db.tables import schedules, tasks

NOW = datetime.now(UTC).replace(microsecond=0)
BIN = Path(sys.executable).parent
CONCURRENCY = 16
OPEN_TASKS, SCHEDULES = 1_000, 200
CLAIMABLE_PROJECT = "claims"

WRK_SCRIPT = """
local first, stride = tonumber(os.getenv("FIRST_ID")), 0
local threads, counter, id = {}, 0, 0
function setup(thread)
  thread:set("index", #threads)
  table.insert(threads, thread)
end
function init(args)
  stride = tonumber(os.getenv("THREADS"))
  id = first + index
end
function request()
  local path = string.format("/api/v1/tasks/%d/claim", id)
  id = id + stride
  return wrk.format("POST", path, {["Content-Type"] = "application/json"}, '{"owner": "bench"}')
end
"""
WRK_REPORT = """
function done(summary, latency, requests)
  io.write(string.format(
    'WRK {"requests": %d, "seconds": %f, "p50_ms": %f, "p95_ms": %f, "p99_ms": %f, '
    .. '"non2xx": %d, "errors": %d}\\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000,
    latency:percentile(95) / 1000, latency:percentile(99) / 1000, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
"""


def populate(url: str) -> None:
    """What the context reads: open tasks (some due, some in projects) and schedules."""
    engine = open_database(url)
    day = NOW.date()
    with engine.begin() as conn:
        conn.execute(
            insert(tasks),
            [
                {
                    "title": f"open task {i}",
                    "priority": i % 10,
                    "due_on": day + timedelta(days=i % 30 - 10) if i % 3 == 0 else None,
                    "project": ("site", "shop", None)[i % 3],
                    "created_at": NOW,
                    "updated_at": NOW,
                }
                for i in range(OPEN_TASKS)
            ],
        )
        conn.execute(
            insert(schedules),
            [
                {
                    "title": f"schedule {i}",
                    "kind": ("task", "remind")[i % 2],
                    "rule": "daily",
                    "start_on": day - timedelta(days=30),
                    "next_due": day + timedelta(days=1 + i % 20),
                    "created_at": NOW,
                    "updated_at": NOW,
                }
                for i in range(SCHEDULES)
            ],
        )
    _analyze(engine)
    engine.dispose()


def add_claimable(url: str, count: int) -> int:
    """`count` READY tasks for the claims, added after the context runs (so that those
    measure the 1,000-task backlog); returns the first one's id."""
    engine = open_database(url)
    first = None
    with engine.begin() as conn:
        for start in range(0, count, 5000):
            ids = conn.execute(
                insert(tasks).returning(tasks.c.id),
                [
                    {
                        "title": f"claimable {i}",
                        "project": CLAIMABLE_PROJECT,
                        "created_at": NOW,
                        "updated_at": NOW,
                    }
                    for i in range(start, min(count, start + 5000))
                ],
            ).scalars()
            batch = sorted(ids)
            first = batch[0] if first is None else first
    _analyze(engine)
    engine.dispose()
    assert first is not None
    return first


def _analyze(engine: Any) -> None:
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE")
    else:
        with engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class RssSampler:
    """The maximum VmRSS of a process, sampled every 0.1 s while active."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_kib(self.pid))
            self._stop.wait(0.1)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def server(url: str, work: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    import httpx

    from support.pg import free_port

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONDECK_")}
    env.update(
        ONDECK_DATABASE_URL=url,
        ONDECK_TZ="UTC",
        ONDECK_DATA_DIR=str(work / "data"),
        ONDECK_CONFIG=str(work / "none.toml"),
    )
    proc = subprocess.Popen(
        [str(BIN / "ondeck"), "serve", "--no-jobs", "--port", str(port)], env=env
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                httpx.get(f"{base}/api/v1/health", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield base, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# --- load: wrk ---------------------------------------------------------------------------


def wrk(base: str, path: str, seconds: float, script: str, env: dict[str, str]) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script + WRK_REPORT)
    try:
        done = subprocess.run(
            ["wrk", "-t2", f"-c{CONCURRENCY}", f"-d{round(seconds)}s", "-s", f.name, base + path],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **env},
        )
    finally:
        os.unlink(f.name)
    line = next(x for x in done.stdout.splitlines() if x.startswith("WRK "))
    found = json.loads(line[4:])
    found["rps"] = found["requests"] / found["seconds"]
    return found


# --- load: httpx -------------------------------------------------------------------------


def httpx_load(
    base: str, method: str, paths: Iterator[str], seconds: float, body: Any = None
) -> dict[str, Any]:
    import httpx

    async def main() -> dict[str, Any]:
        latencies: list[float] = []
        non2xx = 0
        deadline = time.perf_counter() + seconds
        limits = httpx.Limits(max_connections=CONCURRENCY)
        async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:

            async def one() -> None:
                nonlocal non2xx
                while time.perf_counter() < deadline:
                    began = time.perf_counter()
                    response = await client.request(method, next(paths), json=body)
                    latencies.append((time.perf_counter() - began) * 1000)
                    non2xx += not response.is_success

            began = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(CONCURRENCY)))
            elapsed = time.perf_counter() - began
        latencies.sort()
        at = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
        return {
            "requests": len(latencies),
            "seconds": elapsed,
            "rps": len(latencies) / elapsed,
            "p50_ms": at(0.50),
            "p95_ms": at(0.95),
            "p99_ms": at(0.99),
            "non2xx": non2xx,
            "errors": 0,
        }

    return asyncio.run(main())


# --- one store ---------------------------------------------------------------------------


def measure(url: str, label: str, client: str, runs: int, seconds: float) -> dict[str, Any]:
    # Enough READY tasks for every claim of every run (a generous bound on the rate).
    claimable = int(5000 * (runs * seconds + 4))
    populate(url)
    results: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="ondeck-bench-") as tmp,
        server(url, Path(tmp)) as (
            base,
            proc,
        ),
    ):
        next_id = 0  # set once the claimable tasks exist

        def claim_ids() -> Iterator[str]:
            nonlocal next_id
            while True:
                next_id += 1
                yield f"/api/v1/tasks/{next_id - 1}/claim"

        def context_paths() -> Iterator[str]:
            while True:
                yield "/api/v1/context"

        def load(endpoint: str, secs: float) -> dict[str, Any]:
            nonlocal next_id
            if endpoint == "context":
                if client == "wrk":
                    return wrk(base, "/api/v1/context", secs, "", {})
                return httpx_load(base, "GET", context_paths(), secs)
            if client == "wrk":
                found = wrk(
                    base,
                    "/",
                    secs,
                    WRK_SCRIPT,
                    {"FIRST_ID": str(next_id), "THREADS": "2"},
                )
                # Each thread strides through its own ids: at most 2 x requests were used.
                next_id += 2 * found["requests"] + 2 * CONCURRENCY + 10
                return found
            return httpx_load(base, "POST", claim_ids(), secs, body={"owner": "bench"})

        load("context", 2)  # warm-up: imports, caches, connections
        idle = rss_kib(proc.pid)
        for endpoint in ("context", "claim"):
            if endpoint == "claim":
                began = time.perf_counter()
                next_id = add_claimable(url, claimable)
                took = time.perf_counter() - began
                print(f"{label}: added {claimable:,} READY tasks in {took:.0f} s", flush=True)
                load("claim", 2)
            samples = []
            with RssSampler(proc.pid) as sampler:
                for _ in range(runs):
                    samples.append(load(endpoint, seconds))
            bad = sum(s["non2xx"] + s["errors"] for s in samples)
            results[endpoint] = {
                "rps_median": round(statistics.median(s["rps"] for s in samples), 1),
                "p50_ms_median": round(statistics.median(s["p50_ms"] for s in samples), 1),
                "p95_ms_median": round(statistics.median(s["p95_ms"] for s in samples), 1),
                "p99_ms_median": round(statistics.median(s["p99_ms"] for s in samples), 1),
                "runs": [
                    {k: round(v, 1) if isinstance(v, float) else v for k, v in s.items()}
                    for s in samples
                ],
                "non2xx_or_errors": bad,
                "rss_peak_mib": round(sampler.peak / 1024, 1),
            }
            r = results[endpoint]
            print(
                f"{label}: {endpoint:8} {r['rps_median']:7.1f} req/s  p50 {r['p50_ms_median']:.1f}"
                f" ms  p95 {r['p95_ms_median']:.1f} ms  (runs: "
                + ", ".join(f"{s['rps']:.0f}" for s in samples)
                + f" req/s; non-2xx/errors {bad}; peak RSS {r['rss_peak_mib']} MiB)",
                flush=True,
            )
        after = rss_kib(proc.pid)
    results["rss_idle_mib"] = round(idle / 1024, 1)
    results["rss_after_mib"] = round(after / 1024, 1)
    results["client"] = client
    print(
        f"{label}: RSS idle {results['rss_idle_mib']} MiB, under load up to "
        f"{max(results[e]['rss_peak_mib'] for e in ('context', 'claim'))} MiB, "
        f"after {results['rss_after_mib']} MiB",
        flush=True,
    )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    parser.add_argument("--client", choices=["wrk", "httpx"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--pg-url", help="an admin URL of a PostgreSQL server to use")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    client = args.client or ("wrk" if shutil.which("wrk") else "httpx")
    if client == "wrk" and not shutil.which("wrk"):
        raise SystemExit("wrk not found: apt-get install wrk, or use --client httpx")
    print(f"load client: {client}, {CONCURRENCY} concurrent connections", flush=True)
    stores = {"sqlite": sqlite_url, "postgresql": lambda: postgres_url(args.pg_url)}
    out = {}
    for name, make in stores.items():
        if args.only and name != args.only:
            continue
        if name == "postgresql" and args.pg_url is None and pg.find_bindir() is None:
            print("postgresql: skipped (no server binaries; pass --pg-url)")
            continue
        with make() as url:
            out[name] = measure(url, name, client, args.runs, args.seconds)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
