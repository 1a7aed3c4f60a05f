"""Applying hook records to the sessions table, on both stores, through SQLAlchemy and
through the bare driver the hooks use: the same statements, the same rows."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, func, select, update
from sqlalchemy.exc import IntegrityError

from conftest import NOW
from ondeck.core.errors import InvalidInput
from ondeck.core.models import TaskStatus
from ondeck.db.bare import BareDb, open_bare
from ondeck.db.tables import events, hook_receipts, session_compactions, sessions
from ondeck.sessions import records as svc
from ondeck.sessions import records_move as sessions_move
from ondeck.sessions import records_tick as sessions_tick
from ondeck.sessions import rows as session_rows
from ondeck.sessions.classify import Facts, Marker, Rules
from ondeck.sessions.intake import apply_record
from ondeck.work import backlog, backlog_leases
from support.hooks import SESSION_ID, later, record

SIDES = Rules(sides={"work": ["/home/me/work"], "personal": ["/home/me/own"]})


@pytest.fixture
def bare(db_url: str) -> Iterator[BareDb]:
    found = open_bare(db_url)
    assert found is not None
    yield found
    found.close()


def apply(engine: Engine, rec: dict[str, Any], now=None) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    with engine.begin() as conn:
        return apply_record(conn, now or rec["at"], rec)


def apply_bare(bare: BareDb, rec: dict[str, Any]) -> dict[str, Any]:
    with bare.transaction() as db:
        applied = session_rows.apply(db, rec, rec["at"])
    return session_rows.outcome(applied, rec, [])


def the_session(engine: Engine, ref: str = SESSION_ID) -> svc.Session:
    with engine.connect() as conn:
        return svc.find_session(conn, ref)


def kinds_of(engine: Engine, session_id: int) -> list[str]:
    with engine.connect() as conn:
        return list(
            conn.execute(
                select(events.c.kind)
                .where(events.c.subject == f"session:{session_id}")
                .order_by(events.c.id)
            ).scalars()
        )


def snapshot(engine: Engine) -> tuple[Any, ...]:
    """Every row of every table a record may change."""
    with engine.connect() as conn:
        return tuple(
            tuple(tuple(r) for r in conn.execute(select(t).order_by(*t.primary_key.columns)))
            for t in (sessions, session_compactions, hook_receipts, events)
        )


def test_a_whole_session_is_one_record_with_its_timeline(engine: Engine) -> None:
    apply(engine, record("start", NOW))
    apply(engine, record("stop", later(NOW, minutes=5), last_assistant_message="first turn"))
    apply(engine, record("stop", later(NOW, minutes=9), last_assistant_message="second turn"))
    apply(engine, record("compact", later(NOW, minutes=20)))
    result = apply(engine, record("end", later(NOW, minutes=30)))
    assert result["outcome"] == "applied" and result["session"]["status"] == "ended"
    s = the_session(engine)
    assert (s.status, s.start_source, s.end_reason) == ("ended", "startup", "prompt_input_exit")
    assert s.started_at == NOW and s.ended_at == later(NOW, minutes=30)
    assert s.last_word == "second turn" and s.last_word_at == later(NOW, minutes=9)
    assert s.compactions == 1 and s.agent == "claude-code"
    with engine.connect() as conn:
        detail = svc.session_detail(conn, s.id)
    assert [c.trigger for c in detail.compactions] == ["auto"]
    assert "retry on the upload job" in (detail.compactions[0].summary or "")
    assert kinds_of(engine, s.id) == [
        "session.started",
        "session.last_word",
        "session.last_word",
        "session.compacted",
        "session.ended",
    ]


def test_the_same_event_twice_changes_nothing_the_second_time(engine: Engine) -> None:
    start = record("start", NOW)
    stop = record("stop", later(NOW, minutes=1))
    for rec in (start, stop):
        apply(engine, rec)
    before = snapshot(engine)
    for rec in (start, stop, record("compact", later(NOW, minutes=2))):
        first = apply(engine, rec)
        after_first = snapshot(engine)
        again = apply(engine, rec, now=later(NOW, hours=3))
        assert again["outcome"] == "duplicate"
        assert snapshot(engine) == after_first
    assert snapshot(engine) != before  # the compaction, once
    assert first["outcome"] == "applied"
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(session_compactions)).scalar() == 1


def test_a_resume_reopens_the_same_record_and_never_makes_a_second(engine: Engine) -> None:
    apply(engine, record("start", NOW))
    apply(engine, record("end", later(NOW, minutes=10)))
    apply(engine, record("resume", later(NOW, hours=2)))
    s = the_session(engine)
    assert (s.status, s.ended_at, s.end_reason, s.resumes) == ("open", None, None, 1)
    assert s.started_at == NOW and s.start_source == "startup"
    apply(engine, record("end", later(NOW, hours=3), reason="logout"))
    s = the_session(engine)
    assert (s.status, s.end_reason, s.ended_at) == ("ended", "logout", later(NOW, hours=3))
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(sessions)).scalar() == 1
    assert kinds_of(engine, s.id) == [
        "session.started",
        "session.ended",
        "session.resumed",
        "session.ended",
    ]


def test_a_late_stop_never_replaces_a_later_last_word_nor_reopens_an_end(engine: Engine) -> None:
    """Stop hooks run async: one may finish after the next turn's, or after SessionEnd."""
    apply(engine, record("start", NOW))
    apply(engine, record("stop", later(NOW, minutes=9), last_assistant_message="newer"))
    apply(engine, record("end", later(NOW, minutes=10)))
    apply(engine, record("stop", later(NOW, minutes=5), last_assistant_message="older"))
    s = the_session(engine)
    assert (s.last_word, s.status) == ("newer", "ended")


