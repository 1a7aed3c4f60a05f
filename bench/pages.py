"""How long each dashboard page takes to render server-side with 10,000 tasks, 1,000
schedules and 100,000 events.

    .venv/bin/python bench/pages.py                 # SQLite, then a throwaway PostgreSQL
    .venv/bin/python bench/pages.py --sqlite-only
    .venv/bin/python bench/pages.py --pg-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres

Target: every page under 100 ms. "Server-side" is measured by a timing wrapper around the
ASGI app, from the request entering the app to the last byte of the response leaving it
(routing, the database reads, templating), in-process without a socket; each page is
requested 30 times after 3 warm-ups and the p50/p95/max are printed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from _stores import postgres_url, sqlite_url  # noqa: E402

from ondeck import clock  # noqa: E402
from ondeck.db import open_database  # noqa: E402
from ondeck.db.tables import backups, events, fires, schedules, tasks, workers  # noqa: E402
from ondeck.host.settings import load_settings  # noqa: E402

TASKS, SCHEDULES, EVENTS = 10_000, 1_000, 100_000
RUNS, WARMUP = 30, 3
RULES = ["daily", "weekly:MON,THU", "weekly:FRI", "monthly:1,15,last", "monthly:7", "every:3"]
PROJECTS = ["ondeck", "ops", "home", "site", None]
Scope = MutableMapping[str, Any]


def populate(engine: Engine, now: datetime) -> None:
    rng = random.Random(6)
    day = clock.today(now, UTC)
    task_rows = []
    for i in range(TASKS):
        status = rng.choices(["READY", "RUNNING", "DONE", "CANCELLED"], [60, 5, 30, 5])[0]
        running = status == "RUNNING"
        task_rows.append(
            {
                "title": f"task {i}: something to do",
                "body": "details " * rng.randrange(20),
                "status": status,
                "priority": rng.randrange(10),
                "due_on": day + timedelta(days=rng.randrange(-20, 40))
                if rng.random() < 0.5
                else None,
                "project": rng.choice(PROJECTS),
                "lease_owner": f"claude:{i}" if running else None,
                "lease_until": now + timedelta(minutes=rng.randrange(-600, 120))
                if running
                else None,
                "lease_token": 1 if running else 0,
                "created_at": now - timedelta(days=30),
                "updated_at": now,
                "done_at": now if status == "DONE" else None,
            }
        )
    schedule_rows = [
        {
            "title": f"schedule {i}",
            "kind": rng.choice(["task", "task", "remind"]),
            "rule": rng.choice(RULES),
            "project": rng.choice(PROJECTS),
            "start_on": day - timedelta(days=rng.randrange(400)),
            "next_due": day + timedelta(days=rng.randrange(0, 30)),
            "last_fired_on": day - timedelta(days=1),
            "last_fired_at": now - timedelta(days=1),
            "priority": rng.randrange(10),
            "created_at": now,
            "updated_at": now,
        }
        for i in range(SCHEDULES)
    ]
    kinds = ["task.created", "task.claimed", "task.completed", "task.released", "schedule.fired"]
    event_rows = []
    for i in range(EVENTS):
        kind = rng.choice(kinds)
        subject = (
            f"schedule:{rng.randrange(1, SCHEDULES)}"
            if kind.startswith("schedule")
            else (f"task:{rng.randrange(1, TASKS)}")
        )
        event_rows.append(
            {
                "at": now - timedelta(seconds=EVENTS - i),
                "actor": rng.choice(["cli", "api", "jobs", "dashboard"]),
                "kind": kind,
                "subject": subject,
                "details": {"n": i, "owner": "claude:x"},
            }
        )
    with engine.begin() as conn:
        for start in range(0, TASKS, 5000):
            conn.execute(tasks.insert(), task_rows[start : start + 5000])
        conn.execute(schedules.insert(), schedule_rows)
        for start in range(0, EVENTS, 10_000):
            conn.execute(events.insert(), event_rows[start : start + 10_000])
        conn.execute(
            fires.insert(),
            [
                {"schedule_id": i, "fire_date": day, "fired_at": now - timedelta(hours=1)}
                for i in range(1, 200)
            ],
        )
        conn.execute(
            workers.insert(),
            {
                "name": "jobs@bench:1",
                "started_at": now - timedelta(days=1),
                "last_tick_at": now - timedelta(seconds=20),
                "tick_ms": 12.5,
                "ticks": 1440,
                "summary": {"fire": {"fired": 0}, "reap": {"released": 0}},
            },
        )
        conn.execute(
            backups.insert(),
            [
                {
                    "started_at": now - timedelta(days=d),
                    "finished_at": now - timedelta(days=d) + timedelta(seconds=3),
                    "status": "ok",
                    "file": f"/backups/ondeck-{d}.db",
                    "bytes": 50_000_000,
                }
                for d in range(20)
            ],
        )


class Timed:
    """An ASGI wrapper that records how long each request spends inside the app."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.last_ms = 0.0

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Scope]],
        send: Callable[[Scope], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()

        async def timed_send(message: Scope) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.last_ms = (time.perf_counter() - began) * 1000

        await self.app(scope, receive, timed_send)


def pages(engine: Engine) -> list[str]:
    from sqlalchemy import select

    with engine.connect() as conn:
        task_id = conn.execute(select(tasks.c.id).where(tasks.c.id == 4242)).scalar_one()
    return [
        "/",
        "/tasks",
        "/tasks?status=all",
        "/tasks?status=all&page=150",
        "/tasks?status=DONE&project=ops",
        f"/tasks/{task_id}",
        "/schedules",
        "/schedules?page=10",
        "/schedules/500",
        "/schedules/rule-preview?rule=monthly:1,15,last",
        "/activity",
        "/activity?before=50000",
        "/activity?kind=task.",
        "/activity?kind=task.released",
        "/activity?subject=task:4242",
        "/system",
        "/calendar.ics",
    ]


def run(url: str, label: str) -> bool:
    from fastapi.testclient import TestClient

    from ondeck.entrypoints.api.app import create_app

    now = clock.now()
    settings = load_settings(database_url=url, tz="UTC")
    engine = open_database(url)
    began = time.perf_counter()
    populate(engine, now)
    print(
        f"\n{label}: {TASKS:,} tasks, {SCHEDULES:,} schedules, {EVENTS:,} events "
        f"(seeded in {time.perf_counter() - began:.1f} s)"
    )
    timed = Timed(create_app(settings, engine))
    ok = True
    with TestClient(timed) as client:  # type: ignore[arg-type]
        print(f"{'page':48} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'bytes':>8}")
        for path in pages(engine):
            samples = []
            size = 0
            for n in range(WARMUP + RUNS):
                response = client.get(path)
                assert response.status_code == 200, (path, response.status_code)
                size = len(response.content)
                if n >= WARMUP:
                    samples.append(timed.last_ms)
            samples.sort()
            p50 = statistics.median(samples)
            p95 = samples[int(0.95 * (len(samples) - 1))]
            if path == "/calendar.ics":  # a feed polled by calendar apps: reported, not judged
                flag = "  (feed, not a page)"
            else:
                flag = "" if p95 < 100 else "  <-- over 100 ms"
                ok = ok and p95 < 100
            print(f"{path:48} {p50:7.1f} {p95:7.1f} {samples[-1]:7.1f} {size:8,}{flag}")
    engine.dispose()
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--pg-url", help="an admin URL of a PostgreSQL server to use")
    args = parser.parse_args()
    ok = True
    with sqlite_url() as url:
        ok = run(url, "SQLite") and ok
    if not args.sqlite_only:
        with postgres_url(args.pg_url) as url:
            ok = run(url, "PostgreSQL") and ok
    print("\nevery page p95 under 100 ms" if ok else "\nSOME PAGES OVER 100 ms")


if __name__ == "__main__":
    main()
