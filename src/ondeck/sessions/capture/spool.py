"""The spool: hook records that could not be stored yet, as JSON lines in `<data dir>/spool/`.

A hook that reaches neither a server nor the database appends its record here and exits 0;
the next hook that reaches the store, and every jobs tick, drains the spool in order before
anything newer. Records carry their own time and fingerprint, so a record applied twice (a
drain that crashed after applying and before forgetting) changes nothing the second time.

The files are named in `spool_files`, which every hook reads (has_waiting) before it needs
anything of this module.

Nothing here is deleted before the store has it: a record leaves `draining.jsonl` only once
applied (or moved to `rejected.jsonl`, never dropped).

Each line set aside is set aside once, even by a drain killed midway: `draining.jsonl` is
cut only when a drain ends, so the next one reads the same lines again. Applying a record
twice changes nothing, but a second copy in `rejected.jsonl` would be counted twice by the
warning that counts its lines; so each entry names the line it came from (`from`: the
taken file's inode and mtime, which no write changes while it is drained, and the line's
offset), and a drain passes over a line whose entry is already there.

A spool may be large (a long outage: tens of thousands of records, tens of MB): it is read a
line at a time, never whole, and a drain may be given a time budget (a hook's), after which
what is left waits, in order, for the next drain. A line torn by a crash mid-write is a
fragment of its own: the next append starts on a new line, so only the fragment is refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from datetime import UTC, datetime

from ondeck.core import clock
from ondeck.core.frozen import Frozen
from ondeck.host import private
from ondeck.sessions.capture.spool_files import DRAINING as DRAINING
from ondeck.sessions.capture.spool_files import EVENTS as EVENTS
from ondeck.sessions.capture.spool_files import LOCK as LOCK
from ondeck.sessions.capture.spool_files import REJECTED as REJECTED
from ondeck.sessions.capture.spool_files import has_waiting as has_waiting

APPEND_PATIENCE_S = 2.0  # within a hook's time; lost races mean the drain progressed
STUCK_AFTER_S = 600  # a record waiting longer than this is a warning (context, System page)
LINE_MAX = 1024 * 1024
# What one batch of a drain holds at most, so a drain's memory does not grow with the spool.
BATCH_RECORDS = 100
BATCH_BYTES = 512 * 1024

# Every hook that stores a record now writes it here first (capture/pipeline.py), so this
# module is on every hook's path: `typing` (a third of `python -c pass`) stays out.
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    Where = str | os.PathLike[str]
    # An outcome per record: None when applied (or already there), else why it was refused.
    Apply = Callable[[list[dict[str, Any]]], list[str | None]]


class SpoolStatus(Frozen, kw_only=False):
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


class Drained(Frozen, kw_only=False):
    applied: int
    rejected: int
    left: int  # still waiting: the store went away again, or another process is draining
    busy: bool = False
    why: str = ""  # why the store took no more (the `StoreGone` that stopped the drain)


class StoreGone(Exception):
    """The store cannot take records now: stop draining, keep the rest."""


def append(spool_dir: Where, record: dict[str, Any]) -> None:
    """Add a record at the end, durably (fsync), safe against other hooks and a drainer."""
    private.make_dirs(spool_dir, own=True)
    path = os.path.join(spool_dir, EVENTS)
    line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    # A drainer takes the file (renames it) only when something is in it, so a lost race
    # means others progressed: keep trying for a while, not a fixed number of times (hooks
    # appending at once beside a busy drain can lose many races in a row).
    give_up = time.monotonic() + APPEND_PATIENCE_S
    tries = 0
    while tries == 0 or time.monotonic() < give_up:
        tries += 1
        if tries > 1:
            time.sleep(min(0.001 * tries, 0.05))
        # Read too: whether the file ends mid-line (_after_torn).
        fd = private.open_file(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
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
            os.write(fd, _after_torn(fd) + line)
            os.fsync(fd)
            return
        finally:
            os.close(fd)
    raise OSError(f"could not append to {path}: it kept being taken ({tries} tries)")


def _after_torn(fd: int) -> bytes:
    """A newline when the file does not end with one: a writer died mid-line (a crash, a
    full disk), and this record must not be glued to its fragment."""
    size = os.fstat(fd).st_size
    if size == 0:
        return b""
    return b"" if os.pread(fd, 1, size - 1) == b"\n" else b"\n"


def reject(spool_dir: Where, record: dict[str, Any], reason: str) -> None:
    """Set a record aside in rejected.jsonl with the reason (a store refused its content)."""
    os.makedirs(spool_dir, mode=0o700, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
    _reject(spool_dir, line, reason)


def status(spool_dir: Where) -> SpoolStatus:
    """How many records wait, since when, and how many were refused (lines counted, not
    parsed: a large spool is read at the speed of the disk)."""
    waiting, oldest = 0, None
    for name in (DRAINING, EVENTS):
        for raw in _raw(os.path.join(spool_dir, name)):
            waiting += 1
            if oldest is None and raw is not None:
                oldest = _time_of(raw.decode("utf-8", "replace"))
    rejected = sum(1 for _ in _raw(os.path.join(spool_dir, REJECTED)))
    return SpoolStatus(
        path=os.fspath(spool_dir), waiting=waiting, oldest_at=oldest, rejected=rejected
    )


def find(
    spool_dir: Where, match: Callable[[dict[str, Any]], bool], *, containing: str = ""
) -> dict[str, Any] | None:
    """The first waiting record that `match` accepts (the session end looks for its start);
    only lines holding `containing` (as its JSON text) are parsed, so a large spool is read
    at the speed of a search rather than of a parser."""
    needle = json.dumps(containing, ensure_ascii=False)[1:-1].encode() if containing else b""
    for name in (DRAINING, EVENTS):
        for raw in _raw(os.path.join(spool_dir, name)):
            if raw is None or (needle and needle not in raw):
                continue
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict) and match(record):
                return record
    return None


def drain(
    spool_dir: Where,
    apply: Apply,
    parse: Callable[[Any], Any],
    *,
    wait_s: float = 0.5,
    budget_s: float | None = None,
) -> Drained:
    """Apply waiting records in order, in batches, and forget those the store has.

    `parse` checks a record (ValueError: malformed, moved to rejected.jsonl); `apply` stores
    a batch and answers per record (None: stored; a string: refused, moved to rejected.jsonl)
    and raises `StoreGone` (or answers for fewer records) when the store went away: what
    it did not answer for stays, in order, for the next drain. With `budget_s`, no new batch
    starts once that many seconds have passed: the rest waits for the next drain."""
    if not has_waiting(spool_dir):
        return Drained(applied=0, rejected=0, left=0)
    until = None if budget_s is None else time.monotonic() + budget_s
    with _drain_lock(spool_dir, wait_s) as held:
        if not held:
            return Drained(applied=0, rejected=0, left=status(spool_dir).waiting, busy=True)
        total = _Tally()
        while True:
            draining = os.path.join(spool_dir, DRAINING)
            if not os.path.exists(draining) and not _take(spool_dir):
                break
            done = _drain_file(spool_dir, draining, apply, parse, until, total)
            if done < 0:  # all of it applied or set aside
                os.unlink(draining)
                if until is not None and time.monotonic() >= until and has_waiting(spool_dir):
                    break
                continue
            if done > 0:
                _rewrite_from(draining, done)
            break
        left = status(spool_dir).waiting if has_waiting(spool_dir) else 0
        return Drained(applied=total.applied, rejected=total.rejected, left=left, why=total.why)


class _Tally:
    def __init__(self) -> None:
        self.applied = self.rejected = 0
        self.why = ""


def _drain_file(
    spool_dir: Where,
    path: str,
    apply: Apply,
    parse: Callable[[Any], Any],
    until: float | None,
    total: _Tally,
) -> int:
    """Drain one taken file a batch at a time: -1 when all of it is done, else the offset
    of the first line still waiting (0: nothing done)."""
    with open(path, "rb") as handle:
        taken = os.fstat(handle.fileno())
        source = f"{taken.st_ino}:{taken.st_mtime_ns}:"
        # Lines of this very file a drain killed midway set aside already (module doc).
        already = _rejected_from(spool_dir, source)

        def set_aside(start: int, text: str, reason: str) -> None:
            if f"{source}{start}" in already:
                return
            _reject(spool_dir, text, reason, source=f"{source}{start}")
            total.rejected += 1

        lines = _raw_lines(handle)
        done = 0
        pending: tuple[int, int, bytes | None] | None = None
        while True:
            if until is not None and time.monotonic() >= until:
                return done
            batch: list[tuple[int, int, str, Any]] = []  # (start, end, line, parsed)
            size = 0
            while len(batch) < BATCH_RECORDS and size < BATCH_BYTES:
                item = pending or next(lines, None)
                pending = None
                if item is None:
                    break
                start, end, raw = item
                text, parsed, problem = _parsed(raw, parse)
                if problem is not None:
                    if not batch:  # nothing before it waits: set it aside now
                        set_aside(start, text, problem)
                        done = end
                        continue
                    pending = item  # after this batch, once those before it are applied
                    break
                batch.append((start, end, text, parsed))
                size += end - start
            if not batch:
                return -1 if pending is None else done
            try:
                outcomes = apply([parsed for _, _, _, parsed in batch])
            except StoreGone as exc:
                outcomes, total.why = [], str(exc)
            for (start, end, text, _), outcome in zip(batch, outcomes, strict=False):
                if outcome is None:
                    total.applied += 1
                else:
                    set_aside(start, text, outcome)
                done = end
            if len(outcomes) < len(batch):
                return batch[len(outcomes)][0]


def _parsed(raw: bytes | None, parse: Callable[[Any], Any]) -> tuple[str, Any, str | None]:
    """(the line as text, the parsed record, None) or (the line, None, why it is refused)."""
    if raw is None:
        return "", None, f"malformed: a line over {LINE_MAX} bytes"
    text = raw.decode("utf-8", "replace").strip()
    try:
        return text, parse(json.loads(text)), None
    except (ValueError, TypeError, RecursionError) as exc:
        return text, None, f"malformed: {exc}"


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


def _raw_lines(handle: Any) -> Iterator[tuple[int, int, bytes | None]]:
    """(start offset, end offset, the line) for each line that is not blank, read a line at
    a time; a line over LINE_MAX is skipped through and given as None."""
    at = 0
    while True:
        raw = handle.readline(LINE_MAX + 1)
        if not raw:
            return
        start = at
        at += len(raw)
        if len(raw) > LINE_MAX and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = handle.readline(LINE_MAX)
                at += len(raw)
            yield start, at, None
        elif raw.strip():
            yield start, at, raw


def _raw(path: str) -> Iterator[bytes | None]:
    """The lines of a file that are not blank, as bytes (None: a line over LINE_MAX)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return
    with handle:
        for _, _, raw in _raw_lines(handle):
            yield raw


