"""A separate process for the fault tests, calling ondeck's services on its own engine.

worker.py hold URL TASK OWNER LEASE      claim TASK, print the lease as JSON, then sleep
                                         (until killed: the holder that dies)
worker.py hammer URL NAME SECONDS SEED OUT
                                         claim / renew / complete / release / abandon
                                         at random until SECONDS pass; every call and
                                         its outcome goes to OUT (JSON lines)
worker.py lock-sqlite PATH SECONDS DAY COUNT
                                         hold SQLite's write lock (BEGIN EXCLUSIVE) for
                                         SECONDS, adding COUNT daily schedules due on
                                         DAY inside that transaction
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any


def _now() -> datetime:
    return datetime.now(UTC)


def hold(url: str, task_id: int, owner: str, lease: str) -> None:
    from ondeck.db.engine import make_engine
    from ondeck.work import backlog

    engine = make_engine(url)
    with engine.begin() as conn:
        task = backlog.claim_task(conn, _now(), task_id, owner=owner, duration=lease, actor="cli")
    assert task.lease_until is not None
    line = {"token": task.lease_token, "lease_until": task.lease_until.isoformat()}
    print(json.dumps(line), flush=True)
    while True:  # the holder works "forever", until the test kills it
        time.sleep(60)


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", value) or the error's code: lease_lost, conflict, unavailable, nothing, …"""
    from sqlalchemy.exc import DBAPIError

    from ondeck.core.errors import OndeckError
    from ondeck.db.engine import is_unavailable

    try:
        return "ok", call()
    except OndeckError as exc:
        return exc.code, str(exc)
    except DBAPIError as exc:
        if is_unavailable(exc):
            return "unavailable", str(exc.orig)[:200]
        return "error", f"{type(exc).__name__}: {exc}"[:500]


class _Hammer:
    """One worker's random lease work, and its record of every call and outcome."""

    def __init__(self, url: str, name: str, seed: int) -> None:
        from ondeck.db.engine import make_engine

        self.engine = make_engine(url)
        self.rng = random.Random(seed)
        self.owner = f"hammer:{name}"
        self.held: dict[int, int] = {}  # task -> the token this worker believes is current
        self.stale: list[tuple[int, int]] = []  # leases it walked away from, or finished
        self.records: list[dict[str, Any]] = []

    def call(self, op: str, task_id: int | None, token: int | None, fn: Any, **kw: Any) -> Any:
        """`fn(conn, now, [task_id], token=…, **kw)` in its own transaction; the outcome is
        recorded, and returned ("ok" or an error code)."""

        def run() -> Any:
            args = () if task_id is None else (task_id,)
            if token is not None:
                kw["token"] = token
            with self.engine.begin() as conn:
                return fn(conn, _now(), *args, actor="cli", **kw)

        result, value = _outcome(run)
        record: dict[str, Any] = {"op": op, "task": task_id, "token": token, "result": result}
        if result == "ok" and op == "claim":
            record["task"], record["token"] = value.id, value.lease_token
            self.held[value.id] = value.lease_token
        elif result != "ok":
            record["message"] = str(value)[:300]
        self.records.append(record)
        return result

    def step(self) -> None:
        from ondeck.work import backlog

        rng = self.rng
        roll = rng.random()
        if not self.held or roll < 0.35:
            lease = rng.choice(["1s", "2s", "3s"])
            found = self.call(
                "claim", None, None, backlog.claim_next, owner=self.owner, duration=lease
            )
            if found == "nothing_claimable":
                time.sleep(0.05)
            return
        if self.stale and roll > 0.93:
            # A holder that comes back late, or sends its completion twice.
            task_id, token = rng.choice(self.stale)
            self.call("late_complete", task_id, token, backlog.complete_task)
            return
        task_id = rng.choice(list(self.held))
        token = self.held[task_id]
        action = rng.random()
        # Completing rarely keeps thousands of tasks in play for a full minute.
        if action < 0.15:
            self.call("complete", task_id, token, backlog.complete_task)
        elif action < 0.45:
            if self.call("renew", task_id, token, backlog.renew_lease, duration="2s") == "ok":
                return
        elif action < 0.60:
            self.call("release", task_id, token, backlog.release_task)
        elif action < 0.75:
            pass  # walk away without a word: the holder "died"; the reaper must take it back
        else:
            time.sleep(rng.uniform(0.0, 0.1))
            return
        del self.held[task_id]
        self.stale = [*self.stale[-200:], (task_id, token)]


def hammer(url: str, name: str, seconds: float, seed: int, out: Path) -> None:
    """Random lease work on a shared backlog, recording what it did and what came back.

    Some leases are abandoned on purpose (the reaper takes them back) and later presented
    again with their old token; some completions are sent twice. Those must be refused.
    """
    worker = _Hammer(url, name, seed)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        worker.step()
    worker.engine.dispose()
    out.write_text("".join(json.dumps(r) + "\n" for r in worker.records))


def lock_sqlite(path: str, seconds: float, day: date, count: int) -> None:
    """Another writer holding the database: nobody else can write until it commits."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    conn.execute("BEGIN EXCLUSIVE")
    # The text forms SQLAlchemy writes on SQLite (see ondeck.db.types.Instant).
    now = _now().replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")
    conn.executemany(
        "INSERT INTO schedules (title, body, kind, rule, start_on, next_due, missed, enabled,"
        " priority, created_at, updated_at) VALUES (?, '', ?, 'daily', ?, ?, 'latest', 1, 2, ?, ?)",
        [
            (f"due while locked {i}", "task" if i % 2 else "remind", str(day), str(day), now, now)
            for i in range(count)
        ],
    )
    print("locked", flush=True)
    time.sleep(seconds)
    conn.execute("COMMIT")
    conn.close()
    print("unlocked", flush=True)


def main(argv: list[str]) -> None:
    command, *args = argv
    if command == "hold":
        hold(args[0], int(args[1]), args[2], args[3])
    elif command == "hammer":
        hammer(args[0], args[1], float(args[2]), int(args[3]), Path(args[4]))
    elif command == "lock-sqlite":
        lock_sqlite(args[0], float(args[1]), date.fromisoformat(args[2]), int(args[3]))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
