"""What a new session is told: reminders from the record of the fire, tasks, warnings, budget."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import Engine, insert, select

from ondeck.context.render import (
    hook_output,
    to_json,
    to_markdown,
)
from ondeck.db.tables import backups, fires
from ondeck.db.tables import schedules as schedules_table
from ondeck.entrypoints.jobs.loop import Jobs
from ondeck.system import heartbeat
from ondeck.work import backlog, backlog_leases
from ondeck.work.firing import fire_due
from support.context import MONDAY_9, UTCZ, remind, told

SEOUL = ZoneInfo("Asia/Seoul")
BEAT = {"name": "jobs@test:1", "started_at": MONDAY_9, "tick_ms": 1.0, "summary": {}}


def test_a_reminder_that_fired_today_stays_visible(engine: Engine) -> None:
    """Before the tick: pending. After: next_due moved on, still listed, with the instant."""
    schedule_id = remind(engine, MONDAY_9 - timedelta(hours=1), body="look at the invoices")
    before = told(engine, MONDAY_9)
    assert [(r.schedule_id, r.fired_at) for r in before.reminders] == [(schedule_id, None)]
    assert "pending" in to_markdown(before, UTCZ)

    fire_due(engine, MONDAY_9, UTCZ)
    with engine.connect() as conn:
        next_due = conn.execute(
            select(schedules_table.c.next_due).where(schedules_table.c.id == schedule_id)
        ).scalar_one()
    assert next_due == date(2026, 6, 22), "the jobs loop moved next_due into the future"

    after = told(engine, MONDAY_9 + timedelta(hours=2))
    [reminder] = after.reminders
    assert reminder.schedule_id == schedule_id
    assert reminder.fired_at == MONDAY_9
    assert reminder.rule_text == "every Monday"
    markdown = to_markdown(after, UTCZ)
    assert "Weekly check" in markdown and "fired 2026-06-15 09:00" in markdown
    assert "look at the invoices" in markdown
    assert to_json(after, UTCZ)["reminders"][0]["fired_at"] == "2026-06-15T09:00:00+00:00"

    assert told(engine, MONDAY_9 + timedelta(days=1)).reminders == [], "the next day it is gone"


def test_a_reminder_processed_late_counts_for_the_day_it_was_processed(engine: Engine) -> None:
    """Fire date Sunday, processed Monday 00:10 (jobs was down): Monday's session sees it."""
    remind(engine, datetime(2026, 6, 14, 8, 0, tzinfo=UTC), rule="daily")
    fire_due(engine, datetime(2026, 6, 15, 0, 10, tzinfo=UTC), UTCZ)
    ctx = told(engine, datetime(2026, 6, 15, 8, 0, tzinfo=UTC))
    assert len(ctx.reminders) == 1
    assert ctx.reminders[0].fired_at is not None


def test_today_is_the_configured_zones_date_at_midnight_in_seoul(engine: Engine) -> None:
    """00:30 KST on Tuesday is 15:30 UTC on Monday: Tuesday's reminders and due tasks."""
    kst_0030_tuesday = datetime(2026, 6, 15, 15, 30, tzinfo=UTC)
    remind(engine, kst_0030_tuesday - timedelta(days=3), SEOUL, rule="weekly:TUE", title="Tue")
    with engine.begin() as conn:
        backlog.create_task(
            conn, MONDAY_9, title="due Tuesday", due_on=date(2026, 6, 16), actor="cli"
        )
    seoul = told(engine, kst_0030_tuesday, SEOUL)
    assert seoul.date == date(2026, 6, 16)
    assert [r.title for r in seoul.reminders] == ["Tue"]
    assert [d.task.title for d in seoul.due] == ["due Tuesday"]
    utc = told(engine, kst_0030_tuesday, UTCZ)
    assert utc.date == date(2026, 6, 15)
    assert utc.due == [] and utc.reminders == []


def test_it_warns_when_the_jobs_loop_is_not_running(engine: Engine, settings) -> None:  # type: ignore[no-untyped-def]
    codes = {w.code for w in told(engine, MONDAY_9).warnings}
    assert "jobs_not_running" in codes
    Jobs(engine=engine, settings=settings, steps=[]).tick(MONDAY_9)
    fresh = told(engine, MONDAY_9 + timedelta(minutes=2))
    assert "jobs_not_running" not in {w.code for w in fresh.warnings}
    late = told(engine, MONDAY_9 + timedelta(minutes=4))
    [warning] = [w for w in late.warnings if w.code == "jobs_not_running"]
    assert "2026-06-15T09:00:00+00:00" in warning.message


