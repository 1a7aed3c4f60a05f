"""When a session is lost, decided as it is read; events that arrive late, and hooks whose
clock is far from the server's. Both stores."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Engine, select

from conftest import NOW
from ondeck.context.build import build_context
from ondeck.db.tables import events
from ondeck.memory.brief import BriefRequest
from ondeck.sessions import records as svc
from ondeck.sessions import records_tick as sessions_tick
from ondeck.sessions.capture.events import new_record
from ondeck.sessions.intake import apply_record, apply_records
from support.hooks import SESSION_ID, later, payload, record

GRACE = timedelta(hours=12)
UTC = ZoneInfo("UTC")


def apply(engine: Engine, rec: dict[str, Any], now: Any = None) -> dict[str, Any]:
    with engine.begin() as conn:
        return apply_record(conn, now or rec["at"], rec, grace=GRACE)


def kinds(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.scalars(select(events.c.kind).order_by(events.c.id)))


def shown(engine: Engine, at: Any, **filters: Any) -> list[svc.Session]:
    with engine.connect() as conn:
        return svc.list_sessions(conn, lost_before=at - GRACE, **filters)


def test_a_session_silent_past_the_grace_is_lost_when_read_with_no_tick(engine: Engine) -> None:
    apply(engine, record("start", NOW))
    three_days = later(NOW, days=3)
    [s] = shown(engine, three_days)
    assert (s.status, s.presumed_lost) == ("lost", True)
    assert shown(engine, three_days, status="open") == []
    assert [x.id for x in shown(engine, three_days, status="lost")] == [s.id]
    with engine.connect() as conn:
        detail = svc.session_detail(conn, s.id, lost_before=three_days - GRACE)
    assert detail.session.status == "lost"
    assert detail.to_json(UTC)["presumed_lost"] is True
    # Within the grace it is open; the tick records what the reads already said, once.
    [s] = shown(engine, later(NOW, hours=11))
    assert (s.status, s.presumed_lost) == ("open", False)
    with engine.begin() as conn:
        assert sessions_tick.mark_lost(conn, three_days, GRACE) == [s.id]
    [s] = shown(engine, three_days)
    assert (s.status, s.presumed_lost) == ("lost", False)
    assert kinds(engine).count("session.lost") == 1


def test_the_brief_shows_a_silent_session_lost_not_still_open(engine: Engine) -> None:
    apply(engine, record("start", NOW, cwd="/home/me/api"))
    with engine.begin() as conn:
        # The project of the session, as the fixture payload's place gives it.
        [s] = svc.list_sessions(conn)
    request = BriefRequest(sides_on=False, project=s.project, session="another-session")
    with engine.connect() as conn:
        ctx = build_context(conn, later(NOW, days=3), zone=UTC, brief=request, session_grace=GRACE)
    assert ctx.brief is not None
    assert [(line.id, line.status) for line in ctx.brief.recent] == [(s.id, "lost")]
    # The last session of the project that is no longer open: the lost one.
    assert ctx.brief.no_handoff_since is not None
    assert ctx.brief.no_handoff_since.id == s.id


def test_a_spooled_stop_from_14_hours_ago_adds_its_word_and_reopens_nothing(
    engine: Engine,
) -> None:
    apply(engine, record("start", NOW))
    with engine.begin() as conn:
        assert len(sessions_tick.mark_lost(conn, later(NOW, hours=13), GRACE)) == 1
    old_stop = record("stop", later(NOW, hours=1), last_assistant_message="오래된 마지막 말")
    result = apply(engine, old_stop, now=later(NOW, hours=15))
    assert result["session"]["status"] == "lost"
    with engine.begin() as conn:
        assert sessions_tick.mark_lost(conn, later(NOW, hours=16), GRACE) == []
        [s] = svc.list_sessions(conn, lost_before=later(NOW, hours=16) - GRACE)
    assert (s.status, s.last_word, s.last_seen_at) == (
        "lost",
        "오래된 마지막 말",
        later(NOW, hours=1),
    )
    found = kinds(engine)
    assert found.count("session.lost") == 1 and "session.reopened" not in found
    # A stop heard now is a live session: that one reopens it.
    apply(engine, record("stop", later(NOW, hours=16), last_assistant_message="back"))
    with engine.connect() as conn:
        assert svc.find_session(conn, SESSION_ID).status == "open"


def test_a_resume_older_than_the_end_reopens_nothing(engine: Engine) -> None:
    apply(engine, record("start", NOW))
    apply(engine, record("end", later(NOW, hours=2)))
    apply(engine, record("resume", later(NOW, hours=1)), now=later(NOW, hours=3))
    with engine.connect() as conn:
        s = svc.find_session(conn, SESSION_ID)
    assert s.status == "ended" and "session.resumed" not in kinds(engine)


def _sent(kind: str, at: Any, **changes: Any) -> dict[str, Any]:
    """A record as a client hook sends it (JSON: its instant as text)."""
    from ondeck.sessions.classify import Facts, Rules, classify

    data = payload(kind, **changes)
    c = classify(Facts(cwd=data.get("cwd")), Rules())
    facts = {"cwd": data.get("cwd"), "git_root": None, "branch": None, "head": None}
    return new_record(kind, data, at=at, facts=facts, classification=c)


def test_a_client_clock_13_hours_behind_is_warned_and_ordered_by_the_servers(
    engine: Engine,
) -> None:
    behind = timedelta(hours=13)
    answers = []
    for minutes in (0, 20, 40):
        server_now = later(NOW, minutes=minutes)
        client_now = server_now - behind
        kind = "start" if minutes == 0 else "stop"
        sent = _sent(kind, client_now, last_assistant_message=f"turn {minutes}")
        [answer] = apply_records(engine, server_now, [sent], grace=GRACE, sent_at=client_now)
        answers.append(answer)
        with engine.begin() as conn:  # the jobs tick between two turns
            assert sessions_tick.mark_lost(conn, server_now + timedelta(minutes=1), GRACE) == []
    warning = answers[-1]["warning"]
    assert "2026-06-14T20:40:00+00:00" in warning  # the client's clock
    assert "2026-06-15T09:40:00+00:00" in warning  # the server's
    assert "behind" in warning
    with engine.connect() as conn:
        s = svc.find_session(conn, SESSION_ID, lost_before=later(NOW, minutes=41) - GRACE)
        skew = conn.execute(
            select(events.c.details).where(events.c.kind == "session.clock_skew")
        ).first()
    assert (s.status, s.last_seen_at, s.last_word) == ("open", later(NOW, minutes=40), "turn 40")
    found = kinds(engine)
    assert "session.lost" not in found and "session.reopened" not in found
    assert skew is not None and skew.details["hook_clock"].startswith("2026-06-14T20:00")


def test_a_spooled_record_from_a_right_clock_keeps_its_time(engine: Engine) -> None:
    """Old is not skewed: the sender's clock as it sends is what is compared."""
    sent = _sent("start", NOW - timedelta(hours=14))
    [answer] = apply_records(engine, NOW, [sent], grace=GRACE, sent_at=NOW)
    assert answer.get("warning") is None
    with engine.connect() as conn:
        s = svc.find_session(conn, SESSION_ID, lost_before=NOW - GRACE)
    assert s.started_at == NOW - timedelta(hours=14) and s.status == "lost"


