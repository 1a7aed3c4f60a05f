"""The database goes away while ticks are due, then comes back.

PostgreSQL: the server (`ondeck serve`, with its in-process jobs loop) and a separate
`ondeck jobs` reach the database through a loopback TCP proxy the test cuts: open
connections are reset; new ones are refused at once (`reject`) or accepted and never
answered (`blackhole`, a silent network). SQLite: another process holds the write lock
(BEGIN EXCLUSIVE).

While it lasts: both processes log the failure, neither exits, neither spins (CPU time,
log lines and connection attempts are bounded), and every API call answers within a few
seconds with a 503 JSON error (reads on SQLite go on answering: WAL readers do not wait
for the writer). Schedules become due meanwhile; once the database is back each fires
exactly once.

Sizes: ONDECK_FAULT_OUTAGE_SECONDS (default 10, the full 30 under ONDECK_FAULT_FULL=1)
and ONDECK_FAULT_LOCK_SECONDS (default 8, the full 10).
"""

from __future__ import annotations

import time
import urllib.error
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, insert, select
from sqlalchemy.engine import make_url

from ondeck.core import clock
from ondeck.db.engine import PG_CONNECT_TIMEOUT_S, SQLITE_BUSY_TIMEOUT_MS
from ondeck.db.tables import events, fires, schedules, tasks
from support.pg import free_port
from support.procs import Answer, Proc, Procs, http, knob, ondeck_env, wait_for
from support.proxy import Proxy

pytestmark = pytest.mark.slow

OUTAGE = knob("OUTAGE_SECONDS", 10, 30)
LOCK = knob("LOCK_SECONDS", 8, 10)
DUE = 40  # schedules that fall due during the outage
# What "does not spin" allows: a retry a second at most, and little CPU while waiting.
CPU_SHARE = 0.25

CALLS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "/api/v1/health", None),
    ("GET", "/api/v1/tasks", None),
    ("POST", "/api/v1/tasks", {"title": "written during the outage"}),
    ("POST", "/api/v1/tasks/claim-next", {"owner": "outage"}),
]


def _today() -> date:
    return clock.today(clock.now(), UTC)


def _up(base: str, procs: list[Proc]) -> None:
    def healthy() -> bool:
        for proc in procs:
            assert proc.alive(), proc.text()[-3000:]
        try:
            return http("GET", f"{base}/api/v1/health", timeout=5).status == 200
        except (urllib.error.URLError, ConnectionError):
            return False

    wait_for(healthy, timeout=30, interval=0.1, what="the server")
    for proc in procs:
        wait_for(lambda p=proc: "tick done" in p.text(), timeout=30, what=f"{proc.name} tick")


def _add_due(engine: Engine, day: date) -> set[int]:
    """Task and remind schedules due today, written straight to the database."""
    now = clock.now()
    rows = [
        {
            "title": f"due during the outage {i}",
            "kind": "task" if i % 2 else "remind",
            "rule": "daily",
            "start_on": day,
            "next_due": day,
            "created_at": now,
            "updated_at": now,
        }
        for i in range(DUE)
    ]
    with engine.begin() as conn:
        conn.execute(insert(schedules), rows)
        return set(
            conn.execute(
                select(schedules.c.id).where(schedules.c.title.like("due during the outage%"))
            ).scalars()
        )


def _fired_once(engine: Engine, ids: set[int], day: date) -> None:
    """Each schedule: one fire today, one task if a task schedule, one event each."""

    def done() -> bool:
        with engine.connect() as conn:
            count = conn.execute(
                select(func.count()).where(fires.c.schedule_id.in_(ids))
            ).scalar_one()
        return count == len(ids)

    wait_for(done, timeout=30, interval=0.2, what="the due schedules to fire")
    time.sleep(2.5)  # two more ticks of each loop: nothing may fire twice
    with engine.connect() as conn:
        fired = conn.execute(
            select(fires.c.schedule_id, fires.c.fire_date, fires.c.task_id).where(
                fires.c.schedule_id.in_(ids)
            )
        ).all()
        kinds = dict(conn.execute(select(schedules.c.id, schedules.c.kind)).all())
        sources = conn.execute(select(tasks.c.source).where(tasks.c.source.like("sch:%"))).scalars()
        fire_events = Counter(
            subject
            for (subject,) in conn.execute(
                select(events.c.subject).where(events.c.kind == "schedule.fired")
            )
        )
    assert sorted(f.schedule_id for f in fired) == sorted(ids)
    assert {f.fire_date for f in fired} == {day}
    assert all((f.task_id is not None) == (kinds[f.schedule_id] == "task") for f in fired)
    want = {f"sch:{f.schedule_id}:{day}" for f in fired if kinds[f.schedule_id] == "task"}
    assert set(sources) >= want and len(want) == DUE // 2
    assert all(fire_events[f"schedule:{i}"] == 1 for i in ids)


