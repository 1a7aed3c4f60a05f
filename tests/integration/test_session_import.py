"""`session import` of real Claude Code transcripts (tests/fixtures/claude_transcripts:
1.0.128, 2.0.77, 2.1.332) and of a Codex rollout, on both stores: each past session one
record, classified and scrubbed, marked imported; twice changes nothing; a session hooks
recorded is completed, never duplicated; a line that cannot be read is skipped and
counted, a file that cannot be read is reported and nothing of it stored; hostile files
(links out, huge lines, not UTF-8, far future)."""

from __future__ import annotations

import json
import os
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from ondeck.db.tables import events, session_compactions, sessions
from ondeck.host.quick_settings import HookConfig
from ondeck.sessions.intake import apply_record
from ondeck.sessions.session_import import import_sessions
from support.hooks import record

FIXTURES = Path(__file__).parents[1] / "fixtures" / "claude_transcripts"
TOKEN = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
PLACED = f"{TOKEN} <private>현관 비밀번호 4711</private>"
NOW = datetime(2026, 12, 20, 9, 0, tzinfo=UTC)
V21 = "807671fc-c5d6-4801-a1cc-e882df591ef9"
V20 = "7f95bd22-4070-40cf-8139-e95f379369c6"
V10 = "72443509-171d-4472-a595-32b0c1e7885e"
FOLDER = "-home-owner-work-survey"


VERSIONS = ("v1.0.128", "v2.0.77", "v2.1.332")


def projects(tmp_path: Path, work: Path, versions: tuple[str, ...] = VERSIONS) -> Path:
    """A ~/.claude/projects of the fixtures' sessions, as if run in `work` (which exists),
    with a token and a private span where the answers hold the placeholder."""
    root = tmp_path / "projects"
    for version in versions:
        for path in (FIXTURES / version).rglob("*.jsonl"):
            target = root / path.relative_to(FIXTURES / version)
            target.parent.mkdir(parents=True, exist_ok=True)
            text = path.read_text().replace("{{GITHUB_TOKEN}}", PLACED)
            target.write_text(text.replace("/home/owner/work/survey", str(work)))
    return root


def run(engine: Engine, root: Path, config: HookConfig, **kw: Any) -> dict[str, Any]:
    report = import_sessions(
        engine, NOW, agent=kw.pop("agent", "claude-code"), folder=str(root), config=config,
        zone=UTC, **kw,
    )  # fmt: skip
    return report.to_json()


def rows(engine: Engine) -> dict[str, dict[str, Any]]:
    with engine.connect() as conn:
        return {r["external_id"]: dict(r) for r in conn.execute(select(sessions)).mappings()}


def dump(engine: Engine) -> list[Any]:
    with engine.connect() as conn:
        return [
            [tuple(r) for r in conn.execute(select(t).order_by(*t.primary_key.columns))]
            for t in (sessions, session_compactions, events)
        ]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    place = tmp_path / "work" / "survey"
    place.mkdir(parents=True)
    return place


@pytest.fixture
def config(work: Path) -> HookConfig:
    return HookConfig(sides={"work": [str(work.parent)]}, projects={str(work): "survey"})


