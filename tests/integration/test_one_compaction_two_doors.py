"""One compaction heard by two doors is stored once, in either order, on both stores: the
hook's record of it (stored at once, or spooled and drained after an import) and the import
of the session's transcript (issue 36 item 4). Different compactions are all kept."""

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
NOW = datetime(2026, 12, 20, 9, 0, tzinfo=UTC)


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
