"""One intake, any order: a session's records applied in any order give the same record as
applied in the order they happened (hypothesis over permutations, with duplicates)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, select

from ondeck.db.engine import make_engine, writing
from ondeck.db.tables import session_compactions, sessions
from ondeck.sessions import intake
from support.hooks import record

T0 = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
NOW = T0 + timedelta(hours=2)
SID = "3f1c2d3e-5b6a-4c7d-8e9f-0123456789ab"


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


# A session as its hooks hear it: started, two turns and a compaction, ended, resumed, a turn;
# and one whose resume was never heard (a turn after its end: it went on).
RESUMED = [
    record("start", _at(0)),
    record("stop", _at(5), last_assistant_message="첫 답 first answer"),
    record("compact", _at(8)),
    record("stop", _at(12), last_assistant_message="둘째 답 second answer"),
    record("end", _at(20)),
    record("resume", _at(30)),
    record("stop", _at(35), last_assistant_message="셋째 답 third answer"),
    record("compact", _at(38), compact_summary="두 번째 요약 the second summary"),
]
WENT_ON = [
    record("start", _at(0)),
    record("stop", _at(5), last_assistant_message="첫 답 first answer"),
    record("end", _at(20)),
    record("stop", _at(35), last_assistant_message="그 뒤 went on"),
]
SHOWN = (
    "status", "ended_at", "end_reason", "last_word", "last_word_at", "compactions",
    "resumes", "started_at", "start_source", "last_seen_at", "side", "project",
)  # fmt: skip


def _stored(engine: Engine) -> dict[str, Any]:
    with engine.connect() as conn:
        row = conn.execute(select(sessions)).one()._mapping
        count = len(conn.execute(select(session_compactions)).all())
    return {**{k: row[k] for k in SHOWN}, "compaction_rows": count}


def _apply(engine: Engine, records: list[dict[str, Any]], order: list[int]) -> dict[str, Any]:
    for index in order:
        with writing(engine) as conn:
            intake.apply_record(conn, NOW, records[index], grace=timedelta(hours=6))
    return _stored(engine)


@st.composite
def _interleavings(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[int]]:
    """One of the sessions, its records in any order, some of them twice (a spool drained
    again, the mod and a hook's hand-over both storing one)."""
    records = draw(st.sampled_from([RESUMED, WENT_ON]))
    order = draw(st.permutations(list(range(len(records)))))
    again = draw(st.lists(st.integers(0, len(records) - 1), max_size=3))
    spots = draw(st.lists(st.integers(0, len(order)), min_size=len(again), max_size=len(again)))
    for index, spot in zip(again, spots, strict=True):
        order.insert(spot, index)
    return records, order


@settings(
    max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=_interleavings())
def test_any_order_gives_the_record_of_the_order_they_happened(
    sqlite_template: Path, tmp_path: Path, case: tuple[list[dict[str, Any]], list[int]]
) -> None:
    records, order = case
    stored = {}
    for name, sequence in (("in order", list(range(len(records)))), ("shuffled", order)):
        path = tmp_path / f"{name}.db"
        path.unlink(missing_ok=True)
        shutil.copyfile(sqlite_template, path)
        engine = make_engine(f"sqlite:///{path}")
        try:
            stored[name] = _apply(engine, records, sequence)
        finally:
            engine.dispose()
    assert stored["shuffled"] == stored["in order"], order
