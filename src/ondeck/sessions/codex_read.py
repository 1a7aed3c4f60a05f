"""A Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) read for what a
session record keeps, as transcript_read.py reads Claude Code's.

The format, from openai/codex (codex-rs/protocol, `RolloutLine`): one JSON object a line,
`{"timestamp", "type", "payload"}`, where `type` is `session_meta` (the first line: `id`,
`cwd`, `cli_version`, `git.branch`), `response_item` (a message: `role`, `content` blocks
of `output_text`), `compacted` (`message`: the summary that replaced the history),
`turn_context` (`cwd` of the turn) or `event_msg` (`agent_message`: the answer as shown).
Anything else is skipped and counted, as is anything malformed within a known type.

A session is where it was launched: the first `session_meta`'s `cwd` (a later turn's cwd,
or a forked session's parent's meta, does not move it); a turn's only when no meta gave one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ondeck.sessions.capture.events import session_id_of, word
from ondeck.sessions.capture.transcript_tail import TEXT_MAX
from ondeck.sessions.transcript_read import (
    SUMMARIES_MAX,
    Transcript,
    count_unknown,
    entries,
    note_time,
    said_by,
)

KNOWN_TYPES = frozenset({"session_meta", "response_item", "compacted", "turn_context", "event_msg"})


def read_rollout(path: str, now: datetime) -> Transcript:
    """The rollout at `path`; raises transcript_read.Unreadable with the reason."""
    found = Transcript(path=path)
    metas = 0
    for entry in entries(path, found):
        kind, payload = entry.get("type"), entry.get("payload")
        if kind not in KNOWN_TYPES or not isinstance(payload, dict):
            count_unknown(found, kind)
            continue
        at = note_time(entry.get("timestamp"), now, found)
        if kind == "session_meta":
            metas += 1
            if metas == 1:  # this session's: a forked one carries its parent's after it
                _meta(payload, found)
        elif kind == "turn_context" and found.cwd is None:
            found.cwd = _path(payload.get("cwd"))  # an older rollout's meta without one
        elif kind == "compacted":
            text = payload.get("message")
            if isinstance(text, str) and text.strip() and len(found.summaries) < SUMMARIES_MAX:
                found.summaries.append({"at": at, "trigger": None, "text": text[:TEXT_MAX]})
        elif kind == "response_item":
            text = _assistant_text(payload)
            if text:
                stamp = at.isoformat() if at is not None else None
                found.last_word = said_by({"text": text[:TEXT_MAX], "at": stamp}, now)
    return found


def _meta(payload: dict[str, Any], found: Transcript) -> None:
    session = payload.get("id")
    if isinstance(session, str):
        found.session_id = session_id_of({"session_id": session})
    cwd = _path(payload.get("cwd"))
    if cwd is not None:
        found.cwd, found.launched = cwd, True
    found.version = word(payload.get("cli_version"), 32) or found.version
    git = payload.get("git")
    found.branch = word(git.get("branch") if isinstance(git, dict) else None, 255) or found.branch


def _path(value: Any) -> str | None:
    if isinstance(value, str) and value.startswith("/") and "\x00" not in value:
        return value[:4_000]
    return None


def _assistant_text(payload: dict[str, Any]) -> str | None:
    if payload.get("type") != "message" or payload.get("role") != "assistant":
        return None
    content = payload.get("content")
    if not isinstance(content, list):
        return None
    texts = [
        b["text"]
        for b in content
        if isinstance(b, dict)
        and b.get("type") in ("output_text", "text")
        and isinstance(b.get("text"), str)
        and b["text"].strip()
    ]
    return "\n\n".join(texts) or None