def test_a_silent_session_becomes_lost_and_a_hook_brings_it_back(engine: Engine) -> None:
    grace = timedelta(hours=12)
    apply(engine, record("start", NOW))
    apply(engine, record("stop", later(NOW, hours=1)))
    with engine.begin() as conn:
        assert sessions_tick.mark_lost(conn, later(NOW, hours=12, minutes=59), grace) == []
    with engine.begin() as conn:
        lost = sessions_tick.mark_lost(conn, later(NOW, hours=13, minutes=1), grace)
    s = the_session(engine)
    assert lost == [s.id] and s.status == "lost" and s.ended_at is None
    with engine.connect() as conn:
        event = conn.execute(
            select(events.c.actor, events.c.details).where(events.c.kind == "session.lost")
        ).one()
    assert event.actor == "jobs" and event.details["grace"] == "12h"
    with engine.begin() as conn:
        assert sessions_tick.mark_lost(conn, later(NOW, hours=14), grace) == [], "lost once"
    apply(engine, record("stop", later(NOW, hours=14), last_assistant_message="back"))
    assert the_session(engine).status == "open"
    assert kinds_of(engine, s.id)[-3:] == ["session.lost", "session.reopened", "session.last_word"]


def test_a_session_heard_from_within_the_grace_is_not_lost(engine: Engine) -> None:
    apply(engine, record("start", NOW))
    apply(engine, record("stop", later(NOW, hours=11)))
    with engine.begin() as conn:
        assert sessions_tick.mark_lost(conn, later(NOW, hours=22), timedelta(hours=12)) == []
    assert the_session(engine).status == "open"


def test_capture_false_keeps_times_side_and_project_and_no_text(engine: Engine) -> None:
    marker = Marker(path="/home/me/work/secret/.ondeck.toml", project="secret", capture=False)
    facts = Facts(cwd="/home/me/work/secret", marker=marker, git_root="/home/me/work/secret")
    for kind, at in (
        ("start", NOW),
        ("stop", later(NOW, minutes=1)),
        ("compact", later(NOW, minutes=2)),
    ):
        apply(engine, record(kind, at, rules=SIDES, facts=facts))
    apply(engine, record("end", later(NOW, minutes=3), rules=SIDES, facts=facts))
    s = the_session(engine)
    assert (s.capture, s.side, s.project, s.status) == (False, "work", "secret", "ended")
    assert s.last_word is None and s.cwd is None and s.git_root is None and s.branch is None
    assert s.start_head is None and s.commits is None and s.files is None
    assert s.classification["side"]["source"] is None, "not even the path that decided"
    with engine.connect() as conn:
        summaries = conn.execute(select(session_compactions.c.summary)).scalars().all()
        stored = str(conn.execute(select(sessions)).one()) + str(
            conn.execute(select(events.c.details)).all()
        )
    assert summaries == [None]
    assert "/home/me" not in stored and "upload job" not in stored
    # The schema refuses text on such a row, whatever writes it.
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(update(sessions).values(last_word="leak"))


