"""The session context read through the bare driver (the session hook) is the one read
through SQLAlchemy (the server, CLI and API): the same statements, and the same values out
of them (instants, dates, JSON, booleans), on both stores."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine, insert

from ondeck.context.build import Context, build_context
from ondeck.context.render import fit_context, to_json, to_markdown
from ondeck.db.bare import open_bare
from ondeck.db.tables import backups
from ondeck.memory import notes as notes_svc
from ondeck.memory.brief import BriefRequest
from ondeck.system import heartbeat
from ondeck.work import backlog, backlog_leases, schedules
from ondeck.work.firing import fire_due
from support.context import MONDAY_9, UTCZ
from support.memory import make_session

NOW = MONDAY_9
SIDES = {"work": ["/w"]}
REQUEST = BriefRequest(sides_on=True, side="work", project="api", source="startup", session="x")


def _fill(engine: Engine) -> None:
    """One of everything the context shows or warns about."""
    earlier = NOW - timedelta(days=2)
    for rule, title in (("daily", "Stand-up"), ("weekly:MON", "Invoices")):
        with engine.begin() as conn:
            schedules.create_schedule(
                conn, earlier, UTCZ, actor="cli", title=title, rule=rule, kind="remind"
            )
    fire_due(engine, NOW - timedelta(minutes=30), UTCZ)
    with engine.begin() as conn:
        schedules.create_schedule(
            conn, NOW, UTCZ, actor="cli", title="Later", rule="daily", kind="remind"
        )
        for i in range(4):
            backlog.create_task(conn, earlier, title=f"undated {i}", project="api", actor="t")
        backlog.create_task(conn, earlier, title="due", due_on=date(2026, 6, 14), actor="t")
        held = backlog.create_task(conn, earlier, title="held", project="api", actor="t")
        backlog_leases.claim_task(
            conn, earlier, held.id, owner="claude:s-old", duration=3600, actor="claude:s-old"
        )
        heartbeat.beat(conn, NOW - timedelta(hours=1), name="jobs@t:1", started_at=earlier,
                     tick_ms=1.0, summary={"fired": 1}, tz="UTC", tick_seconds=60.0)  # fmt: skip
        conn.execute(
            insert(backups).values(
                started_at=earlier, finished_at=earlier, status="failed", error="disk full"
            )
        )
        sid = make_session(
            conn, earlier, external_id="s-old", side="work", project="api",
            commits=[("abc1234", "wire it")], branch="main",
        )  # fmt: skip
        make_session(conn, earlier, external_id="s-inbox", unclassified=True)
        notes_svc.write_handoff(
            conn, earlier + timedelta(minutes=30), sid, "next: the bare path", actor="mcp",
            branch="main", head="0" * 40,
        )  # fmt: skip
        notes_svc.add_note(
            conn, earlier, text="use plain SQL", pinned=True, side="work", project="api",
            sides=SIDES, zone=UTCZ, actor="t", expires_on=date(2026, 7, 1),
        )  # fmt: skip
        notes_svc.add_note(
            conn, earlier, text="side-wide", pinned=True, side="work", project=None,
            sides=SIDES, zone=UTCZ, actor="t",
        )  # fmt: skip


def _both(engine: Engine, db_url: str, **kw: object) -> tuple[Context, Context]:
    with engine.connect() as conn:
        through_sqlalchemy = build_context(conn, NOW, zone=UTCZ, **kw)  # type: ignore[arg-type]
    bare = open_bare(db_url)
    assert bare is not None
    try:
        with bare.reading() as db:
            bare.check_revision()
            through_bare = build_context(db, NOW, zone=UTCZ, **kw)  # type: ignore[arg-type]
    finally:
        bare.close()
    return through_sqlalchemy, through_bare


def test_the_bare_driver_reads_the_context_sqlalchemy_reads(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    _fill(engine)
    for kw in ({}, {"project": "api", "budget": 3}, {"brief": REQUEST, "project": "api"}):
        first, second = _both(engine, db_url, **kw)
        assert first == second, kw
        fit_context(first, UTCZ)
        fit_context(second, UTCZ)
        assert to_json(first, UTCZ) == to_json(second, UTCZ)
        assert to_markdown(first, UTCZ) == to_markdown(second, UTCZ)
    # The values are the Python ones, not the driver's text.
    assert first.brief is not None and first.brief.handoff is not None
    assert isinstance(first.brief.handoff.note.created_at, datetime)
    assert first.brief.handoff.note.created_at.tzinfo is not None
    assert first.brief.pinned[0].note.expires_on == date(2026, 7, 1)
    assert first.brief.pinned[0].note.pinned is True
    assert first.brief.recent[0].commits == 1
    codes = {w.code for w in second.warnings}
    assert {"backup_failed", "stale_leases"} <= codes, codes
    assert second.due[0].task.due_on == date(2026, 6, 14)
    assert second.reminders and second.reminders[0].fire_date == date(2026, 6, 15)


def _fill_sides(engine: Engine) -> None:
    """Tasks and reminders of the work side, the personal side, and none (the inbox)."""
    earlier = NOW - timedelta(days=2)
    for side in ("work", "personal", None):
        with engine.begin() as conn:
            schedules.create_schedule(
                conn, earlier, UTCZ, actor="cli", title=f"remind {side} 알림", rule="daily",
                kind="remind", side=side,
            )  # fmt: skip
    fire_due(engine, NOW - timedelta(minutes=30), UTCZ)
    with engine.begin() as conn:
        for side in ("work", "personal", None):
            schedules.create_schedule(
                conn, NOW, UTCZ, actor="cli", title=f"pending {side}", rule="daily",
                kind="remind", side=side,
            )  # fmt: skip
            backlog.create_task(conn, earlier, title=f"undated {side}", side=side, actor="t")
            backlog.create_task(
                conn, earlier, title=f"due {side}", due_on=date(2026, 6, 14), side=side,
                project="api", actor="t",
            )  # fmt: skip
            held = backlog.create_task(conn, earlier, title=f"held {side}", side=side, actor="t")
            backlog_leases.claim_task(conn, earlier, held.id, owner="o", duration=3600, actor="o")


def test_each_side_reads_its_own_tasks_and_reminders_on_both_drivers(
    engine: Engine, db_url: str
) -> None:
    """A session of a side, with a project or none, sees that side's
    tasks and reminders only; one with no side sees none; the same on both drivers."""
    from ondeck.core.sides import SideView

    _fill_sides(engine)
    views = {
        "work": SideView(sides_on=True, side="work"),
        "personal": SideView(sides_on=True, side="personal"),
        None: SideView(sides_on=True),
    }
    for side, view in views.items():
        for kw in ({"view": view}, {"view": view, "project": "api", "budget": 4}):
            first, second = _both(engine, db_url, **kw)
            assert first == second, (side, kw)
            assert to_markdown(first, UTCZ) == to_markdown(second, UTCZ)
            titles = [r.title for r in first.reminders] + [
                t.title
                for t in (
                    *(r.task for r in first.running),
                    *(d.task for d in first.due),
                    *first.backlog,
                )
            ]
            stale = [w.message for w in first.warnings if w.code == "stale_leases"]
            if side is None:
                assert titles == [] and first.side_closed and not first.omitted
                assert stale == []  # the warning names tasks and holders: no side's here
                continue
            # Only this side's lease past its end is named.
            assert len(stale) == 1 and stale[0].startswith("1 lease past"), stale
            assert titles and all(title.endswith(side) or side in title for title in titles)
            others = {"work", "personal", "None"} - {side}
            assert not [t for t in titles if any(t.split()[-1] == o for o in others)], titles
            assert first.side == side
    # One pool (no sides configured): everything, as before.
    first, second = _both(engine, db_url)
    assert first == second and len(first.backlog) == 3 and len(first.running) == 3