def _time_of(line: str) -> datetime | None:
    try:
        value = json.loads(line).get("at")
        parsed = datetime.fromisoformat(value)
    except (ValueError, AttributeError, TypeError):
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else None


def _rejected_from(spool_dir: Where, source: str) -> set[str]:
    """The `from` of every entry in rejected.jsonl set aside from the file `source` names
    (only the lines naming it are parsed: the file may hold years of entries)."""
    needle = f'"from": "{source}'.encode()
    found: set[str] = set()
    for raw in _raw(os.path.join(spool_dir, REJECTED)):
        if raw is None or needle not in raw:
            continue
        with contextlib.suppress(ValueError, AttributeError):
            found.add(str(json.loads(raw).get("from")))
    return found


def _reject(spool_dir: Where, line: str, reason: str, *, source: str | None = None) -> None:
    entry = {
        "rejected_at": clock.now().isoformat(),
        "reason": " ".join(str(reason).split())[:500],
        "line": line,
        **({"from": source} if source is not None else {}),
    }
    fd = os.open(os.path.join(spool_dir, REJECTED), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(entry, ensure_ascii=False) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _rewrite_from(path: str, offset: int) -> None:
    """Keep what follows `offset` (the lines not yet applied), copied in pieces: the file
    may be large."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with open(path, "rb") as source:
            source.seek(offset)
            while chunk := source.read(1024 * 1024):
                os.write(fd, chunk)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
