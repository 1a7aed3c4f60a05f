"""The spool: records kept when no store can be reached, drained in order, none lost, none
applied twice by the spool itself (the store's receipts make a replay harmless)."""

from __future__ import annotations

import json
import multiprocessing
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import NOW
from ondeck.sessions.capture import spool


def rec(n: int, at_minutes: int = 0) -> dict[str, Any]:
    return {"n": n, "at": (NOW + timedelta(minutes=at_minutes)).isoformat()}


def parse(data: Any) -> Any:
    if not isinstance(data, dict) or "n" not in data:
        raise ValueError("not a record")
    return data


class Store:
    """A store that takes records until it is told to go away."""

    def __init__(self, fail_after: int | None = None, refuse: set[int] | None = None) -> None:
        self.got: list[int] = []
        self.fail_after = fail_after
        self.refuse = refuse or set()

    def apply(self, batch: list[dict[str, Any]]) -> list[str | None]:
        answers: list[str | None] = []
        for record in batch:
            if self.fail_after is not None and len(self.got) >= self.fail_after:
                return answers  # went away: fewer answers than records
            if record["n"] in self.refuse:
                answers.append("refused by the store")
                continue
            self.got.append(record["n"])
            answers.append(None)
        return answers


def test_drains_in_order_and_forgets_what_the_store_has(tmp_path: Path) -> None:
    for n in range(5):
        spool.append(tmp_path, rec(n, n))
    status = spool.status(tmp_path)
    assert (status.waiting, status.oldest_at, status.rejected) == (5, NOW, 0)
    store = Store()
    assert spool.drain(tmp_path, store.apply, parse) == spool.Drained(applied=5, rejected=0, left=0)
    assert store.got == [0, 1, 2, 3, 4]
    assert spool.status(tmp_path).waiting == 0 and not spool.has_waiting(tmp_path)
    assert spool.drain(tmp_path, store.apply, parse).applied == 0, "drained twice: nothing"
    assert store.got == [0, 1, 2, 3, 4]


def test_a_store_that_goes_away_keeps_the_rest_in_order_before_newer_ones(tmp_path: Path) -> None:
    for n in range(4):
        spool.append(tmp_path, rec(n))
    first = Store(fail_after=2)
    assert spool.drain(tmp_path, first.apply, parse).left == 2
    spool.append(tmp_path, rec(4))
    second = Store()
    spool.drain(tmp_path, second.apply, parse)
    assert first.got + second.got == [0, 1, 2, 3, 4]


def test_an_unreachable_store_keeps_everything(tmp_path: Path) -> None:
    spool.append(tmp_path, rec(0))

    def gone(batch: list[dict[str, Any]]) -> list[str | None]:
        raise spool.StoreGone("down")

    assert spool.drain(tmp_path, gone, parse) == spool.Drained(
        applied=0, rejected=0, left=1, why="down"
    )
    assert spool.status(tmp_path).waiting == 1


def test_malformed_and_refused_records_are_kept_aside_with_the_reason(tmp_path: Path) -> None:
    spool.append(tmp_path, rec(0))
    with (tmp_path / spool.EVENTS).open("a") as handle:
        handle.write("{not json\n")
        handle.write(json.dumps({"no": "n"}) + "\n")
    spool.append(tmp_path, rec(1))
    spool.append(tmp_path, rec(2))
    store = Store(refuse={1})
    drained = spool.drain(tmp_path, store.apply, parse)
    assert (drained.applied, drained.rejected, drained.left) == (2, 3, 0)
    assert store.got == [0, 2]
    rejected = [json.loads(x) for x in (tmp_path / spool.REJECTED).read_text().splitlines()]
    assert [r["reason"].split(":")[0] for r in rejected] == [
        "malformed",
        "malformed",
        "refused by the store",
    ]
    assert rejected[2]["line"] == json.dumps(rec(1), separators=(",", ":"))
    assert spool.status(tmp_path).rejected == 3


def test_a_drain_that_died_is_finished_by_the_next_before_anything_newer(tmp_path: Path) -> None:
    (tmp_path / spool.DRAINING).write_text(json.dumps(rec(0)) + "\n" + json.dumps(rec(1)) + "\n")
    spool.append(tmp_path, rec(2))
    store = Store()
    assert spool.drain(tmp_path, store.apply, parse).applied == 3
    assert store.got == [0, 1, 2]


