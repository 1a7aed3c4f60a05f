"""The spool: hook records that could not be stored yet, as JSON lines in `<data dir>/spool/`.

A hook that reaches neither a server nor the database appends its record here and exits 0;
the next hook that reaches the store, and every jobs tick, drains the spool in order before
anything newer. Records carry their own time and fingerprint, so a record applied twice (a
drain that crashed after applying and before forgetting) changes nothing the second time.

    spool/events.jsonl     appended to by hooks (each append under an exclusive lock)
    spool/draining.jsonl   taken by the one drainer; a drain that died leaves it for the next
    spool/rejected.jsonl   records the store refused as malformed: kept, with the reason
    spool/.drain.lock      held by whoever drains

Nothing here is deleted before the store has it: a record leaves `draining.jsonl` only once
applied (or moved to `rejected.jsonl`, never dropped).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, NamedTuple

from ondeck.core import clock, private

EVENTS = "events.jsonl"
DRAINING = "draining.jsonl"
REJECTED = "rejected.jsonl"
LOCK = ".drain.lock"
STUCK_AFTER_S = 600  # a record waiting longer than this is a warning (context, System page)
LINE_MAX = 1024 * 1024


Where = str | os.PathLike[str]


class SpoolStatus(NamedTuple):
    path: str
    waiting: int
    oldest_at: datetime | None  # the time of the oldest waiting record
    rejected: int

    def stuck(self, now: datetime) -> bool:
        return (
            self.waiting > 0
            and self.oldest_at is not None
            and (now - self.oldest_at).total_seconds() > STUCK_AFTER_S
        )


class Drained(NamedTuple):
    applied: int
    rejected: int
    left: int  # still waiting: the store went away again, or another process is draining
    busy: bool = False
    why: str = ""  # why the store took no more (the `Unreachable` that stopped the drain)


class Unreachable(Exception):
    """The store cannot take records now: stop draining, keep the rest."""


# An outcome per record: None when applied (or already there), else why it was refused.
Apply = Callable[[list[dict[str, Any]]], list[str | None]]


def has_waiting(spool_dir: Where) -> bool:
    """Whether anything waits (two stats: what every hook asks before it stores)."""
    for name in (DRAINING, EVENTS):
        try:
            if os.stat(os.path.join(spool_dir, name)).st_size > 0:
                return True
        except OSError:
            continue
    return False


def append(spool_dir: Where, record: dict[str, Any]) -> None:
    """Add a record at the end, durably (fsync), safe against other hooks and a drainer."""
    private.make_dirs(spool_dir, own=True)
    path = os.path.join(spool_dir, EVENTS)
    line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    for _ in range(20):
        fd = private.open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # A drainer may have taken the file (renamed it) between the open and the lock:
            # then write to the new one, not to the taken one it may already have read.
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                continue
            os.write(fd, line)
            os.fsync(fd)
            return
        finally:
            os.close(fd)
    raise OSError(f"could not append to {path}: it kept being taken")


def status(spool_dir: Where) -> SpoolStatus:
    """How many records wait, since when, and how many were refused."""
    waiting, oldest = 0, None
    for name in (DRAINING, EVENTS):
        for line in _lines(os.path.join(spool_dir, name)):
            waiting += 1
            if oldest is None:
                oldest = _time_of(line)
    rejected = sum(1 for _ in _lines(os.path.join(spool_dir, REJECTED)))
    return SpoolStatus(
        path=os.fspath(spool_dir), waiting=waiting, oldest_at=oldest, rejected=rejected
    )


def find(spool_dir: Where, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The first waiting record that `match` accepts (the session end looks for its start)."""
    for name in (DRAINING, EVENTS):
        for line in _lines(os.path.join(spool_dir, name)):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and match(record):
                return record
    return None


def drain(
    spool_dir: Where, apply: Apply, parse: Callable[[Any], Any], *, wait_s: float = 0.5
) -> Drained:
    """Apply every waiting record in order, in batches, and forget those the store has.

    `parse` checks a record (ValueError: malformed, moved to rejected.jsonl); `apply` stores
    a batch and answers per record (None: stored; a string: refused, moved to rejected.jsonl)
    and raises `Unreachable` (or answers for fewer records) when the store went away: what
    it did not answer for stays, in order, for the next drain."""
    if not has_waiting(spool_dir):
        return Drained(applied=0, rejected=0, left=0)
    with _drain_lock(spool_dir, wait_s) as held:
        if not held:
            return Drained(applied=0, rejected=0, left=status(spool_dir).waiting, busy=True)
        applied = rejected = 0
        why = ""
        while True:
            draining = os.path.join(spool_dir, DRAINING)
            if not os.path.exists(draining) and not _take(spool_dir):
                break
            lines = list(_lines(draining))
            good: list[tuple[str, Any]] = []
            for line in lines:
                try:
                    good.append((line, parse(json.loads(line))))
                except (ValueError, TypeError) as exc:
                    _reject(spool_dir, line, f"malformed: {exc}")
                    rejected += 1
            try:
                outcomes = apply([record for _, record in good]) if good else []
            except Unreachable as exc:
                outcomes, why = [], str(exc)
            for (line, _), outcome in zip(good, outcomes, strict=False):
                if outcome is None:
                    applied += 1
                else:
                    _reject(spool_dir, line, outcome)
                    rejected += 1
            left = [line for line, _ in good[len(outcomes) :]]
            if left:
                _rewrite(draining, left)
                waiting = status(spool_dir).waiting
                return Drained(applied=applied, rejected=rejected, left=waiting, why=why)
            os.unlink(draining)
        return Drained(applied=applied, rejected=rejected, left=0)


@contextlib.contextmanager
def _drain_lock(spool_dir: Where, wait_s: float) -> Iterator[bool]:
    private.make_dirs(spool_dir, own=True)
    fd = os.open(os.path.join(spool_dir, LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        until = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= until:
                    yield False
                    return
                time.sleep(0.01)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _take(spool_dir: Where) -> bool:
    """Rename events.jsonl to draining.jsonl under the appenders' lock; False if empty."""
    path = os.path.join(spool_dir, EVENTS)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_size == 0:
            return False
        os.rename(path, os.path.join(spool_dir, DRAINING))
        return True
    finally:
        os.close(fd)


def _lines(path: str) -> Iterator[str]:
    try:
        handle = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            line = line.strip()
            if line:
                yield line[:LINE_MAX] if len(line) > LINE_MAX else line


def _time_of(line: str) -> datetime | None:
    try:
        value = json.loads(line).get("at")
        parsed = datetime.fromisoformat(value)
    except (ValueError, AttributeError, TypeError):
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else None


def _reject(spool_dir: Where, line: str, reason: str) -> None:
    entry = {
        "rejected_at": clock.now().isoformat(),
        "reason": " ".join(str(reason).split())[:500],
        "line": line,
    }
    fd = os.open(os.path.join(spool_dir, REJECTED), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(entry, ensure_ascii=False) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _rewrite(path: str, lines: list[str]) -> None:
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, "".join(line + "\n" for line in lines).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
