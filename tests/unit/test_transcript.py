"""The transcript's last assistant message, read from the end by the session-end hook
(sessions/capture/transcript_tail.py): bounded, and every line untrusted."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ondeck.sessions.capture import transcript_tail as transcript
from ondeck.sessions.capture.transcript_tail import last_message


def line(kind: str, content: Any, **more: Any) -> str:
    entry = {"type": kind, "message": {"role": kind, "content": content}, **more}
    return json.dumps(entry, ensure_ascii=False)


def write(path: Path, *lines: str) -> dict[str, str]:
    path.write_text("\n".join(lines) + "\n")
    return {"transcript_path": str(path)}


def test_the_last_assistant_text_with_its_time(tmp_path: Path) -> None:
    payload = write(
        tmp_path / "t.jsonl",
        line("user", "hi"),
        line("assistant", [{"type": "text", "text": "first"}], timestamp="2026-06-15T09:00:00Z"),
        line("user", "more"),
        line(
            "assistant",
            [{"type": "text", "text": "마지막 답"}, {"type": "text", "text": "and more"}],
            timestamp="2026-06-15T09:05:00.123Z",
        ),
    )
    assert last_message(payload) == {
        "text": "마지막 답\n\nand more",
        "at": "2026-06-15T09:05:00.123000+00:00",
    }


def test_tool_calls_subagents_and_garbage_are_skipped(tmp_path: Path) -> None:
    payload = write(
        tmp_path / "t.jsonl",
        line("assistant", [{"type": "text", "text": "the answer"}]),
        line("assistant", [{"type": "text", "text": "a subagent"}], isSidechain=True),
        line("assistant", [{"type": "tool_use", "id": "x", "name": "Bash", "input": {}}]),
        '{"type": "assistant", "message": ',  # torn
        "[" * 100_000,  # deep nesting
        '{"type": "assistant", "message": {"content": 7}}',
        '"assistant"',
        line("assistant", [{"type": "text", "text": 5}]),
    )
    assert last_message(payload) == {"text": "the answer", "at": None}


def test_no_transcript_no_message(tmp_path: Path) -> None:
    assert last_message({}) is None
    assert last_message({"transcript_path": "relative.jsonl"}) is None
    assert last_message({"transcript_path": str(tmp_path / "missing.jsonl")}) is None
    assert last_message({"transcript_path": str(tmp_path)}) is None  # a directory
    assert last_message(write(tmp_path / "t.jsonl", line("user", "hi"))) is None


def test_a_fifo_is_not_waited_for(tmp_path: Path) -> None:
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    assert last_message({"transcript_path": str(fifo)}) is None


def test_only_the_tail_is_read(tmp_path: Path) -> None:
    """An answer further from the end than TAIL_MAX is not looked for."""
    path = tmp_path / "t.jsonl"
    filler = line("user", "x" * 1000)
    with path.open("w") as handle:
        handle.write(line("assistant", [{"type": "text", "text": "far back"}]) + "\n")
        for _ in range(transcript.TAIL_MAX // len(filler) + 2):
            handle.write(filler + "\n")
    assert last_message({"transcript_path": str(path)}) is None
    with path.open("a") as handle:
        handle.write(line("assistant", [{"type": "text", "text": "near the end"}]) + "\n")
    assert last_message({"transcript_path": str(path)}) == {"text": "near the end", "at": None}