def test_marker_and_path_prefix_disagreeing_is_kept_and_shown(engine: Engine) -> None:
    """A marker's side never decides; disagreeing, it sends the session
    to the inbox (it was stored under the marker's side)."""
    marker = Marker(path="/home/me/work/blog/.ondeck.toml", side="personal")
    facts = Facts(cwd="/home/me/work/blog", marker=marker)
    apply(engine, record("start", NOW, rules=SIDES, facts=facts))
    s = the_session(engine)
    assert (s.side, s.side_rule, s.unclassified) == (None, "none", True)
    [disagreement] = s.disagreements
    assert disagreement["kind"] == "signals" and disagreement["field"] == "side"
    assert [(x["rule"], x["value"]) for x in disagreement["signals"]] == [("marker", "personal")]
    assert disagreement["decided"]["value"] == "work"


def test_signals_of_the_same_rank_disagreeing_leave_it_unclassified(engine: Engine) -> None:
    rules = Rules(sides={"work": ["/srv/x"], "personal": ["/srv/x"]})
    apply(engine, record("start", NOW, rules=rules, facts=Facts(cwd="/srv/x/y")))
    s = the_session(engine)
    assert s.unclassified and s.side is None and s.project is None
    assert "disagree on the side" in s.classification["reason"]
    with engine.connect() as conn:
        assert [x.id for x in svc.list_sessions(conn, status="unclassified")] == [s.id]
        assert svc.count_unclassified(conn) == 1


def test_a_later_place_that_classifies_otherwise_is_a_disagreement(engine: Engine) -> None:
    work, own = Facts(cwd="/home/me/work/site"), Facts(cwd="/home/me/own/blog")
    apply(engine, record("start", NOW, rules=SIDES, facts=work))
    for minutes in (1, 2):  # the same place twice is recorded once
        apply(
            engine,
            record(
                "stop",
                later(NOW, minutes=minutes),
                rules=SIDES,
                facts=own,
                last_assistant_message=f"turn {minutes}",
            ),
        )
    s = the_session(engine)
    assert s.side == "work", "classified at start; a move of cwd never reclassifies"
    [place] = [d for d in s.disagreements if d["kind"] == "place"]
    assert (place["side"], place["cwd"], place["hook"]) == ("personal", "/home/me/own/blog", "stop")
    assert kinds_of(engine, s.id).count("session.place_disagrees") == 1


def test_move_records_from_to_and_who_and_keeps_the_mistake(engine: Engine) -> None:
    rules = Rules(sides={"work": ["/srv/x"], "personal": ["/srv/x"]})
    apply(engine, record("start", NOW, rules=rules, facts=Facts(cwd="/srv/x/y")))
    sides = {"work": [], "personal": []}
    with engine.begin() as conn:
        moved = sessions_move.move_session(
            conn,
            later(NOW, hours=1),
            SESSION_ID[:8],
            side="personal",
            project="blog",
            sides=sides,
            actor="cli",
        )
    assert (moved.side, moved.project, moved.unclassified) == ("personal", "blog", False)
    assert (moved.side_rule, moved.project_rule) == ("moved", "moved")
    assert "disagree on the side" in moved.classification["reason"], "the history stays"
    with engine.connect() as conn:
        event = conn.execute(
            select(events.c.actor, events.c.details).where(events.c.kind == "session.moved")
        ).one()
    assert event.actor == "cli"
    assert event.details == {
        "from": {"side": None, "project": None, "unclassified": True},
        "to": {"side": "personal", "project": "blog"},
        "by": "cli",
    }
    with engine.begin() as conn, pytest.raises(InvalidInput, match="not configured"):
        sessions_move.move_session(
            conn, NOW, moved.id, side="hobby", project=None, sides=sides, actor="cli"
        )
    with engine.begin() as conn, pytest.raises(InvalidInput, match="already there"):
        sessions_move.move_session(
            conn, NOW, moved.id, side="personal", project="blog", sides=sides, actor="cli"
        )
    with engine.begin() as conn, pytest.raises(InvalidInput, match="no sides"):
        sessions_move.move_session(
            conn, NOW, moved.id, side="work", project=None, sides={}, actor="cli"
        )


def test_the_tasks_a_session_touched_come_from_its_owners_events(engine: Engine) -> None:
    apply(engine, record("start", NOW))
    owner = f"claude:{SESSION_ID}"
    with engine.begin() as conn:
        mine = backlog.create_task(conn, NOW, title="mine", actor="cli")
        other = backlog.create_task(conn, NOW, title="theirs", actor="cli")
        held = backlog_leases.claim_task(
            conn, later(NOW, minutes=1), mine.id, owner=owner, actor="cli"
        )
        backlog_leases.claim_task(
            conn, later(NOW, minutes=1), other.id, owner="claude:x", actor="cli"
        )
        backlog_leases.complete_task(
            conn, later(NOW, minutes=2), mine.id, token=held.lease_token, actor="cli"
        )
    with engine.connect() as conn:
        detail = svc.session_detail(conn, SESSION_ID)
    [touched] = detail.tasks
    assert (touched.task_id, touched.title, touched.status) == (mine.id, "mine", "DONE")
    assert [k for k, _ in touched.actions] == ["task.claimed", "task.completed"]