def test_three_versions_each_one_record_classified_scrubbed_and_twice_changes_nothing(
    engine: Engine, tmp_path: Path, work: Path, config: HookConfig
) -> None:
    root = projects(tmp_path, work)
    first = run(engine, root, config)
    assert first["sessions"] == 3 and first["refused"] == 0, first
    # 2.0's two empty session files and 1.0's file of titles alone hold no session.
    assert first["skipped"] == 3
    # 2.0: ten agent-*.jsonl beside the sessions; 2.1: one under <session>/subagents/
    assert first["subagent_files"] == 11
    assert first["unknown_records"] >= 1  # 2.1's `tools-used`, skipped and counted
    assert first["redactions"] >= 6  # a token and a private span in each last word
    found = rows(engine)
    assert set(found) == {V10, V20, V21}
    for version, sid in (("1.0.128", V10), ("2.0.77", V20), ("2.1.332", V21)):
        row = found[sid]
        assert row["imported"] is True and row["agent_version"] == version
        assert row["status"] == "ended" and row["end_reason"] == "imported"
        assert row["imported_from"] == str(root / FOLDER / f"{sid}.jsonl")
        assert row["cwd"] == str(work)
        assert (row["side"], row["project"], row["unclassified"]) == ("work", "survey", False)
        assert "survey" in row["classification"]["reason"]
        word = row["last_word"]
        assert word.startswith("마지막 답: 끝났어요.") and word.endswith("The last word.")
        assert TOKEN not in word and "4711" not in word and "<private>" not in word
        assert row["redactions"] >= 2
        assert row["started_at"] < row["ended_at"] == row["last_seen_at"]
        assert row["compactions"] == 1
    assert found[V21]["branch"] == "main"  # `gitBranch` as 2.1 wrote it
    with engine.connect() as conn:
        summaries = list(conn.execute(select(session_compactions)).mappings())
        kinds = list(conn.scalars(select(events.c.kind).order_by(events.c.id)))
    assert len(summaries) == 3
    assert all("Compaction summary" in s["summary"] and s["trigger"] == "manual" for s in summaries)
    assert kinds.count("session.imported") == 3 and kinds[-1] == "sessions.imported"
    before = dump(engine)
    again = run(engine, root, config)
    assert (again["sessions"], again["completed"], again["unchanged"]) == (0, 0, 3)
    assert again["redactions"] == 0
    after = dump(engine)
    assert after[:2] == before[:2]  # sessions and compactions as they were
    assert after[2][: len(before[2])] == before[2]
    assert [e[3] for e in after[2][len(before[2]) :]] == ["sessions.imported"]


def test_a_session_hooks_recorded_is_completed_not_duplicated_or_overwritten(
    engine: Engine, tmp_path: Path, work: Path, config: HookConfig
) -> None:
    root = projects(tmp_path, work, ("v2.1.332",))
    start = record("start", NOW - timedelta(days=20), session_id=V21, cwd=str(work))
    with engine.begin() as conn:
        apply_record(conn, start["at"], start)
    hooked = rows(engine)[V21]
    assert hooked["last_word"] is None and hooked["imported"] is False
    report = run(engine, root, config)
    assert (report["sessions"], report["completed"]) == (0, 1)
    row = rows(engine)[V21]
    assert len(rows(engine)) == 1
    assert row["imported"] is False and row["imported_from"] is None
    assert row["status"] == hooked["status"] and row["started_at"] == hooked["started_at"]
    assert row["end_reason"] is None  # its end is the hooks' (or the jobs tick's) to say
    assert row["last_word"].endswith("The last word.") and TOKEN not in row["last_word"]
    assert row["compactions"] == 1 and row["agent_version"] == "2.1.332"
    # A last word the hooks brought is never replaced.
    stop = record("stop", NOW - timedelta(days=19), session_id=V21, cwd=str(work),
                  last_assistant_message="훅이 가져온 말")  # fmt: skip
    with engine.begin() as conn:
        conn.execute(sessions.update().values(last_word=None, last_word_at=None))
        apply_record(conn, stop["at"], stop)
    assert run(engine, root, config)["unchanged"] == 1
    assert rows(engine)[V21]["last_word"] == "훅이 가져온 말"


def test_dry_run_and_since_store_nothing_or_less(
    engine: Engine, tmp_path: Path, work: Path, config: HookConfig
) -> None:
    root = projects(tmp_path, work)
    dry = run(engine, root, config, dry_run=True)
    assert dry["sessions"] == 3 and dry["dry_run"] is True and dry["redactions"] >= 6
    assert rows(engine) == {}
    with engine.connect() as conn:
        assert list(conn.execute(select(events))) == []
    later = run(engine, root, config, since=date(2099, 1, 1))
    assert later["sessions"] == 0 and later["skipped"] == 6
    assert rows(engine) == {}


