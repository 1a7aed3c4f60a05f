"""What the context must not hide: a reminder that fired today whose
schedule was removed since, a stored rule that no longer parses, and where to see what was
left out of each list.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, update

from ondeck.context.render import render, to_json, to_markdown
from ondeck.db.tables import schedules as schedules_table
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings
from ondeck.work import backlog, backlog_leases, schedules
from ondeck.work.firing import fire_due
from support.context import MONDAY_9, UTCZ, built, remind


def _remind(engine: Engine, title: str = "Stand-up", rule: str = "daily") -> int:
    return remind(engine, MONDAY_9 - timedelta(hours=2), title=title, rule=rule)


def test_a_reminder_that_fired_today_stays_after_its_schedule_is_removed(
    engine: Engine, settings: Settings
) -> None:
    schedule_id = _remind(engine, "주간 회의 notes")
    fire_due(engine, MONDAY_9, UTCZ)
    with engine.begin() as conn:
        schedules.delete_schedule(conn, MONDAY_9 + timedelta(hours=1), schedule_id)
    ctx = built(engine, MONDAY_9 + timedelta(hours=2))
    [reminder] = ctx.reminders
    assert reminder.schedule_id == schedule_id and reminder.fired_at == MONDAY_9
    assert reminder.removed_at == MONDAY_9 + timedelta(hours=1)
    markdown = to_markdown(ctx, UTCZ)
    assert (
        "주간 회의 notes (every day; fired 2026-06-15 09:00; schedule removed 2026-06-15 10:00)"
        in (markdown)
    )
    assert to_json(ctx, UTCZ)["reminders"][0]["removed_at"] == "2026-06-15T10:00:00+00:00"
    hook = json.loads(render(ctx, UTCZ, "hook"))
    assert "schedule removed" in json.dumps(hook, ensure_ascii=False)
    with (
        time_machine.travel(MONDAY_9 + timedelta(hours=2), tick=False),
        TestClient(create_app(settings, engine)) as client,
    ):
        page = client.get("/").text
    assert "주간 회의 notes" in page and "(schedule removed <time" in page
    assert f'href="/schedules/{schedule_id}"' not in page, "no link to a page that is gone"
    assert built(engine, MONDAY_9 + timedelta(days=1)).reminders == [], "the next day it is gone"


def test_a_removed_reminder_that_never_fired_is_not_pending(engine: Engine) -> None:
    schedule_id = _remind(engine)
    with engine.begin() as conn:
        schedules.delete_schedule(conn, MONDAY_9, schedule_id)
    assert built(engine).reminders == []


def _break_rule(engine: Engine, schedule_id: int, rule: str) -> None:
    """A rule stored by an older version (or by hand) that the grammar now refuses."""
    with engine.begin() as conn:
        conn.execute(
            update(schedules_table).where(schedules_table.c.id == schedule_id).values(rule=rule)
        )


@pytest.mark.parametrize("kind", ["task", "remind"])
def test_a_stored_rule_that_no_longer_parses_is_a_warning_not_nothing_on_deck(
    engine: Engine, kind: str
) -> None:
    with engine.begin() as conn:
        made = schedules.create_schedule(
            conn, MONDAY_9 - timedelta(days=1), UTCZ, title="month end", rule="daily", kind=kind
        )
    _break_rule(engine, made.id, "monthly:31")
    result = fire_due(engine, MONDAY_9, UTCZ)
    assert result.errors == 1 and result.fired == 0, "the tick skips it"
    ctx = built(engine)
    warnings = {w.code: w.message for w in ctx.warnings}
    message = warnings["unreadable_rules"]
    assert f"schedule {made.id} 'monthly:31'" in message and "will never fire" in message
    assert "not every month" in message  # the grammar's own reason
    markdown = to_markdown(ctx, UTCZ)
    assert "unreadable_rules" in markdown
    if kind == "remind":
        assert "unreadable rule 'monthly:31'" in markdown  # the pending reminder says so too


def test_unreadable_rules_are_counted_past_the_five_named(engine: Engine) -> None:
    ids = []
    for n in range(7):
        with engine.begin() as conn:
            ids.append(
                schedules.create_schedule(
                    conn, MONDAY_9, UTCZ, title=f"s{n}", rule="daily", kind="task"
                ).id
            )
    for schedule_id in ids:
        _break_rule(engine, schedule_id, "0 9 * * *")
    message = {w.code: w.message for w in built(engine).warnings}["unreadable_rules"]
    assert message.startswith("7 due schedules") and "and 2 more" in message


def test_a_paused_or_future_schedule_with_a_broken_rule_is_not_warned_today(engine: Engine) -> None:
    """Only what should fire by today can fail to: the rest is checked the day it is due."""
    with engine.begin() as conn:
        later = schedules.create_schedule(
            conn,
            MONDAY_9,
            UTCZ,
            title="later",
            rule="daily",
            start_on=MONDAY_9.date() + timedelta(days=3),
        )
        paused = schedules.create_schedule(conn, MONDAY_9, UTCZ, title="paused", rule="daily")
        schedules.pause_schedule(conn, MONDAY_9, paused.id)
    _break_rule(engine, later.id, "monthly:31")
    _break_rule(engine, paused.id, "monthly:31")
    assert "unreadable_rules" not in {w.code for w in built(engine).warnings}
    assert "unreadable_rules" in {
        w.code for w in built(engine, MONDAY_9 + timedelta(days=3)).warnings
    }


def test_each_left_out_list_names_the_command_that_shows_it(engine: Engine) -> None:
    for n in range(3):
        _remind(engine, f"reminder {n}")
    with engine.begin() as conn:
        for n in range(3):
            backlog.create_task(
                conn, MONDAY_9, title=f"due {n}", due_on=MONDAY_9.date(), actor="cli"
            )
            backlog.create_task(conn, MONDAY_9, title=f"someday {n}", actor="cli")
            task = backlog.create_task(conn, MONDAY_9, title=f"held {n}", actor="cli")
            backlog_leases.claim_task(conn, MONDAY_9, task.id, owner="x", actor="cli")
    markdown = to_markdown(built(engine, budget=1), UTCZ)
    line = markdown.strip().splitlines()[-1]
    assert line.startswith("Left out to fit the budget:")
    assert "2 reminders (ondeck schedule list --kind remind)" in line
    assert "3 running (ondeck task list --status RUNNING)" in line
    assert "3 due (ondeck task list --status READY --due-before 2026-06-16)" in line
    assert "3 backlog (ondeck task list --status READY)" in line
    assert "(ondeck task list shows all)" not in markdown