def test_the_end_releases_the_leases_the_session_holds(engine: Engine) -> None:
    apply(engine, record("start", NOW))
    with engine.begin() as conn:
        task = backlog.create_task(conn, NOW, title="held", actor="cli")
        backlog_leases.claim_task(conn, NOW, task.id, owner=f"claude:{SESSION_ID}", actor="cli")
    end = record("end", later(NOW, minutes=5))
    assert apply(engine, end)["released"] == [task.id]
    assert apply(engine, end)["released"] == [], "the same end twice releases nothing more"
    with engine.connect() as conn:
        assert backlog.get_task(conn, task.id).status is TaskStatus.READY


def test_the_bare_driver_writes_the_rows_sqlalchemy_writes(engine: Engine, bare: BareDb) -> None:
    """The hooks' bare path and the server's SQLAlchemy path are interchangeable mid-session."""
    apply_bare(bare, record("start", NOW, last_assistant_message=None))
    apply(engine, record("stop", later(NOW, minutes=1), last_assistant_message="한국어 끝"))
    apply_bare(bare, record("compact", later(NOW, minutes=2)))
    apply_bare(bare, record("stop", later(NOW, minutes=3), last_assistant_message="끝났다 ✓"))
    out = apply_bare(bare, record("end", later(NOW, minutes=4)))
    assert out["session"]["status"] == "ended"
    assert apply_bare(bare, record("end", later(NOW, minutes=4)))["outcome"] == "duplicate"
    s = the_session(engine)
    assert (s.last_word, s.compactions, s.status) == ("끝났다 ✓", 1, "ended")
    assert s.last_word_at == later(NOW, minutes=3) and s.ended_at == later(NOW, minutes=4)
    with engine.connect() as conn:
        details = conn.execute(
            select(events.c.details).where(events.c.kind == "session.started")
        ).scalar_one()
        ats = conn.execute(select(events.c.at).order_by(events.c.id)).scalars().all()
    assert details["source"] == "startup"
    assert all(at.tzinfo is not None for at in ats)
    with engine.begin() as conn:  # the jobs tick reads what the bare driver wrote
        assert sessions_tick.mark_lost(conn, later(NOW, days=2), timedelta(hours=12)) == []


def test_a_stop_heard_before_its_start_makes_the_record_the_start_completes(
    engine: Engine,
) -> None:
    """A hook installed mid-session, or a spool drained behind a newer event."""
    apply(engine, record("stop", later(NOW, minutes=5)))
    s = the_session(engine)
    assert s.start_source is None and s.started_at == later(NOW, minutes=5)
    apply(engine, record("start", NOW))
    s = the_session(engine)
    assert (s.start_source, s.started_at, s.status) == ("startup", NOW, "open")
    # One "started" (the record's), then the start itself, said to be late.
    assert kinds_of(engine, s.id) == [
        "session.started",
        "session.last_word",
        "session.start_heard_late",
    ]
    apply(engine, record("end", later(NOW, minutes=6)))
    apply(engine, record("start", later(NOW, minutes=7), source="resume"))
    assert kinds_of(engine, s.id).count("session.started") == 1


def test_a_start_with_no_source_is_heard_once(engine: Engine) -> None:
    """A start whose payload names no source still counts as the start: later starts of the
    same session neither add start events nor move the start commit."""
    for minutes, head in ((0, "a"), (1, "b"), (2, "c")):
        facts = Facts(cwd="/srv/온덱", head=head * 40)
        apply(engine, record("start", later(NOW, minutes=minutes), source=None, facts=facts))
    s = the_session(engine)
    assert s.start_source == "unknown" and s.start_head == "a" * 40
    assert kinds_of(engine, s.id) == ["session.started"]