def test_a_busy_drain_lock_is_left_alone(tmp_path: Path) -> None:
    import fcntl
    import os

    spool.append(tmp_path, rec(0))
    fd = os.open(tmp_path / spool.LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        drained = spool.drain(tmp_path, Store().apply, parse, wait_s=0.05)
    finally:
        os.close(fd)
    assert drained.busy and drained.left == 1


def test_stuck_after_ten_minutes_with_its_count(tmp_path: Path) -> None:
    spool.append(tmp_path, rec(0))
    spool.append(tmp_path, rec(1, 5))
    status = spool.status(tmp_path)
    assert not status.stuck(NOW + timedelta(minutes=10))
    assert status.stuck(NOW + timedelta(minutes=10, seconds=1)) and status.waiting == 2


def test_find_reads_waiting_records(tmp_path: Path) -> None:
    spool.append(tmp_path, {"kind": "start", "session": "a", "n": 1})
    spool.append(tmp_path, {"kind": "stop", "session": "a", "n": 2})
    found = spool.find(tmp_path, lambda r: r.get("kind") == "stop")
    assert found is not None and found["n"] == 2
    assert spool.find(tmp_path, lambda r: r.get("kind") == "end") is None


def _append_many(args: tuple[str, int]) -> None:
    where, worker = args
    for n in range(50):
        spool.append(
            Path(where), {"n": worker * 1000 + n, "at": NOW.isoformat(), "pad": "x" * 5000}
        )


def test_appenders_and_a_drainer_at_once_lose_and_double_nothing(tmp_path: Path) -> None:
    """Four processes append 50 records of 5 kB each while this one drains: every record
    arrives exactly once, each writer's in its order."""
    got: list[int] = []

    def take(batch: list[dict[str, Any]]) -> list[str | None]:
        got.extend(r["n"] for r in batch)
        return [None] * len(batch)

    context = multiprocessing.get_context("fork")
    with context.Pool(4) as pool:
        result = pool.map_async(_append_many, [(str(tmp_path), w) for w in range(4)])
        while not result.ready():
            spool.drain(tmp_path, take, parse)
        result.get(timeout=60)
    spool.drain(tmp_path, take, parse)
    assert sorted(got) == sorted(w * 1000 + n for w in range(4) for n in range(50))
    for w in range(4):
        mine = [n for n in got if n // 1000 == w]
        assert mine == sorted(mine)


def test_spool_files_are_private(tmp_path: Path) -> None:
    spool.append(tmp_path / "spool", rec(0))
    assert (tmp_path / "spool").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "spool" / spool.EVENTS).stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("text", ["", "\n\n", "  \n"])
def test_empty_spools_wait_for_nothing(tmp_path: Path, text: str) -> None:
    (tmp_path / spool.EVENTS).write_text(text)
    assert spool.status(tmp_path).waiting == 0
    assert spool.drain(tmp_path, Store().apply, parse).left == 0


def test_a_torn_line_takes_no_whole_record_with_it(tmp_path: Path) -> None:
    """A writer that died mid-line: the next record starts on a line of
    its own, and only the fragment is refused."""
    spool.append(tmp_path, rec(0))
    with (tmp_path / spool.EVENTS).open("a") as handle:
        handle.write('{"n": 1, "at": "2026-06-15T09:0')  # no newline: the crash
    spool.append(tmp_path, rec(2))
    store = Store()
    drained = spool.drain(tmp_path, store.apply, parse)
    assert (drained.applied, drained.rejected, drained.left) == (2, 1, 0)
    assert store.got == [0, 2]
    [fragment] = [json.loads(x) for x in (tmp_path / spool.REJECTED).read_text().splitlines()]
    assert fragment["line"] == '{"n": 1, "at": "2026-06-15T09:0'


def test_a_drain_with_a_budget_leaves_the_rest_in_order(tmp_path: Path) -> None:
    """A hook's drain: no batch starts after the budget; what is left
    waits, in order, before anything newer."""
    import time

    for n in range(250):
        spool.append(tmp_path, rec(n))

    def slow(batch: list[dict[str, Any]]) -> list[str | None]:
        time.sleep(0.2)
        return Store().apply(batch)

    drained = spool.drain(tmp_path, slow, parse, budget_s=0.1)
    assert (drained.applied, drained.left) == (spool.BATCH_RECORDS, 250 - spool.BATCH_RECORDS)
    spool.append(tmp_path, rec(250))
    store = Store()
    spool.drain(tmp_path, store.apply, parse)
    assert store.got == list(range(spool.BATCH_RECORDS, 251))


def test_a_drain_reads_the_spool_in_batches_never_whole(tmp_path: Path) -> None:
    """Batches of at most BATCH_RECORDS records and about BATCH_BYTES: a large spool does not
    grow a drain's memory, and a drain stopped mid-way keeps exactly what it did not apply."""
    for n in range(40):
        spool.append(tmp_path, {**rec(n), "pad": "가" * 20_000})  # 60 kB a line
    sizes: list[int] = []

    def take(batch: list[dict[str, Any]]) -> list[str | None]:
        sizes.append(len(batch))
        if len(sizes) == 3:
            return [None] * (len(batch) // 2)  # the store went away half-way
        return [None] * len(batch)

    drained = spool.drain(tmp_path, take, parse)
    assert max(sizes) <= spool.BATCH_BYTES // 60_000 + 1 and len(sizes) == 3
    applied = sum(sizes[:2]) + sizes[2] // 2
    assert drained.applied == applied and drained.left == 40 - applied
    store = Store()
    spool.drain(tmp_path, store.apply, parse)
    assert store.got == list(range(applied, 40))
