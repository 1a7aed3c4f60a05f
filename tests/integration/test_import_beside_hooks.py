"""An import of a session's transcript and the session's hooks, in any order, on both
stores (issue 36 items 3 and 4): one compaction heard by both doors is stored once (a hook's
record stored at once, or spooled and drained after the import), different ones are all
kept; the import's end is a guess that a start or resume reopens and the session's own end
replaces; a hook recording the session while the import looks for it makes no error."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from ondeck.db.engine import writing
from ondeck.db.tables import session_compactions, sessions
from ondeck.host.quick_settings import HookConfig
from ondeck.sessions.intake import apply_record
from ondeck.sessions.session_import import import_sessions
from support.hooks import record

FIXTURE = Path(__file__).parents[1] / "fixtures" / "claude_transcripts" / "v2.1.332"
SID = "807671fc-c5d6-4801-a1cc-e882df591ef9"
STARTED = datetime(2026, 12, 2, 7, 32, 19, 631000, tzinfo=UTC)
COMPACTED = datetime(2026, 12, 2, 7, 32, 21, 245000, tzinfo=UTC)  # its summary's entry
SUMMARY = "Compaction summary: we surveyed the repository and stored the token."
NOW = datetime(2026, 12, 2, 7, 45, tzinfo=UTC)  # a quarter of an hour after it all


@pytest.fixture
def work(tmp_path: Path) -> Path:
    place = tmp_path / "work" / "survey"
    place.mkdir(parents=True)
    return place


def projects(tmp_path: Path, work: Path) -> Path:
    root = tmp_path / "projects"
    for path in FIXTURE.rglob("*.jsonl"):
        target = root / path.relative_to(FIXTURE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text().replace("/home/owner/work/survey", str(work)))
    return root


def hook(engine: Engine, kind: str, at: datetime, work: Path, **changes: Any) -> None:
    made = record(kind, at, session_id=SID, cwd=str(work), **changes)
    with writing(engine) as conn:
        apply_record(conn, NOW, made, grace=timedelta(hours=6))


def imported(engine: Engine, tmp_path: Path, work: Path) -> None:
    import_sessions(
        engine, NOW, agent="claude-code", folder=str(projects(tmp_path, work)),
        config=HookConfig(projects={str(work): "survey"}), zone=UTC,
    )  # fmt: skip


def stored(engine: Engine) -> tuple[int, list[str | None]]:
    with engine.connect() as conn:
        count = conn.execute(select(sessions.c.compactions)).scalar_one()
        summaries = list(
            conn.execute(select(session_compactions.c.summary).order_by(session_compactions.c.id))
            .scalars()
            .all()
        )
    return count, summaries


@pytest.mark.parametrize("later", [3, 600], ids=["heard-3s-after", "heard-10min-after"])
def test_a_spooled_compaction_drained_after_the_import_is_not_counted_again(
    engine: Engine, tmp_path: Path, work: Path, later: int
) -> None:
    """The hook's start stored; its compaction spooled; the transcript imported; the spool
    drained. A compaction heard long after (a spooled hook of a slow machine) is still the
    same one by its summary."""
    hook(engine, "start", STARTED, work)
    imported(engine, tmp_path, work)
    assert stored(engine)[0] == 1
    at = COMPACTED + timedelta(seconds=later)
    hook(engine, "compact", at, work, compact_summary=SUMMARY, trigger="manual")
    count, summaries = stored(engine)
    assert count == 1 and len(summaries) == 1, summaries


def test_a_compaction_the_hook_stored_is_not_added_again_by_the_import(
    engine: Engine, tmp_path: Path, work: Path
) -> None:
    hook(engine, "start", STARTED, work)
    hook(engine, "compact", COMPACTED + timedelta(seconds=2), work, compact_summary=SUMMARY)
    imported(engine, tmp_path, work)
    imported(engine, tmp_path, work)
    count, summaries = stored(engine)
    assert count == 1 and summaries == [SUMMARY]


def test_another_compaction_is_kept_beside_the_imported_one(
    engine: Engine, tmp_path: Path, work: Path
) -> None:
    """A compaction the transcript does not hold (another summary, an hour later) is a
    second one, whichever door stored first."""
    other = "두 번째 요약: 배포를 확인했다 (the second summary: the deploy was checked)."
    hook(engine, "start", STARTED, work)
    hook(engine, "compact", COMPACTED + timedelta(hours=1), work, compact_summary=other)
    imported(engine, tmp_path, work)
    count, summaries = stored(engine)
    assert count == 2 and summaries[0] == other and len(summaries) == 2
    assert summaries[1] is not None and SUMMARY in summaries[1]


# --- an import beside a live session ----------------------------------------------------------

LAST_ENTRY = datetime(2026, 12, 2, 7, 32, 21, 269000, tzinfo=UTC)  # the transcript's last


def session(engine: Engine) -> dict[str, Any]:
    with engine.connect() as conn:
        return dict(conn.execute(select(sessions)).mappings().one())


def live_now(engine: Engine, tmp_path: Path, work: Path) -> None:
    """The transcript imported while its session runs again: it was resumed at 07:32:20
    and wrote until its last entry; the resume's hook is heard after the import."""
    imported(engine, tmp_path, work)
    assert session(engine)["status"] == "ended"
    hook(engine, "resume", LAST_ENTRY - timedelta(seconds=1), work)