def test_an_expired_lease_is_flagged_and_warned(engine: Engine) -> None:
    with engine.begin() as conn:
        task = backlog.create_task(conn, MONDAY_9, title="deploy", actor="cli")
        backlog_leases.claim_task(
            conn, MONDAY_9, task.id, owner="claude:s1", duration="1h", actor="cli"
        )
    live = told(engine, MONDAY_9 + timedelta(minutes=30))
    assert [r.expired for r in live.running] == [False]
    assert "stale_leases" not in {w.code for w in live.warnings}
    late = told(engine, MONDAY_9 + timedelta(hours=3))
    [running] = late.running
    assert running.expired and running.expired_for == timedelta(hours=2)
    assert running.releases_at == MONDAY_9 + timedelta(hours=7)
    [warning] = [w for w in late.warnings if w.code == "stale_leases"]
    assert "claude:s1" in warning.message
    markdown = to_markdown(late, UTCZ)
    assert "EXPIRED 2 h ago" in markdown and "nothing will release it" in markdown
    with engine.begin() as conn:  # a live jobs loop: its reaper will come
        heartbeat.beat(conn, MONDAY_9 + timedelta(hours=3), **BEAT)
    markdown = to_markdown(told(engine, MONDAY_9 + timedelta(hours=3)), UTCZ)
    assert "the jobs loop releases it at 2026-06-15 16:00 (in 4 h) unless the holder renews" in (
        markdown
    )
    assert to_json(late, UTCZ)["tasks"]["running"][0]["expired"] is True


def test_it_warns_about_a_failed_backup_and_an_old_one(engine: Engine) -> None:
    assert "backup_stale" in {w.code for w in told(engine, MONDAY_9).warnings}
    with engine.begin() as conn:
        conn.execute(
            insert(backups).values(
                started_at=MONDAY_9 - timedelta(hours=1),
                finished_at=MONDAY_9 - timedelta(hours=1),
                status="ok",
            )
        )
    assert not {"backup_stale", "backup_failed"} & {w.code for w in told(engine, MONDAY_9).warnings}
    with engine.begin() as conn:
        conn.execute(
            insert(backups).values(
                started_at=MONDAY_9, finished_at=MONDAY_9, status="failed", error="No space left"
            )
        )
    [warning] = [w for w in told(engine, MONDAY_9).warnings if w.code == "backup_failed"]
    assert "No space left" in warning.message
    three_days = MONDAY_9 + timedelta(days=3)
    assert "backup_failed" in {w.code for w in told(engine, three_days).warnings}


def test_it_warns_when_schedules_are_overdue(engine: Engine) -> None:
    remind(engine, MONDAY_9, rule="daily")
    later = MONDAY_9 + timedelta(days=2)
    [warning] = [w for w in told(engine, later).warnings if w.code == "schedules_overdue"]
    assert "2026-06-15" in warning.message


def test_a_big_backlog_stays_within_the_budget_with_counts(engine: Engine) -> None:
    with engine.begin() as conn:
        for i in range(500):
            backlog.create_task(
                conn, MONDAY_9, title=f"due task {i}", due_on=date(2026, 6, 1), actor="cli"
            )
    ctx = told(engine, MONDAY_9)
    assert len(ctx.due) <= 20
    assert ctx.omitted["due"] == 500 - len(ctx.due)
    markdown = to_markdown(ctx, UTCZ)
    assert len(markdown) <= 4000
    assert f"{ctx.omitted['due']} due" in markdown
    small = told(engine, MONDAY_9, budget=5)
    assert len(small.due) == 5 and small.omitted["due"] == 495


def test_project_scope_shows_that_project_and_unscoped_items(engine: Engine) -> None:
    with engine.begin() as conn:
        for title, project in (("site work", "site"), ("shop work", "shop"), ("general", None)):
            backlog.create_task(conn, MONDAY_9, title=title, project=project, actor="cli")
    site = told(engine, MONDAY_9, project="site")
    assert sorted(t.title for t in site.backlog) == ["general", "site work"]
    everything = told(engine, MONDAY_9)
    assert len(everything.backlog) == 3


