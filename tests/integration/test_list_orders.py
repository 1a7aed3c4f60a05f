"""The dashboard pages through the services' own lists: page after page, the same items in
the same order as `backlog.list_tasks` and `schedules.list_schedules`, whatever the filter."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Connection, Engine, update

from ondeck.core.models import TaskStatus as Status
from ondeck.db.tables import schedules as schedules_table
from ondeck.entrypoints.web import queries
from ondeck.work import backlog, schedules

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
UTCZ = ZoneInfo("UTC")
PAGE = 3


def _all_pages(fetch) -> tuple[list[int], int]:  # type: ignore[no-untyped-def]
    ids: list[int] = []
    page = 1
    while True:
        found = fetch(page)
        ids += [item.id for item in found.items]
        if not found.has_next:
            return ids, found.total
        page += 1


@pytest.fixture
def backlog_of_all_kinds(engine: Engine) -> None:
    """Ties on due date and priority, undated tasks, every status, two projects."""
    pick = random.Random(13)
    with engine.begin() as conn:
        for i in range(80):
            due = pick.choice(
                [None, None, NOW.date(), NOW.date() + timedelta(days=pick.randint(-3, 3))]
            )
            task = backlog.create_task(
                conn,
                NOW,
                title=f"task {i}",
                due_on=due,
                priority=pick.choice([0, 2, 2, 9]),
                project=pick.choice([None, "site", "shop"]),
                actor="cli",
            )
            fate = pick.choice(["ready", "ready", "running", "done", "cancelled"])
            if fate in ("running", "done"):
                held = backlog.claim_task(conn, NOW, task.id, owner="me", actor="cli")
                if fate == "done":
                    backlog.complete_task(conn, NOW, task.id, token=held.lease_token, actor="cli")
            elif fate == "cancelled":
                backlog.cancel_task(conn, NOW, task.id, actor="cli")


@pytest.mark.parametrize(
    "statuses",
    [None, [Status.READY], [Status.READY, Status.RUNNING], [Status.DONE, Status.CANCELLED]],
)
@pytest.mark.parametrize("project", [None, "site"])
def test_task_pages_are_the_task_list_cut_in_pages(
    engine: Engine, backlog_of_all_kinds: None, statuses: list[Status] | None, project: str | None
) -> None:
    with engine.connect() as conn:
        listed = [
            t.id for t in backlog.list_tasks(conn, statuses=statuses, project=project, limit=1000)
        ]
        paged, total = _all_pages(
            lambda page: queries.page_tasks(
                conn, statuses=statuses, project=project, page=page, size=PAGE
            )
        )
    assert len(listed) > PAGE, "enough tasks for several pages"
    assert paged == listed
    assert total == len(listed)


def _schedules_of_all_kinds(conn: Connection) -> None:
    pick = random.Random(29)
    for i in range(25):
        made = schedules.create_schedule(
            conn,
            NOW,
            UTCZ,
            title=f"schedule {i}",
            rule=pick.choice(["daily", "weekly:MON", "weekly:FRI", "monthly:1", "every:3"]),
            kind=pick.choice(["task", "remind"]),
            start_on=NOW.date() + timedelta(days=pick.randint(0, 10)),
            actor="cli",
        )
        fate = pick.choice(["live", "live", "no date", "paused", "removed"])
        if fate == "no date":  # nothing left to fire: shown last
            conn.execute(
                update(schedules_table).where(schedules_table.c.id == made.id).values(next_due=None)
            )
        elif fate == "paused":
            schedules.pause_schedule(conn, NOW, made.id, actor="cli")
        elif fate == "removed":
            schedules.delete_schedule(conn, NOW, made.id, actor="cli")


@pytest.mark.parametrize("kind", [None, "remind"])
def test_schedule_pages_are_the_schedule_list_cut_in_pages(
    engine: Engine, kind: str | None
) -> None:
    with engine.begin() as conn:
        _schedules_of_all_kinds(conn)
    with engine.connect() as conn:
        listed = [s.id for s in schedules.list_schedules(conn, kind=kind)]
        paged, total = _all_pages(
            lambda page: queries.page_schedules(conn, kind=kind, page=page, size=PAGE)
        )
    assert len(listed) > PAGE
    assert paged == listed
    assert total == len(listed)
