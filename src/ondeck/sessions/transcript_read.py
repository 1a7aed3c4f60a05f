"""A whole Claude Code transcript read for what a session record keeps: when it began and
was last active, where (cwd, `gitBranch`), the agent's `version`, its last answer and its
compaction summaries. `session import` reads every past session's transcript with it, and
the jobs tick the transcript of a session whose end never came.

The format is Claude Code's internal one and changes between versions (tests/fixtures/
claude_transcripts holds real ones of several): this reads the few fields it needs where
they are, skips and counts the record types it does not know, and takes nothing on trust.
The file and every line are untrusted: only a regular file is read, through no symbolic
link. One line is one record, and a record that cannot be read is skipped and counted with
its reason (`Transcript.refused`), the rest of the file read on: a line longer than
LINE_MAX (skipped unread), bytes that are not UTF-8, a line that is not JSON or not a JSON
object. A cut last line (a crash mid-write) is not refused: it is the file's end. A file
none of whose lines can be read is `Unreadable` as a whole. Every entry read is mended as a
hook's payload is (events.mended: a lone surrogate is U+FFFD), so no field read from
it can stop a store or an encoder later; a short field (version, branch, trigger) is taken
only as a word (events.word: printable, no control character), as a hook takes its
own. A timestamp after `now` (a clock that was wrong) is not an instant the session was
active.

A session is where it was launched: the first entry of the session's own (not a
subagent's, `isSidechain`) that names its `cwd`, as the session-start hook reads it. A
subagent that ran elsewhere does not move the session to another side.

The last answer is the one the session-end hook reads (sessions/transcript.answer_of).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ondeck.sessions.capture.events import WORD_LIMITS, mended, word
from ondeck.sessions.capture.transcript_tail import TEXT_MAX, answer_of, instant_of

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
# The reasons a file's refused lines are kept with (the rest counted): a file of a million
# bad lines is one line of the report, not a million.
REASONS_KEPT = 3
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


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
    oversized: int = 0  # lines longer than LINE_MAX, skipped (and refused)
    refused: int = 0  # lines that could not be read as an entry: skipped
    reasons: list[str] = field(default_factory=list)  # the first REASONS_KEPT of them
    mended: int = 0  # lone surrogates in its strings, made U+FFFD
    launched: bool = False  # cwd is the launch folder's (an entry of the session's own)
    future: int = 0  # timestamps after now, not taken

    def refuse(self, reason: str) -> None:
        """A line that could not be read as an entry: skipped, counted, its reason kept."""
        self.refused += 1
        if len(self.reasons) < REASONS_KEPT:
            self.reasons.append(reason)


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
        session = entry.get("sessionId")  # a subagent's entries name their session too
        if isinstance(session, str) and session.strip() and len(session) <= 200:
            found.session_id = session.strip()
        if entry.get("isSidechain") is True or subagent:
            found.sidechain += 1  # a subagent's: neither its place nor its words are the session's
            continue
        _place(entry, found)
        if kind == "system" and entry.get("subtype") == "compact_boundary":
            meta = entry.get("compactMetadata")
            trigger = meta.get("trigger") if isinstance(meta, dict) else None
            pending_trigger = word(trigger, WORD_LIMITS["trigger"])
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
    """Each JSON object of the file, mended (events.mended) and counted in `found`; a
    line that is none is refused in `found` and skipped (a cut last line is counted
    unknown). Raises `Empty` for a file with no line, `Unreadable` for one whose every line
    was refused."""
    lines = _lines(path)
    number = 0
    counts: dict[str, int] = {}
    try:
        for number, raw in enumerate(lines, start=1):
            if raw is None:
                found.oversized += 1
                found.refuse(f"line {number} is longer than {LINE_MAX // 2**20} MiB")
                continue
            raw = raw.strip()
            if not raw:
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                found.refuse(f"line {number} is not UTF-8")
                continue
            try:
                entry = json.loads(text)
            except (ValueError, RecursionError):
                if lines.at_end():  # a crash mid-write cuts the last line: the rest stands
                    count_unknown(found, "(cut last line)")
                    continue
                found.refuse(f"line {number} is not JSON")
                continue
            if not isinstance(entry, dict):
                found.refuse(f"line {number} is not a JSON object")
                continue
            found.entries += 1
            # Valid UTF-8 holds no surrogate: only an escape (`\\udc80`) can make one, so a
            # line without one is taken as it is, unwalked.
            if _SURROGATE_ESCAPE.search(text) is not None:
                entry = mended(entry, counts)
                found.mended = counts.get("surrogates", 0)
            yield entry
    finally:
        lines.file.close()
    if found.entries == 0 and found.refused:
        raise Unreadable(f"no line of it could be read ({'; '.join(found.reasons)})")
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
    """Version: the latest the session's own entries give; its cwd, the first (where it was
    launched: a session that moved on is still filed where it began, as its start hook
    filed it), with the latest branch it was on there."""
    version = word(entry.get("version"), 32)
    if version is not None:
        found.version = version
    value = entry.get("cwd")
    cwd = value if isinstance(value, str) and value.startswith("/") else None
    if not found.launched and cwd is not None and len(cwd) <= 4_000 and "\x00" not in cwd:
        found.cwd, found.launched = cwd, True
        found.branch = word(entry.get("gitBranch"), 255)
    elif found.launched and cwd is not None and found.cwd == cwd:
        found.branch = word(entry.get("gitBranch"), 255) or found.branch


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