def test_a_resume_heard_after_an_import_reopens_the_imported_session(
    engine: Engine, tmp_path: Path, work: Path
) -> None:
    """(issue 36 item 3) The import's end is its guess (the transcript's last entry): a
    resume of the session reopens it and counts, though it began before that entry."""
    live_now(engine, tmp_path, work)
    s = session(engine)
    assert (s["status"], s["ended_at"], s["resumes"]) == ("open", None, 1), s
    imported(engine, tmp_path, work)  # the import run again: it ends nothing that runs
    s = session(engine)
    assert (s["status"], s["ended_at"], s["resumes"]) == ("open", None, 1), s
    hook(engine, "end", LAST_ENTRY + timedelta(minutes=5), work, reason="logout")
    s = session(engine)
    assert (s["status"], s["end_reason"]) == ("ended", "logout"), s


def test_a_start_heard_after_an_import_of_its_running_session_reopens_it(
    engine: Engine, tmp_path: Path, work: Path
) -> None:
    """The import read a running session's transcript before its start's hook was stored
    (an import beside live sessions): the start opens it, as if heard first."""
    imported(engine, tmp_path, work)
    hook(engine, "start", STARTED, work)
    s = session(engine)
    assert (s["status"], s["ended_at"], s["resumes"]) == ("open", None, 0), s


def test_a_hook_end_replaces_the_imports_guess(engine: Engine, tmp_path: Path, work: Path) -> None:
    """The session's own end, heard after its transcript was imported, says how it ended."""
    imported(engine, tmp_path, work)
    hook(engine, "end", LAST_ENTRY + timedelta(seconds=30), work, reason="logout")
    s = session(engine)
    assert (s["status"], s["end_reason"]) == ("ended", "logout"), s
    assert s["ended_at"].replace(tzinfo=UTC) == LAST_ENTRY + timedelta(seconds=30)


def test_a_session_recorded_by_its_hook_between_the_imports_look_and_its_insert(
    engine: Engine, tmp_path: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL an import and a hook may both look for the session at once and find
    none: the import's insert then meets the hook's row, and completes it (one record, the
    hook's, counted "completed"), never an internal error. The hook's row is made here at
    the very moment the import has looked."""
    from ondeck.sessions.imported_session import SessionImport

    looked = SessionImport._row
    calls = {"n": 0}

    def look_then_the_hook(self: SessionImport, conn: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            assert looked(self, conn) is None
            if engine.dialect.name == "postgresql":
                hook(engine, "start", STARTED, work)  # another connection, committed
            else:  # one writer at a time: the row is made in the import's own transaction
                made = record("start", STARTED, session_id=SID, cwd=str(work))
                apply_record(conn, NOW, made, grace=timedelta(hours=6))
            return None
        return looked(self, conn)

    monkeypatch.setattr(SessionImport, "_row", look_then_the_hook)
    report = import_sessions(
        engine, NOW, agent="claude-code", folder=str(projects(tmp_path, work)),
        config=HookConfig(projects={str(work): "survey"}), zone=UTC,
    ).to_json()  # fmt: skip
    s = session(engine)
    assert (report["sessions"], report["completed"]) == (0, 1), report
    assert (s["status"], s["imported"], s["compactions"]) == ("open", False, 1), s