def _call_during(base: str, seconds: float) -> list[tuple[str, Answer]]:
    """Every API call of `CALLS` again and again for `seconds`, each in its own thread (so a
    slow answer does not stretch the outage)."""
    end = time.monotonic() + seconds

    def repeat(method: str, path: str, payload: dict[str, Any] | None) -> list[Answer]:
        found = []
        while time.monotonic() < end:
            found.append(http(method, base + path, payload, timeout=60))
            time.sleep(0.5)
        return found

    with ThreadPoolExecutor(len(CALLS)) as pool:
        futures = {f"{m} {p}": pool.submit(repeat, m, p, body) for m, p, body in CALLS}
        return [(what, answer) for what, f in futures.items() for answer in f.result()]


def _is_503_json(answer: Answer) -> bool:
    return (
        answer.status == 503
        and answer.content_type.startswith("application/json")
        and isinstance(answer.body, dict)
        and answer.body.get("error", {}).get("code") == "unavailable"
    )


def _snapshot(procs: list[Proc]) -> dict[str, tuple[float, int]]:
    return {p.name: (p.cpu_seconds(), len(p.text().splitlines())) for p in procs}


def _spent(procs: list[Proc], before: dict[str, tuple[float, int]]) -> dict[str, Any]:
    """CPU seconds and log lines each process spent since `before`."""
    after = _snapshot(procs)
    return {
        name: {
            "cpu_s": round(after[name][0] - before[name][0], 2),
            "log_lines": after[name][1] - before[name][1],
        }
        for name in after
    }