def test_reminders_share_the_budget_fired_first_in_order_then_pending(engine: Engine) -> None:
    """Fired today by the instant of the fire, each schedule once (its first fire), then the
    ones due and not processed; what does not fit is counted."""
    a, b, c, d = (
        remind(engine, MONDAY_9 - timedelta(hours=1), rule="daily", title=title) for title in "ABCD"
    )
    at = MONDAY_9.replace(hour=8)
    with engine.begin() as conn:
        conn.execute(
            insert(fires),
            [
                {"schedule_id": b, "fire_date": date(2026, 6, 15), "fired_at": at},
                # A: processed late for Sunday, then its own date: shown once, the first.
                {
                    "schedule_id": a,
                    "fire_date": date(2026, 6, 14),
                    "fired_at": at.replace(minute=30),
                },
                {
                    "schedule_id": a,
                    "fire_date": date(2026, 6, 15),
                    "fired_at": at.replace(minute=45),
                },
            ],
        )
    everything = told(engine, MONDAY_9)
    assert [(r.schedule_id, r.fire_date, r.fired_at) for r in everything.reminders] == [
        (b, date(2026, 6, 15), at),
        (a, date(2026, 6, 14), at.replace(minute=30)),
        (c, None, None),
        (d, None, None),
    ]
    assert everything.omitted == {}
    three = told(engine, MONDAY_9, budget=3)
    assert [r.schedule_id for r in three.reminders] == [b, a, c]
    assert three.omitted == {"reminders": 1}
    one = told(engine, MONDAY_9, budget=1)
    assert [r.schedule_id for r in one.reminders] == [b]
    assert one.omitted == {"reminders": 3}


def test_left_out_counts_follow_the_project_scope(engine: Engine) -> None:
    """Counts of what did not fit: the project's items and the unscoped ones, nothing else;
    a list that exactly fills the room left has nothing left out."""
    with engine.begin() as conn:
        for project, undated, due in (("site", 3, 2), ("shop", 2, 1), (None, 2, 0)):
            for i in range(undated):
                backlog.create_task(
                    conn, MONDAY_9, title=f"{project} {i}", project=project, actor="cli"
                )
            for i in range(due):
                backlog.create_task(
                    conn,
                    MONDAY_9,
                    title=f"{project} due {i}",
                    project=project,
                    due_on=date(2026, 6, 15),
                    actor="cli",
                )
            held = backlog.create_task(
                conn, MONDAY_9, title=f"{project} held", project=project, actor="cli"
            )
            backlog_leases.claim_task(
                conn, MONDAY_9, held.id, owner="claude:s", duration="1h", actor="cli"
            )
    site = told(engine, MONDAY_9, project="site", budget=3)
    assert len(site.running) == 2 and len(site.due) == 1 and site.backlog == []
    assert site.omitted == {"due": 1, "backlog": 5}
    everything = told(engine, MONDAY_9, budget=3)
    assert len(everything.running) == 3 and everything.due == []
    assert everything.omitted == {"due": 3, "backlog": 7}
    exact = told(engine, MONDAY_9, project="site", budget=2 + 2 + 5)
    assert exact.omitted == {}
    assert told(engine, MONDAY_9, project="site", budget=2 + 2 + 4).omitted == {"backlog": 1}


def test_the_character_budget_keeps_what_fits_and_no_more(engine: Engine) -> None:
    """Items go from the end until the Markdown fits: at a limit of exactly the size with 8
    items, or one character short of the size with 9, it keeps 8."""
    with engine.begin() as conn:
        for i in range(25):
            backlog.create_task(conn, MONDAY_9, title=f"task {i:02} " + "x" * 90, actor="cli")
    full = told(engine, MONDAY_9, char_budget=100_000)
    assert len(full.backlog) == 20 and full.omitted == {"backlog": 5}

    def size(kept: int) -> int:
        ctx = dataclasses.replace(full, backlog=full.backlog[:kept], omitted={"backlog": 25 - kept})
        return len(to_markdown(ctx, UTCZ))

    for limit in (size(8), size(9) - 1):
        trimmed = told(engine, MONDAY_9, char_budget=limit)
        assert trimmed.backlog == full.backlog[:8]
        assert trimmed.omitted == {"backlog": 17}
        assert len(to_markdown(trimmed, UTCZ)) <= limit


def test_stale_leases_are_counted_past_the_five_named(engine: Engine) -> None:
    with engine.begin() as conn:
        for i in range(7):
            task = backlog.create_task(conn, MONDAY_9, title=f"t{i}", actor="cli")
            backlog_leases.claim_task(
                conn, MONDAY_9, task.id, owner=f"o{i}", duration="1h", actor="cli"
            )
    [warning] = [
        w for w in told(engine, MONDAY_9 + timedelta(hours=2)).warnings if w.code == "stale_leases"
    ]
    assert warning.message.startswith("7 leases past their end") and "and 2 more" in warning.message


def test_hook_output_is_what_claude_code_expects(engine: Engine) -> None:
    markdown = to_markdown(told(engine, MONDAY_9), UTCZ)
    assert hook_output(markdown) == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": markdown}
    }
    assert markdown.startswith("# On deck 2026-06-15 (UTC)")
    assert markdown.index("## Warnings") < markdown.index("Nothing on deck")
