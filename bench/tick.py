"""How long a jobs tick takes with 100,000 schedules: none due, then 10,000 due.

    .venv/bin/python bench/tick.py                     # SQLite, then a throwaway PostgreSQL
    .venv/bin/python bench/tick.py --url postgresql+psycopg://user@host/db   # an empty database
    .venv/bin/python bench/tick.py --schedules 20000 --due 2000

Targets (2-core machine): a tick with nothing due under 50 ms; 10,000 fires under 3 s.
The whole tick is timed (fire, backups, reap, maintain, heartbeat), after one warm-up tick
that creates and starts the default backup, as the first tick of a real server does (the
backup is written in a thread; the timed ticks start once it has ended).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine, bindparam, func, select, update

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from ondeck.core import clock  # noqa: E402
from ondeck.db import open_database  # noqa: E402
from ondeck.db.tables import fires, schedules  # noqa: E402
from ondeck.entrypoints.jobs.loop import Jobs  # noqa: E402
from ondeck.host.settings import load_settings  # noqa: E402

RULES = ["daily", "weekly:MON,THU", "weekly:FRI", "monthly:1,15,last", "monthly:7", "every:3"]
KINDS = ["task", "task", "task", "remind"]


def populate(engine: Engine, count: int, now: datetime) -> None:
    """`count` schedules of mixed rules and kinds, none due today."""
    rng = random.Random(5)
    day = clock.today(now, UTC)
    rows = []
    for i in range(count):
        rows.append(
            {
                "title": f"schedule {i}",
                "kind": rng.choice(KINDS),
                "rule": rng.choice(RULES),
                "start_on": day - timedelta(days=rng.randrange(400)),
                "next_due": day + timedelta(days=1 + rng.randrange(30)),
                "priority": rng.randrange(10),
                "created_at": now,
                "updated_at": now,
            }
        )
    with engine.begin() as conn:
        for start in range(0, count, 5000):
            conn.execute(schedules.insert(), rows[start : start + 5000])


def make_due(engine: Engine, count: int, now: datetime) -> None:
    day = clock.today(now, UTC)
    with engine.begin() as conn:
        ids = list(
            conn.execute(select(schedules.c.id).where(schedules.c.kind != "backup")).scalars()
        )
        chosen = random.Random(7).sample(ids, count)
        conn.execute(
            update(schedules).where(schedules.c.id == bindparam("sid")).values(next_due=day),
            [{"sid": i} for i in chosen],
        )


def timed_tick(jobs: Jobs, now: datetime) -> tuple[float, dict]:
    began = time.perf_counter()
    summary = jobs.tick(now)
    return (time.perf_counter() - began) * 1000, summary


def run(url: str, label: str, count: int, due: int, work: Path) -> dict[str, float]:
    settings = load_settings(database_url=url, tz="UTC", data_dir=work / "data")
    engine = open_database(url)
    now = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    began = time.perf_counter()
    populate(engine, count, now)
    print(f"{label}: {count:,} schedules inserted in {time.perf_counter() - began:.1f}s")
    jobs = Jobs(engine=engine, settings=settings, name=f"jobs@bench:{label}")
    warm_ms, warm = timed_tick(jobs, now)  # creates and starts the default backup
    jobs.backups.join()  # written beside the tick: the timed ticks do not share the machine
    print(f"{label}: warm-up tick (starting the first backup) {warm_ms:.0f} ms: {warm['fire']}")
    idle = [timed_tick(jobs, now + timedelta(seconds=i + 1))[0] for i in range(7)]
    idle_ms = statistics.median(idle)
    print(f"{label}: tick with none due: median {idle_ms:.1f} ms (min {min(idle):.1f}, "
          f"max {max(idle):.1f}) over {len(idle)} ticks")  # fmt: skip
    make_due(engine, due, now)
    busy_ms, busy = timed_tick(jobs, now + timedelta(minutes=1))
    with engine.connect() as conn:
        made = conn.execute(select(func.count()).select_from(fires)).scalar_one()
    print(
        f"{label}: tick with {due:,} due: {busy_ms:.0f} ms: {busy['fire']} ({made:,} fires in all)"
    )
    assert busy["fire"]["fired"] == due, busy
    engine.dispose()
    return {"idle_ms": idle_ms, "busy_ms": busy_ms}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="an empty database to use instead of the defaults")
    parser.add_argument("--schedules", type=int, default=100_000)
    parser.add_argument("--due", type=int, default=10_000)
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="ondeck-bench-") as tmp:
        work = Path(tmp)
        if args.url:
            label = "postgresql" if args.url.startswith("postgresql") else "sqlite"
            results[label] = run(args.url, label, args.schedules, args.due, work)
        else:
            url = f"sqlite:///{work / 'bench.db'}"
            results["sqlite"] = run(url, "sqlite", args.schedules, args.due, work)
            from support import pg

            bindir = pg.find_bindir()
            if bindir is None:
                print("postgresql: skipped (no server binaries; pass --url)")
            else:
                cluster = pg.start_cluster(bindir)
                try:
                    pg_url = cluster.admin_url
                    results["postgresql"] = run(
                        pg_url, "postgresql", args.schedules, args.due, work
                    )
                finally:
                    cluster.stop()
    print()
    for label, figures in results.items():
        idle_ok = "ok" if figures["idle_ms"] < 50 else "OVER"
        busy_ok = "ok" if figures["busy_ms"] < 3000 else "OVER"
        print(
            f"{label:10} none due {figures['idle_ms']:7.1f} ms (target < 50 ms: {idle_ok})   "
            f"{args.due:,} due {figures['busy_ms']:7.0f} ms (target < 3 s: {busy_ok})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