def test_what_cannot_be_read_is_refused_and_hostile_files_reach_nothing(
    engine: Engine, tmp_path: Path, work: Path, config: HookConfig
) -> None:
    root = projects(tmp_path, work, ("v2.1.332",))
    folder = root / FOLDER
    good = (folder / f"{V21}.jsonl").read_text().splitlines()
    # Broken in the middle: refused, nothing of it stored (not its first half).
    (folder / "11111111-1111-4111-8111-111111111111.jsonl").write_text(
        "\n".join([*good[:10], "{not json", *good[10:]]) + "\n"
    )
    # Not UTF-8.
    (folder / "22222222-2222-4222-8222-222222222222.jsonl").write_bytes(
        good[2].encode() + b"\n\xff\xfe{}\n"
    )
    # A link out of the folder, to a file and to a folder: never followed.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "33333333-3333-4333-8333-333333333333.jsonl").write_text("\n".join(good))
    os.symlink(outside / "33333333-3333-4333-8333-333333333333.jsonl",
               folder / "33333333-3333-4333-8333-333333333333.jsonl")  # fmt: skip
    os.symlink(outside, root / "-linked-folder")
    # A huge line (skipped unread), a timestamp in the far future (not an instant the
    # session was active), a cut last line (a crash mid-write): the rest is read.
    huge = json.dumps({"type": "user", "timestamp": "2026-12-02T07:40:00Z", "x": "a" * 9_000_000})
    future = dict(json.loads(good[-1]), timestamp="8999-01-01T00:00:00Z")
    (folder / "44444444-4444-4444-8444-444444444444.jsonl").write_text(
        "\n".join([*good, huge, json.dumps(future), '{"type":"assis']) + "\n"
    )
    # A folder whose name is not UTF-8, entries with lone surrogates and NULs in their
    # strings: stored as the stores take text, not refused by the database.
    odd = os.path.join(os.fsencode(root), b"-bad-\xff")
    os.mkdir(odd)
    strange = {
        "type": "assistant",
        "sessionId": "x",
        "timestamp": "2026-12-01T10:00:00Z",
        "cwd": "/tmp/\ud800dir",
        "gitBranch": "br\u0000anch",
        "version": "9.\ud800",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "ok \ud800 끝"}]},
    }
    with open(os.path.join(odd, b"55555555-5555-4555-8555-555555555555.jsonl"), "w") as f:
        f.write(json.dumps(strange) + "\n")
    report = run(engine, root, config)
    refused = {Path(r["file"]).name: r["reason"] for r in report["refused_files"]}
    assert refused == {
        "33333333-3333-4333-8333-333333333333.jsonl": "a symbolic link: not followed",
        "-linked-folder": "a symbolic link: not followed",
    }
    # A line that cannot be read is skipped and counted with its file: the rest is read.
    lines = {Path(r["file"]).name: (r["lines"], r["reason"]) for r in report["refused_lines_in"]}
    assert lines == {
        "11111111-1111-4111-8111-111111111111.jsonl": (1, "line 11 is not JSON"),
        "22222222-2222-4222-8222-222222222222.jsonl": (1, "line 2 is not UTF-8"),
        "44444444-4444-4444-8444-444444444444.jsonl": (
            1,
            f"line {len(good) + 1} is longer than 8 MiB",
        ),
    }
    assert report["refused"] == 2 and report["refused_lines"] == 3 and report["sessions"] == 5
    # The file names its session (the id Claude Code's hooks send), whatever its entries say.
    found = rows(engine)
    hostile = "44444444-4444-4444-8444-444444444444"
    odd_row = found.pop("55555555-5555-4555-8555-555555555555")
    assert "\x00" not in (odd_row["branch"] or "") and odd_row["last_word"].endswith("끝")
    assert odd_row["imported_from"].encode("utf-8") and odd_row["cwd"].startswith("/tmp/")
    broken = "11111111-1111-4111-8111-111111111111"
    not_utf8 = "22222222-2222-4222-8222-222222222222"
    assert set(found) == {V21, hostile, broken, not_utf8}
    assert found[hostile]["ended_at"] == found[V21]["ended_at"]  # not 8999, not the huge line
    assert found[hostile]["last_word"] == found[V21]["last_word"]
    assert found[broken]["last_word"] == found[V21]["last_word"]
    with engine.connect() as conn:
        done = conn.execute(select(events).where(events.c.kind == "sessions.imported")).one()
    assert done.details["refused"] == 2 and done.details["refused_lines"] == 3
    assert done.details["sessions"] == 5


