"""The last assistant message of a Claude Code transcript, read from its end by the session's
end hook.

Why: Claude Code runs ondeck's Stop hook in the background (`"async": true`, so a turn never
waits for it) and cancels it when a `claude -p` session ends: the last turn's answer never
reaches a Stop. The end hook is not cancelled, so it reads what that Stop should have
brought from the transcript, and the store keeps it when the record lacks it or holds an
older one (sessions/rows.py).

The transcript is a JSONL file Claude Code writes; the path comes in the hook's payload, and
both the path and the file are untrusted: only a regular file is read (a FIFO would block,
a device would never end), at most TAIL_MAX bytes from its end, and each line is checked
field by field. Standard library only: this runs in the hook.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from typing import Any

# The last answer is near the end: a final answer of 4 MiB is far past what a record keeps
# (4,000 characters), and a turn's tool results after it do not exist (it is the last).
TAIL_MAX = 4 * 1024 * 1024
# What is handed on: the record keeps LAST_WORD_MAX characters of it after scrubbing, and
# the scrubber reads a bounded window (events.TEXT_WINDOW).
TEXT_MAX = 65_536


def last_message(payload: dict[str, Any]) -> dict[str, Any] | None:
    """{"text", "at"} of the transcript's last assistant message with text (`at`: its
    timestamp as ISO-8601 UTC, or None when the line has none usable); None when there is
    no transcript, it cannot be read, or it holds no such message."""
    tail = _tail_of(payload)
    if tail is None:
        return None
    for line in reversed(tail.split(b"\n")):
        found = assistant_text(line)
        if found is not None:
            return found
    return None


def last_activity(payload: dict[str, Any]) -> str | None:
    """The latest timestamp of the transcript's last lines (ISO-8601 UTC), or None: when the
    session was last active, as its transcript says."""
    tail = _tail_of(payload)
    if tail is None:
        return None
    latest: str | None = None
    for line in tail.split(b"\n")[-200:]:
        if b'"timestamp"' not in line:
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            continue
        at = instant_of(entry.get("timestamp")) if isinstance(entry, dict) else None
        if at is not None and (latest is None or at > latest):
            latest = at
    return latest


def owned_transcript(value: Any) -> str | None:
    """The real path of `value` when that is a transcript file of this user's Claude Code:
    a `.jsonl` regular file of this user under ~/.claude/projects (or
    $CLAUDE_CONFIG_DIR/projects), symbolic links and `..` resolved first; else None. A
    hook's payload names it, and nothing outside that folder is ever kept or read."""
    import os
    import stat

    if not isinstance(value, str) or not value.startswith("/") or "\x00" in value:
        return None
    if len(value) > 1_000 or not value.endswith(".jsonl"):
        return None
    roots = [os.path.expanduser("~/.claude")]
    if os.environ.get("CLAUDE_CONFIG_DIR", "").startswith("/"):
        roots.append(os.environ["CLAUDE_CONFIG_DIR"])
    try:
        real = os.path.realpath(value)
        info = os.lstat(real)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or len(real) > 1_000:
        return None
    for root in roots:
        projects = os.path.join(os.path.realpath(root), "projects") + os.sep
        if real.startswith(projects):
            return real
    return None


def _tail_of(payload: dict[str, Any]) -> bytes | None:
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
        return None
    return _tail(path)


def _tail(path: str) -> bytes | None:
    import os
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        start = max(info.st_size - TAIL_MAX, 0)
        os.lseek(fd, start, os.SEEK_SET)
        chunks, left = [], info.st_size - start
        while left > 0:
            chunk = os.read(fd, min(left, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if start > 0:  # the first line is cut: it is not a line
        data = data.partition(b"\n")[2]
    return data


def assistant_text(line: bytes) -> dict[str, Any] | None:
    """{"text", "at"} of one transcript line when it is the session's own assistant message
    with text, else None."""
    line = line.strip()
    if not line.startswith(b"{") or b'"assistant"' not in line:
        return None  # most lines are not the assistant's: skip them unparsed
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return answer_of(entry)


def answer_of(entry: Any) -> dict[str, Any] | None:
    """{"text", "at"} of a parsed transcript entry when it is the session's own assistant
    message with text (the reader of sessions/transcript_read.py shares it), else None."""
    if not isinstance(entry, dict) or entry.get("type") != "assistant":
        return None
    if entry.get("isSidechain") is True:  # a subagent's answer, not the session's
        return None
    message = entry.get("message")
    if not isinstance(message, dict) or message.get("role", "assistant") != "assistant":
        return None
    content = message.get("content")
    if isinstance(content, str):
        texts = [content]
    elif isinstance(content, list):
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ]
    else:
        return None
    text = "\n\n".join(t for t in texts if t.strip())
    if not text:
        return None  # a turn's tool call: the answer, if any, comes after it
    return {"text": text[:TEXT_MAX], "at": instant_of(entry.get("timestamp"))}


def instant_of(value: Any) -> str | None:
    """A transcript's timestamp as ISO-8601 UTC, or None when it is not a usable one."""
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None or not 2000 <= parsed.year <= 9000:
        return None
    return parsed.astimezone(UTC).isoformat()
