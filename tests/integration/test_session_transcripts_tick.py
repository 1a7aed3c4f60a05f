"""A session whose end never came: the hooks keep the transcript their payload names (only
a file of the owner's ~/.claude/projects), and the jobs tick reads its last activity and
answer before recording it lost. Both stores; the transcript is Claude Code 2.1.332's own
(tests/fixtures/claude_transcripts)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from ondeck.db.tables import events, sessions
from ondeck.host.quick_settings import HookConfig
from ondeck.sessions.capture import events as hook_events
from ondeck.sessions.capture.events_check import parse_record
from ondeck.sessions.capture.transcript_tail import owned_transcript
from ondeck.sessions.intake import apply_record

FIXTURE = (
    Path(__file__).parents[1]
    / "fixtures/claude_transcripts/v2.1.332/-home-owner-work-survey"
    / "807671fc-c5d6-4801-a1cc-e882df591ef9.jsonl"
)
SID = "807671fc-c5d6-4801-a1cc-e882df591ef9"
TOKEN = "ghp_" + "Z1x2C3v4B5n6M7a8S9d0F1g2H3j4K5l6Q7w8"
# The fixture's session began at 07:31:3x and was last active at 07:31:4x (UTC).
HEARD = datetime(2026, 12, 2, 7, 30, tzinfo=UTC)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    place = tmp_path / "home"
    place.mkdir()
    monkeypatch.setenv("HOME", str(place))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return place


def transcript(home: Path) -> Path:
    path = home / ".claude" / "projects" / "-work" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    text = FIXTURE.read_text().replace("{{GITHUB_TOKEN}}", f"{TOKEN} <private>비밀</private>")
    path.write_text(text)
    return path


def start(engine: Engine, tmp_path: Path, named: str, at: datetime = HEARD) -> None:
    data = {
        "session_id": SID,
        "transcript_path": named,
        "cwd": str(tmp_path),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    made = hook_events.make_record("start", data, HookConfig(), at)
    assert made is not None
    with engine.begin() as conn:
        apply_record(conn, at, parse_record({**made}))


def row(engine: Engine) -> dict[str, Any]:
    with engine.connect() as conn:
        return dict(conn.execute(select(sessions)).mappings().one())


def tick(engine: Engine, settings: Any, now: datetime) -> dict[str, Any]:
    from ondeck.entrypoints.jobs.loop import Jobs

    jobs = Jobs(engine=engine, settings=settings, name="jobs@t:1")
    found: dict[str, Any] = jobs.tick(now)["sessions"]
    return found


def test_the_tick_takes_the_transcripts_last_activity_and_answer_before_lost(
    engine: Engine, settings: Any, tmp_path: Path, home: Path
) -> None:
    path = transcript(home)
    start(engine, tmp_path, str(path))
    kept = row(engine)
    assert kept["transcript_path"] == str(path) and kept["last_word"] is None
    grace = settings.session_grace
    # Past the grace of the hook heard, within the grace of the transcript's last entry:
    # the session was active after all, and stays open.
    last = datetime(2026, 12, 2, 7, 31, 30, tzinfo=UTC)
    summary = tick(engine, settings, last + grace - timedelta(seconds=1))
    assert summary["transcripts_read"] == 1 and summary["lost"] == 0, summary
    after = row(engine)
    assert after["status"] == "open" and after["last_seen_at"] > kept["last_seen_at"]
    assert after["last_word"].endswith("The last word.")
    assert TOKEN not in after["last_word"] and "비밀" not in after["last_word"]
    assert after["redactions"] >= 2
    # Later still: nothing new in the transcript, and the session is recorded lost.
    summary = tick(engine, settings, after["last_seen_at"] + grace + timedelta(minutes=1))
    assert summary["transcripts_read"] == 0 and summary["lost"] == 1, summary
    final = row(engine)
    assert final["status"] == "lost" and final["last_seen_at"] == after["last_seen_at"]
    with engine.connect() as conn:
        kinds = list(conn.scalars(select(events.c.kind).order_by(events.c.id)))
    # (The ticks also fire what the store's schedules hold by then: the backup's, whose time
    # follows the wall clock, so only the order of the session's own events is asked.)
    ours = [k for k in kinds if k.startswith("session.")]
    assert ours.count("session.transcript_read") == 1 and ours[-1] == "session.lost", ours


def test_a_transcript_outside_the_owners_projects_is_never_kept_or_read(
    engine: Engine, settings: Any, tmp_path: Path, home: Path
) -> None:
    inside = transcript(home)
    outside = tmp_path / "elsewhere" / f"{SID}.jsonl"
    outside.parent.mkdir()
    outside.write_text(inside.read_text())
    link = inside.parent / "linked.jsonl"
    os.symlink(outside, link)
    fifo = inside.parent / "fifo.jsonl"
    os.mkfifo(fifo)
    escape = f"{inside.parent}/../../../elsewhere/{SID}.jsonl"
    for named in (str(outside), str(link), str(fifo), escape, "relative.jsonl", str(inside)[:-1]):
        assert owned_transcript(named) is None, named
    assert owned_transcript(str(inside)) == str(inside)
    # `..` and links are resolved first: what is kept is the real path, inside.
    assert owned_transcript(f"{inside.parent}/../-work/{SID}.jsonl") == str(inside)
    inner = inside.parent / "inner.jsonl"
    os.symlink(inside, inner)
    assert owned_transcript(str(inner)) == str(inside)
    start(engine, tmp_path, str(link))
    assert row(engine)["transcript_path"] is None
    summary = tick(engine, settings, HEARD + settings.session_grace + timedelta(hours=1))
    assert summary["transcripts_read"] == 0 and summary["lost"] == 1
    assert row(engine)["last_word"] is None


def test_a_later_hook_names_the_transcript_a_start_lacked(
    engine: Engine, settings: Any, tmp_path: Path, home: Path
) -> None:
    path = transcript(home)
    start(engine, tmp_path, "/nowhere/x.jsonl")
    assert row(engine)["transcript_path"] is None
    start(engine, tmp_path, str(path), at=HEARD + timedelta(minutes=1))  # a resume
    assert row(engine)["transcript_path"] == str(path)
    # A later one naming another file changes nothing: the first kept stays.
    other = path.parent / "99999999-9999-4999-8999-999999999999.jsonl"
    other.write_text("{}\n")
    start(engine, tmp_path, str(other), at=HEARD + timedelta(minutes=2))
    assert row(engine)["transcript_path"] == str(path)