def _unavailable_lines(proc: Proc, skip: int) -> list[str]:
    return [
        line
        for line in proc.text().splitlines()[skip:]
        if "database unavailable" in line and "retrying" in line
    ]


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
@pytest.mark.parametrize("mode", ["reject", "blackhole"])
def test_postgresql_cut_off_by_the_proxy_then_back(
    db_url: str,
    engine: Engine,
    tmp_path: Path,
    procs: Procs,
    mode: str,
    report: dict[str, object],
) -> None:
    target = make_url(db_url)
    proxy = Proxy(str(target.host), int(target.port or 5432)).start()
    try:
        proxied = target.set(port=proxy.port).render_as_string(hide_password=False)
        env = ondeck_env(proxied, tmp_path, tick=1.0)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = procs.ondeck("serve", "serve", "--port", str(port), env=env)
        jobs = procs.ondeck("jobs", "jobs", env=env)
        both = [server, jobs]
        _up(base, both)

        before = _snapshot(both)
        lines_before = {p.name: len(p.text().splitlines()) for p in both}
        proxy.cut(mode)
        began = time.monotonic()
        day = _today()
        ids = _add_due(engine, day)  # straight to the database: due while it is "gone"
        answers = _call_during(base, OUTAGE)
        time.sleep(max(0.0, OUTAGE - (time.monotonic() - began)))
        lasted = time.monotonic() - began
        attempts = proxy.attempts
        spent = _spent(both, before)
        assert server.alive() and jobs.alive(), "a process exited during the outage"
        proxy.restore()

        for proc in both:
            failures = _unavailable_lines(proc, lines_before[proc.name])
            assert failures, f"{proc.name} did not log the failure"
            # One retry a tick (1 s) at most; a blackholed connect takes its timeout.
            assert len(failures) <= lasted + 3, f"{proc.name} retried {len(failures)} times"
            assert spent[proc.name]["cpu_s"] < CPU_SHARE * lasted, spent
            assert spent[proc.name]["log_lines"] < 3 * lasted, spent
        bad = [(what, a.status, a.body) for what, a in answers if not _is_503_json(a)]
        assert not bad, f"not a 503 JSON error: {bad[:3]}"
        slowest = max(a.seconds for _, a in answers)
        assert slowest < PG_CONNECT_TIMEOUT_S + 3, f"an API call took {slowest:.1f}s"
        # Two loops, a wake-up listener and the API calls: each knocks once per try.
        assert attempts < 6 * lasted + 2 * len(answers), f"{attempts} connection attempts"

        _fired_once(engine, ids, day)
        after = http("POST", f"{base}/api/v1/tasks", {"title": "after the outage"})
        assert after.status == 201, after.body
        assert server.stop() == 0, server.text()[-3000:]
        assert jobs.stop() == 0, jobs.text()[-3000:]
    finally:
        proxy.stop()
    latencies = sorted(a.seconds for _, a in answers)
    report.update(
        mode=mode,
        outage_s=round(lasted, 1),
        api_calls=len(answers),
        api_503_median_s=round(latencies[len(latencies) // 2], 3),
        api_503_max_s=round(latencies[-1], 3),
        connection_attempts=attempts,
        retries_logged={p.name: len(_unavailable_lines(p, lines_before[p.name])) for p in both},
        spent=spent,
    )


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_sqlite_locked_by_another_writer_then_released(
    db_url: str, engine: Engine, tmp_path: Path, procs: Procs, report: dict[str, object]
) -> None:
    env = ondeck_env(db_url, tmp_path, tick=1.0)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = procs.ondeck("serve", "serve", "--port", str(port), env=env)
    jobs = procs.ondeck("jobs", "jobs", env=env)
    both = [server, jobs]
    _up(base, both)

    before = _snapshot(both)
    lines_before = {p.name: len(p.text().splitlines()) for p in both}
    day = _today()
    path = str(make_url(db_url).database)
    locker = procs.worker(
        "locker", "lock-sqlite", path, str(LOCK), day.isoformat(), str(DUE), env=env
    )
    wait_for(lambda: "locked" in locker.text(), timeout=30, what="the lock")
    began = time.monotonic()
    answers = _call_during(base, LOCK - 1)
    assert locker.wait(timeout=LOCK + 30) == 0, locker.text()
    lasted = time.monotonic() - began
    spent = _spent(both, before)
    assert server.alive() and jobs.alive(), "a process exited during the lock"

    busy = SQLITE_BUSY_TIMEOUT_MS / 1000
    writes = [(w, a) for w, a in answers if w.startswith("POST")]
    reads = [(w, a) for w, a in answers if w.startswith("GET")]
    # A writer waits for the lock up to the busy timeout, then gets a 503: never a hang.
    assert all(a.seconds < busy + 2 for _, a in writes), [a.seconds for _, a in writes]
    refused = [a for _, a in writes if a.status >= 500]
    assert refused, "no write was refused while the database was locked"
    assert all(_is_503_json(a) for a in refused), [(a.status, a.body) for a in refused]
    # The others waited less than the busy timeout and went through (claim-next may find
    # nothing READY: 409).
    assert all(a.status in (200, 201, 409) for _, a in writes if a.status < 500)
    # Readers are not held up by a writer (WAL).
    assert all(a.status == 200 and a.seconds < 2 for _, a in reads), [
        (w, a.status, a.seconds) for w, a in reads
    ]
    for proc in both:
        failures = _unavailable_lines(proc, lines_before[proc.name])
        assert failures, f"{proc.name} did not log the failure"
        assert len(failures) <= lasted / busy + 2
        assert spent[proc.name]["cpu_s"] < CPU_SHARE * lasted, spent

    with engine.connect() as conn:
        ids = set(
            conn.execute(
                select(schedules.c.id).where(schedules.c.title.like("due while locked%"))
            ).scalars()
        )
    assert len(ids) == DUE
    _fired_once(engine, ids, day)
    assert server.stop() == 0, server.text()[-3000:]
    assert jobs.stop() == 0, jobs.text()[-3000:]
    report.update(
        lock_s=round(lasted, 1),
        busy_timeout_s=busy,
        writes=len(writes),
        writes_refused_503=len(refused),
        write_wait_max_s=round(max(a.seconds for _, a in writes), 2),
        read_max_s=round(max(a.seconds for _, a in reads), 3),
        retries_logged={p.name: len(_unavailable_lines(p, lines_before[p.name])) for p in both},
        spent=spent,
    )