def _expiring(engine: Engine) -> Any:
    from ondeck.memory import notes

    with engine.begin() as conn:
        return notes.add_note(
            conn,
            NOW,
            text="배포는 금요일까지 멈춤: deploys frozen until Friday",
            side=None,
            project=None,
            sides=(),
            zone=UTC,
            expires_on=NOW.date(),
            actor="t",
        )


def _refusals(engine: Engine, note_id: int, at: Any) -> list[str]:
    """What editing the note back to life, pinning it and expiring it again answer."""
    import pytest

    from ondeck.core.errors import Conflict
    from ondeck.memory import notes

    said = []
    for change in (
        lambda conn: notes.edit_note(
            conn, at, note_id, expires_on=at.date() + timedelta(days=9), zone=UTC, actor="t"
        ),
        lambda conn: notes.set_pinned(conn, at, note_id, True, zone=UTC, actor="t"),
        lambda conn: notes.expire_note(conn, at, note_id, zone=UTC, actor="t"),
    ):
        with pytest.raises(Conflict) as refused, engine.begin() as conn:
            change(conn)
        said.append(str(refused.value))
    return said


def test_a_note_past_its_date_is_expired_before_any_tick_and_refused_the_same(
    engine: Engine,
) -> None:
    from ondeck.core.memory import Scope
    from ondeck.memory import notes

    note = _expiring(engine)
    next_day = later(NOW, days=1)
    before_tick = _refusals(engine, note.id, next_day)
    assert before_tick[0] == f"note {note.id} is expired: it cannot be edited"
    with engine.connect() as conn:
        shown = notes.get_note(conn, note.id).to_json(UTC, next_day.date())
        listed = notes.list_notes(conn, Scope.of(sides_on=False), next_day.date())
    assert shown["status"] == "expired" and listed == []
    with engine.begin() as conn:
        assert notes.expire_due(conn, next_day, next_day.date()) == [note.id]
    assert _refusals(engine, note.id, next_day) == before_tick