def test_unclassified_sessions_are_counted_in_the_context_and_nothing_of_them_shown(
    engine: Engine, settings: Any
) -> None:
    from ondeck.context.build import context_for
    from ondeck.context.render import to_json, to_markdown

    rules = Rules(sides={"work": ["/srv/x"], "personal": ["/srv/x"]})
    secret_word = "the unclassified session's own words 7c1d"
    for kind, at in (
        ("start", NOW),
        ("stop", later(NOW, minutes=1)),
        ("compact", later(NOW, minutes=2)),
    ):
        apply(
            engine,
            record(
                kind,
                at,
                rules=rules,
                facts=Facts(cwd="/srv/x/y"),
                last_assistant_message=secret_word,
            ),
        )
    with engine.connect() as conn:
        for project in (None, "site"):
            ctx = context_for(conn, later(NOW, minutes=5), settings, project)
            shown = to_markdown(ctx, settings.zone) + str(to_json(ctx, settings.zone))
            assert "sessions_unclassified" in shown and "1 session record unclassified" in shown
            assert secret_word not in shown and SESSION_ID[:8] not in shown
            assert "upload job" not in shown and "/srv/x" not in shown


def test_list_filters_by_status_side_and_project(engine: Engine) -> None:
    facts = {"a": Facts(cwd="/home/me/work/a"), "b": Facts(cwd="/home/me/own/b")}
    rules = Rules(
        sides=SIDES.sides, projects={"/home/me/work/a": "alpha", "/home/me/own/b": "beta"}
    )
    for n, (name, f) in enumerate(facts.items()):
        apply(
            engine,
            record("start", later(NOW, minutes=n), rules=rules, facts=f, session_id=name * 8),
        )
    apply(
        engine,
        record("end", later(NOW, minutes=5), rules=rules, facts=facts["a"], session_id="a" * 8),
    )
    with engine.connect() as conn:
        assert [s.external_id for s in svc.list_sessions(conn)] == ["b" * 8, "a" * 8]
        assert [s.project for s in svc.list_sessions(conn, side="work")] == ["alpha"]
        assert [s.side for s in svc.list_sessions(conn, project="beta")] == ["personal"]
        assert [s.external_id for s in svc.list_sessions(conn, status="ended")] == ["a" * 8]
        assert [s.external_id for s in svc.list_sessions(conn, status="open")] == ["b" * 8]
        assert svc.list_sessions(conn, status="lost") == []
        with pytest.raises(InvalidInput):
            svc.list_sessions(conn, status="running")
        with pytest.raises(InvalidInput):
            svc.list_sessions(conn, side="no side!")


def test_the_jobs_tick_drains_the_spool_and_marks_silent_sessions_lost(
    engine: Engine, settings: Any
) -> None:
    from ondeck.entrypoints.jobs.loop import Jobs
    from ondeck.sessions.capture import spool

    for kind, minutes in (("start", 0), ("stop", 1), ("compact", 2)):
        made = record(kind, later(NOW, minutes=minutes))
        spool.append(settings.spool_dir, {**made, "at": made["at"].isoformat()})
    jobs = Jobs(engine=engine, settings=settings, name="jobs@t:1")
    summary = jobs.tick(later(NOW, minutes=5))["sessions"]
    assert summary == {
        "drained": 3,
        "rejected": 0,
        "waiting": 0,
        "transcripts_read": 0,
        "lost": 0,
        "ids": [],
    }
    s = the_session(engine)
    assert (s.compactions, s.status) == (1, "open")
    assert jobs.tick(later(NOW, minutes=6))["sessions"]["drained"] == 0
    summary = jobs.tick(later(NOW, hours=13))["sessions"]
    assert summary["lost"] == 1 and summary["ids"] == [s.id]
    assert the_session(engine).status == "lost"


def test_a_hook_clock_ahead_never_keeps_a_session_heard_from_in_the_future(
    engine: Engine,
) -> None:
    apply(engine, record("start", later(NOW, days=30)), now=NOW)
    s = the_session(engine)
    assert s.started_at == NOW and s.last_seen_at == NOW
    with engine.begin() as conn:
        assert sessions_tick.mark_lost(conn, later(NOW, hours=13), timedelta(hours=12)) == [s.id]


def test_a_long_session_keeps_its_start_in_the_history_and_timeline(engine: Engine) -> None:
    """Every turn writes an event: a session of a thousand turns still shows how it began."""
    from ondeck.system import events as event_log

    apply(engine, record("start", NOW))
    s = the_session(engine)
    with engine.begin() as conn:
        event_log.record_many(
            conn,
            NOW,
            [
                {"actor": "hook:x", "kind": "session.last_word", "subject": f"session:{s.id}"}
                for _ in range(1000)
            ],
        )
    apply(engine, record("end", later(NOW, hours=5)))
    with engine.connect() as conn:
        detail = svc.session_detail(conn, s.id)
    assert [e.kind for e in detail.history] == ["session.started", "session.ended"]
