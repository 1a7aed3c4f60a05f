"""`session import` files a session where it was launched, and reads a transcript record by
record (issue 35): a subagent (`isSidechain`) that ran in another side's folder does not
move its session there, for Claude Code (in the session's file, or a subagent's file) and
for Codex (a later turn elsewhere); a line that cannot be read is skipped and counted with
its file, the rest of the file and of the run read on; a string holding a lone surrogate
or a control character in any field read is mended or left out as a hook's payload is,
never a stop of the whole import. Both stores."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from ondeck.db.tables import session_compactions, sessions
from ondeck.host.quick_settings import HookConfig
from ondeck.sessions.session_import import import_sessions

NOW = datetime(2026, 12, 20, 9, 0, tzinfo=UTC)
SID = "5e1f0c2a-7b3d-4e8f-9a60-1c2d3e4f5a6b"
CODEX_SID = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    found = {"work": tmp_path / "work" / "survey", "personal": tmp_path / "personal" / "일기"}
    for path in found.values():
        path.mkdir(parents=True)
    return found


@pytest.fixture
def config(places: dict[str, Path]) -> HookConfig:
    return HookConfig(
        sides={side: [str(path.parent)] for side, path in places.items()},
        projects={str(places["work"]): "survey"},
    )


def entry(kind: str, minute: int, cwd: Any, **more: Any) -> dict[str, Any]:
    found = {
        "type": kind,
        "sessionId": SID,
        "timestamp": f"2026-12-01T10:{minute:02d}:00Z",
        "cwd": cwd,
        "gitBranch": "main",
        "version": "2.1.332",
        "isSidechain": False,
    }
    if kind == "assistant":
        found["message"] = {"role": "assistant", "content": [{"type": "text", "text": "답"}]}
    else:
        found["message"] = {"role": "user", "content": "일을 하자"}
    return {**found, **more}


def write(path: Path, lines: list[Any]) -> Path:
    """JSON lines as Claude Code writes them: non-ASCII escaped, so a lone surrogate is the
    escape `\\ud800` in the file (valid UTF-8, invalid text once parsed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = [line if isinstance(line, str) else json.dumps(line) for line in lines]
    path.write_text("\n".join(text) + "\n")
    return path


def run(engine: Engine, root: Path, config: HookConfig, agent: str = "claude-code") -> Any:
    report = import_sessions(engine, NOW, agent=agent, folder=str(root), config=config, zone=UTC)
    return report.to_json()


def row(engine: Engine, external_id: str = SID) -> dict[str, Any]:
    with engine.connect() as conn:
        found = conn.execute(select(sessions).where(sessions.c.external_id == external_id))
        return dict(found.mappings().one())


def test_a_session_is_filed_where_it_was_launched_never_where_a_subagent_ran(
    engine: Engine, tmp_path: Path, places: dict[str, Path], config: HookConfig
) -> None:
    work, personal = str(places["work"]), str(places["personal"])
    root = tmp_path / "projects"
    # A sidechain before the session's first entry, sidechains after its last one, and a
    # subagent's own file: all in the personal folder. The session's own entries: work.
    write(
        root / "-work-survey" / f"{SID}.jsonl",
        [
            {"type": "summary", "summary": "제목", "leafUuid": "x"},
            entry("user", 0, personal, isSidechain=True),
            entry("user", 1, work),
            entry("assistant", 2, work),
            entry("user", 3, personal, isSidechain=True, gitBranch="diary"),
            entry("assistant", 4, personal, isSidechain=True, version="9.9.9"),
        ],
    )
    write(
        root / "-work-survey" / SID / "subagents" / "agent-a1.jsonl",
        [entry("assistant", 5, personal, isSidechain=True)],
    )
    report = run(engine, root, config)
    assert (report["sessions"], report["refused"]) == (1, 0)
    found = row(engine)
    assert (found["side"], found["project"], found["unclassified"]) == ("work", "survey", False)
    assert found["cwd"] == work and found["branch"] == "main"
    assert found["agent_version"] == "2.1.332"  # a subagent's entry says nothing of it
    assert found["last_seen_at"] > found["started_at"]  # its subagents' time is its time


def test_a_session_of_subagents_alone_is_filed_nowhere_not_where_they_ran(
    engine: Engine, tmp_path: Path, places: dict[str, Path], config: HookConfig
) -> None:
    root = tmp_path / "projects"
    personal = str(places["personal"])
    write(root / "-p" / f"{SID}.jsonl", [entry("assistant", 1, personal, isSidechain=True)])
    assert run(engine, root, config)["sessions"] == 1
    found = row(engine)
    assert found["unclassified"] is True and found["side"] is None and found["cwd"] is None


def test_a_codex_session_is_filed_by_its_session_meta_not_a_later_turn(
    engine: Engine, tmp_path: Path, places: dict[str, Path], config: HookConfig
) -> None:
    work, personal = str(places["work"]), str(places["personal"])
    day = tmp_path / "codex" / "2026" / "12" / "01"
    meta = {"id": CODEX_SID, "cwd": work, "cli_version": "0.171.0", "git": {"branch": "main"}}
    parent = {"id": "019a0000-0000-7000-8000-000000000000", "cwd": personal}
    write(
        day / f"rollout-2026-12-01T10-00-00-{CODEX_SID}.jsonl",
        [
            {"timestamp": "2026-12-01T10:00:00Z", "type": "session_meta", "payload": meta},
            # A forked session carries its parent's meta after its own.
            {"timestamp": "2026-12-01T10:00:01Z", "type": "session_meta", "payload": parent},
            {"timestamp": "2026-12-01T10:01:00Z", "type": "turn_context",
             "payload": {"cwd": personal}},
            {"timestamp": "2026-12-01T10:02:00Z", "type": "response_item", "payload": {
                "type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "끝"}]}},
        ],
    )  # fmt: skip
    assert run(engine, tmp_path / "codex", config, agent="codex")["sessions"] == 1
    found = row(engine, CODEX_SID)
    assert (found["side"], found["project"], found["cwd"]) == ("work", "survey", work)


def test_a_lone_surrogate_in_a_compaction_trigger_stops_nothing(
    engine: Engine, tmp_path: Path, places: dict[str, Path], config: HookConfig
) -> None:
    # The report of issue 35: `"trigger": "\ud800"` stopped the whole import, every rerun.
    work = str(places["work"])
    compact = {
        **entry("system", 1, work),
        "subtype": "compact_boundary",
        "compactMetadata": {"trigger": "\ud800"},
    }
    summary = entry("user", 2, work, isCompactSummary=True)
    write(tmp_path / "projects" / "-w" / f"{SID}.jsonl", [entry("user", 0, work), compact, summary])
    for _ in range(2):
        assert run(engine, tmp_path / "projects", config)["refused"] == 0
    with engine.connect() as conn:
        [kept] = conn.execute(select(session_compactions)).mappings()
    assert kept["trigger"] == "\ufffd" and kept["summary"] == "일을 하자"


def test_each_line_that_cannot_be_read_is_skipped_and_counted_the_rest_read(
    engine: Engine, tmp_path: Path, places: dict[str, Path], config: HookConfig
) -> None:
    work = str(places["work"])
    root = tmp_path / "projects"
    bad = "\ud800"
    compact = {
        **entry("system", 2, work),
        "subtype": "compact_boundary",
        "compactMetadata": {"trigger": f"auto{bad}", "preTokens": 1},
    }
    summary = entry("user", 3, work, isCompactSummary=True)
    summary["message"] = {"role": "user", "content": f"요약 {bad} 지금까지"}
    huge = json.dumps({**entry("user", 4, work), "x": "가" * 3_000_000})
    lines: list[Any] = [
        entry("user", 0, 42),  # a cwd of the wrong type: not a place
        entry("user", 1, work),
        "[1, 2]",  # line 3: not an object
        compact,
        summary,
        '"a string"',  # line 6
        "{not json",  # line 7
        "17",  # line 8
        huge,  # line 9: over 8 MiB
        entry("assistant", 5, f"/elsewhere/{bad}", version=f"2.1{bad}"),
        entry("assistant", 6, work, gitBranch=f"기능{bad}", version="\u001b[2J2.1.400",
              message={"role": "assistant", "content": [
                  {"type": "text", "text": f"마지막 {bad} 답"}]}),
        '{"type": "assistant", "mess',  # cut last line: the file's end, not refused
    ]  # fmt: skip
    write(root / "-work" / f"{SID}.jsonl", lines)
    # Every other file of the run is read as ever.
    other = "6f2a1d3b-8c4e-4f90-a1b2-c3d4e5f6a7b8"
    write(root / "-work" / f"{other}.jsonl", [entry("user", 0, work, sessionId=other)])
    report = run(engine, root, config)
    assert (report["sessions"], report["refused"], report["refused_lines"]) == (2, 0, 5)
    [counted] = report["refused_lines_in"]
    assert counted["file"].endswith(f"{SID}.jsonl") and counted["lines"] == 5
    assert counted["reason"] == (
        "line 3 is not a JSON object; line 6 is not a JSON object; line 7 is not JSON; ..."
    )  # the first reasons, and that there were more
    assert report["mended"] == 6  # trigger, branch, version, a cwd, the summary, the answer
    found = row(engine)
    assert (found["side"], found["cwd"]) == ("work", work)  # the first entry's 42 is not a place
    assert found["branch"] == "기능\ufffd"  # the latest it was on where it was launched
    assert found["agent_version"] == "2.1\ufffd"  # the escape's version is no word: left out
    assert found["last_word"] == "마지막 \ufffd 답"
    with engine.connect() as conn:
        [kept] = conn.execute(select(session_compactions)).mappings()
    assert kept["trigger"] == "auto\ufffd" and kept["summary"] == "요약 \ufffd 지금까지"
    assert row(engine, other)["side"] == "work"
    # Twice changes nothing, and fails nothing.
    again = run(engine, root, config)
    assert (again["unchanged"], again["refused_lines"]) == (2, 5)


def test_a_file_none_of_whose_lines_can_be_read_is_refused_whole(
    engine: Engine, tmp_path: Path, config: HookConfig
) -> None:
    root = tmp_path / "projects"
    write(root / "-w" / f"{SID}.jsonl", ["[]", "{bad", "null"])
    report = run(engine, root, config)
    assert report["sessions"] == 0 and report["refused_lines"] == 0
    [refused] = report["refused_files"]
    assert refused["reason"] == (
        "no line of it could be read (line 1 is not a JSON object; line 2 is not JSON; "
        "line 3 is not a JSON object)"
    )