def _end_with(at: Any, text: str, said_at: Any) -> dict[str, Any]:
    from ondeck.sessions.capture.events import add_last_message
    from ondeck.sessions.capture.events_check import parse_record

    made = _sent("end", at)
    add_last_message(made, {"text": text, "at": said_at.isoformat()})
    return parse_record(made)


def test_the_end_brings_the_last_answer_a_cancelled_stop_never_did(engine: Engine) -> None:
    """Item 1: Claude Code cancelled the last turn's Stop; the end read it."""
    apply(engine, record("start", NOW))
    apply(engine, record("stop", later(NOW, minutes=1), last_assistant_message="turn one"))
    apply(
        engine,
        _end_with(
            later(NOW, minutes=3),
            "마지막 답 <private>비밀번호 1234</private>",
            later(NOW, minutes=2),
        ),
    )
    with engine.connect() as conn:
        s = svc.find_session(conn, SESSION_ID)
    assert s.status == "ended" and s.last_word is not None
    assert s.last_word.startswith("마지막 답") and "비밀번호" not in s.last_word  # scrubbed
    assert s.last_word_at == later(NOW, minutes=2)
    # The Stop that was not cancelled after all, arriving late: the same answer, one event.
    apply(
        engine, record("stop", later(NOW, minutes=2, seconds=1), last_assistant_message=s.last_word)
    )
    assert kinds(engine).count("session.last_word") == 2


def test_the_end_never_replaces_a_later_last_word(engine: Engine) -> None:
    apply(engine, record("start", NOW))
    apply(engine, record("stop", later(NOW, minutes=5), last_assistant_message="the latest"))
    apply(engine, _end_with(later(NOW, minutes=6), "an older answer", later(NOW, minutes=4)))
    apply(engine, _end_with(later(NOW, minutes=6), "the latest", later(NOW, minutes=5)))
    with engine.connect() as conn:
        s = svc.find_session(conn, SESSION_ID)
    assert (s.status, s.last_word) == ("ended", "the latest")
    assert kinds(engine).count("session.last_word") == 1


def test_recall_shows_a_silent_session_s_last_word_as_of_a_lost_session(engine: Engine) -> None:
    from ondeck.core.memory import Scope
    from ondeck.memory.recall import recall

    apply(engine, record("start", NOW))
    apply(engine, record("stop", later(NOW, minutes=1), last_assistant_message="배포 준비 끝"))
    three_days = later(NOW, days=3)
    with engine.connect() as conn:
        found = recall(
            conn,
            "배포",
            Scope.of(sides_on=False),
            three_days.date(),
            lost_before=three_days - GRACE,
        )
    assert [(h.kind, h.status) for h in found.hits] == [("last_word", "lost")]