def test_a_codex_rollout_is_one_record(
    engine: Engine, tmp_path: Path, work: Path, config: HookConfig
) -> None:
    day = tmp_path / "codex" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    sid = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
    lines = [
        {"timestamp": "2026-11-30T10:00:00.000Z", "type": "session_meta", "payload": {
            "id": sid, "timestamp": "2026-11-30T10:00:00.000Z", "cwd": str(work),
            "originator": "codex_exec", "cli_version": "0.46.0", "source": "exec",
            "git": {"branch": "feature/한글"}}},
        {"timestamp": "2026-11-30T10:00:01.000Z", "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "hi"}]}},
        {"timestamp": "2026-11-30T10:00:02.000Z", "type": "event_msg",
         "payload": {"type": "agent_message", "message": "draft"}},
        {"timestamp": "2026-11-30T10:00:03.000Z", "type": "compacted",
         "payload": {"message": "요약: the work so far"}},
        {"timestamp": "2026-11-30T10:05:00.000Z", "type": "response_item", "payload": {
            "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": f"끝. {PLACED}"}]}},
        {"timestamp": "2026-11-30T10:05:01.000Z", "type": "something_new", "payload": {}},
    ]  # fmt: skip
    (day / f"rollout-2026-11-30T10-00-00-{sid}.jsonl").write_text(
        "\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n"
    )
    report = run(engine, tmp_path / "codex", config, agent="codex")
    assert report["sessions"] == 1 and report["unknown_records"] == 1, report
    row = rows(engine)[sid]
    assert row["agent"] == "codex" and row["agent_version"] == "0.46.0"
    assert row["branch"] == "feature/한글" and row["project"] == "survey"
    assert row["last_word"].startswith("끝.") and TOKEN not in row["last_word"]
    assert row["compactions"] == 1 and row["imported"] is True
    assert run(engine, tmp_path / "codex", config, agent="codex")["unchanged"] == 1


def test_a_real_codex_0_171_rollout_with_a_compaction(
    engine: Engine, tmp_path: Path, work: Path, config: HookConfig
) -> None:
    source = Path(__file__).parents[1] / "fixtures" / "codex_rollouts" / "v0.171.0"
    for path in source.rglob("*.jsonl"):
        target = tmp_path / "codex" / path.relative_to(source)
        target.parent.mkdir(parents=True)
        text = path.read_text().replace("{{GITHUB_TOKEN}}", PLACED)
        target.write_text(text.replace("/home/owner/work/survey", str(work)))
    report = run(engine, tmp_path / "codex", config, agent="codex")
    assert (report["sessions"], report["refused"]) == (1, 0), report
    assert report["unknown_records"] >= 2  # 0.171's world_state, token_usage_record
    row = rows(engine)["01a235c2-e4bb-7e81-907d-2222cc917f4e"]
    assert row["agent"] == "codex" and row["agent_version"] == "0.171.0"
    assert (row["project"], row["side"], row["cwd"]) == ("survey", "work", str(work))
    assert row["last_word"].startswith("코덱스 마지막 답") and TOKEN not in row["last_word"]
    assert "4711" not in row["last_word"] and row["redactions"] >= 2
    assert row["compactions"] == 1 and row["started_at"] < row["ended_at"]
    with engine.connect() as conn:
        [summary] = conn.execute(select(session_compactions.c.summary)).scalars()
    assert "summary" in summary


def test_the_fixtures_are_in_place() -> None:
    # The README names them: a missing one would make the tests above read less.
    for version in ("v1.0.128", "v2.0.77", "v2.1.332"):
        assert (FIXTURES / version / FOLDER).is_dir()
    assert (FIXTURES / "v2.1.332" / FOLDER / V21 / "subagents").is_dir()


def test_a_machine_without_transcripts_imports_nothing_and_refuses_nothing(
    engine: Engine, tmp_path: Path, config: HookConfig
) -> None:
    found = run(engine, tmp_path / "no-such-folder", config)
    assert (found["sessions"], found["refused"], found["refused_files"]) == (0, 0, [])


def test_links_that_could_be_no_transcript_are_not_reported(
    engine: Engine, tmp_path: Path, config: HookConfig
) -> None:
    root = tmp_path / "projects" / "-w"
    root.mkdir(parents=True)
    (root / "notes.txt").symlink_to("/etc/hostname")
    (root / "x.jsonl").symlink_to("/etc/hostname")
    found = run(engine, tmp_path / "projects", config)
    assert [Path(r["file"]).name for r in found["refused_files"]] == ["x.jsonl"]
