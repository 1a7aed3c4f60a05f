"""A whole Claude Code transcript read for what a session record keeps: when it began and
was last active, where (cwd, `gitBranch`), the agent's `version`, its last answer and its
compaction summaries. `session import` reads every past session's transcript with it, and
the jobs tick the transcript of a session whose end never came.

The format is Claude Code's internal one and changes between versions (tests/fixtures/
claude_transcripts holds real ones of several): this reads the few fields it needs where
they are, skips and counts the record types it does not know, and takes nothing on trust.
The file and every line are untrusted: only a regular file is read, through no symbolic
link; a line longer than LINE_MAX is skipped unread; bytes that are not UTF-8 or a line
that is not JSON (but the last, which a crash may have cut) make the file unreadable as a
whole (`Unreadable`), so nothing of it is half-imported; a timestamp after `now` (a clock
that was wrong) is not an instant the session was active.

The last answer is the one the session-end hook reads (sessions/transcript.answer_of).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ondeck.sessions.transcript import TEXT_MAX, answer_of, instant_of

LINE_MAX = 8 * 1024 * 1024
FILE_MAX = 1024 * 1024 * 1024
# A transcript's clock is the machine's: seconds ahead of the store's is not the future.
AHEAD_MAX = timedelta(minutes=5)
# The record types Claude Code writes (1.0 to 2.1) that a record has nothing to take from
# but are known; any other is counted as unknown.
KNOWN_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "attachment",
        "queue-operation",
        "file-history-snapshot",
        "last-prompt",
        "cost-state",
        "mode",
        "atis-latch",
        "api-request",
        "api-request-shape",
        "api-request-blob",
        "progress",
        "custom-title",
        "tag",
    }
)
SUMMARIES_MAX = 200


class Unreadable(Exception):
    """The file cannot be read as a transcript: why, in a line."""


class Empty(Unreadable):
    """The file holds nothing (Claude Code leaves empty ones): no session to read."""


@dataclass
class Transcript:
    path: str
    session_id: str | None = None
    first_at: datetime | None = None
    last_at: datetime | None = None
    cwd: str | None = None
    branch: str | None = None
    version: str | None = None
    last_word: dict[str, Any] | None = None  # {"text", "at"} (transcript.answer_of)
    # {"at", "trigger", "text"}: Claude's summary at each compaction, oldest first.
    summaries: list[dict[str, Any]] = field(default_factory=list)
    entries: int = 0
    unknown: dict[str, int] = field(default_factory=dict)  # unknown record types, counted
    sidechain: int = 0  # entries of a subagent written into the session's own file
    oversized: int = 0  # lines longer than LINE_MAX, skipped
    future: int = 0  # timestamps after now, not taken


def read_transcript(path: str, now: datetime, *, subagent: bool = False) -> Transcript:
    """The transcript at `path` (a regular file, not through a symbolic link). Raises
    `Unreadable` with the reason. `subagent`: a subagent's file, whose entries are all its
    own (its answers are not the session's)."""
    found = Transcript(path=path)
    pending_trigger: str | None = None
    for entry in entries(path, found):
        kind = entry.get("type")
        if kind not in KNOWN_TYPES:
            count_unknown(found, kind)
            continue
        at = note_time(entry.get("timestamp"), now, found)
        _place(entry, found)
        if entry.get("isSidechain") is True or subagent:
            found.sidechain += 1
            continue
        if kind == "system" and entry.get("subtype") == "compact_boundary":
            meta = entry.get("compactMetadata")
            trigger = meta.get("trigger") if isinstance(meta, dict) else None
            pending_trigger = trigger[:16] if isinstance(trigger, str) else None
        elif kind == "user" and entry.get("isCompactSummary") is True:
            summary = _user_text(entry)
            if summary and len(found.summaries) < SUMMARIES_MAX:
                found.summaries.append(
                    {"at": at or found.last_at, "trigger": pending_trigger, "text": summary}
                )
            pending_trigger = None
        elif kind == "assistant":
            answer = answer_of(entry)
            if answer is not None:
                found.last_word = said_by(answer, now)
    return found


def entries(path: str, found: Transcript) -> Iterator[dict[str, Any]]:
    """Each JSON object of the file, counted in `found`; raises `Unreadable` for a file
    that is not one line of JSON an entry (the last line may be cut), or has none."""
    lines = _lines(path)
    number = 0
    try:
        for number, raw in enumerate(lines, start=1):
            if raw is None:
                found.oversized += 1
                continue
            raw = raw.strip()
            if not raw:
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise Unreadable(f"line {number} is not UTF-8") from None
            try:
                entry = json.loads(text)
            except (ValueError, RecursionError):
                if lines.at_end():  # a crash mid-write cuts the last line: the rest stands
                    count_unknown(found, "(cut last line)")
                    continue
                raise Unreadable(f"line {number} is not JSON") from None
            if not isinstance(entry, dict):
                raise Unreadable(f"line {number} is not a JSON object")
            found.entries += 1
            yield entry
    finally:
        lines.file.close()
    if found.entries == 0:
        raise Empty("the file is empty" if not number else "no transcript entry in it")


def count_unknown(found: Transcript, kind: Any) -> None:
    name = kind[:40] if isinstance(kind, str) else "(no type)"
    found.unknown[name] = found.unknown.get(name, 0) + 1


def said_by(answer: dict[str, Any], now: datetime) -> dict[str, Any]:
    """An answer ({"text", "at"}) without its time when that is after now."""
    said = instant_of(answer.get("at"))
    if said is not None and datetime.fromisoformat(said) > now + AHEAD_MAX:
        return {**answer, "at": None}
    return answer


def note_time(value: Any, now: datetime, found: Transcript) -> datetime | None:
    """An entry's timestamp, taken into the transcript's first and last activity; None
    when it is not one, or is after now (counted)."""
    text = instant_of(value)
    if text is None:
        return None
    at = datetime.fromisoformat(text)
    if at > now + AHEAD_MAX:
        found.future += 1
        return None
    found.first_at = at if found.first_at is None else min(found.first_at, at)
    found.last_at = at if found.last_at is None else max(found.last_at, at)
    return at


def _place(entry: dict[str, Any], found: Transcript) -> None:
    """Session id, cwd, branch and version: the latest the transcript gives (a session that
    moved ends where its last entry was)."""
    for key, name, limit in (
        ("sessionId", "session_id", 200),
        ("cwd", "cwd", 4_000),
        ("gitBranch", "branch", 255),
        ("version", "version", 32),
    ):
        value = entry.get(key)
        if isinstance(value, str) and value.strip() and len(value) <= limit and "\x00" not in value:
            if key == "cwd" and not value.startswith("/"):
                continue
            setattr(found, name, value.strip() if key != "cwd" else value)


def _user_text(entry: dict[str, Any]) -> str | None:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content[:TEXT_MAX] or None
    if isinstance(content, list):
        texts = [
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        return "\n\n".join(texts)[:TEXT_MAX] or None
    return None


class _Lines:
    """The file's lines as bytes (None for one longer than LINE_MAX), read in bounded
    pieces; `at_end()`: whether the line just given was the last."""

    def __init__(self, fd: int) -> None:
        self.file = os.fdopen(fd, "rb")
        self.done = False

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> bytes | None:
        line = self.file.readline(LINE_MAX + 1)
        if not line:
            self.file.close()
            self.done = True
            raise StopIteration
        if len(line) > LINE_MAX and not line.endswith(b"\n"):
            while True:  # the rest of the huge line, read and dropped in pieces
                more = self.file.readline(LINE_MAX)
                if not more or more.endswith(b"\n"):
                    break
            return None
        return line

    def at_end(self) -> bool:
        if self.done:
            return True
        here = self.file.tell()
        more = self.file.read(1)
        self.file.seek(here)
        return not more


def _lines(path: str) -> _Lines:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        raise Unreadable(f"cannot open it: {exc.strerror or exc}") from None
    except ValueError:
        raise Unreadable("not a usable path") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable("not a regular file")
        if info.st_size > FILE_MAX:
            raise Unreadable(f"{info.st_size} bytes: larger than {FILE_MAX} bytes")
    except BaseException:
        os.close(fd)
        raise
    return _Lines(fd)
