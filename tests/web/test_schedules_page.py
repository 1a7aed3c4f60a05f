"""Schedules: the table, the live rule check, add/edit, now (creation only by the jobs tick),
pause/resume, delete with its confirm step."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import Engine, func, select

from ondeck.db.tables import schedules as schedules_table
from ondeck.db.tables import tasks
from ondeck.entrypoints.jobs.loop import Jobs
from ondeck.host.settings import Settings
from ondeck.system import events
from ondeck.work import schedules
from ondeck.work.firing import fire_due

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)  # a Monday
HX = {"HX-Request": "true"}
REFUSED_31 = "day 31 is refused: not every month has a day 31"


def _schedule(engine: Engine, settings: Settings, **fields: object) -> schedules.Schedule:
    values = {"title": "Water the plants", "rule": "weekly:MON,THU", **fields}
    with engine.begin() as conn:
        return schedules.create_schedule(conn, NOW, settings.zone, **values)  # type: ignore[arg-type]


def _get(engine: Engine, schedule_id: int) -> schedules.Schedule:
    with engine.connect() as conn:
        return schedules.get_schedule(conn, schedule_id)


def _count(engine: Engine, table) -> int:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_the_table_shows_rule_words_canonical_form_next_due_and_last_fire(
    dash, engine: Engine, settings: Settings
) -> None:  # type: ignore[no-untyped-def]
    s = _schedule(engine, settings, rule="weekly: thu, mon")
    fire_due(engine, NOW, settings.zone)  # Monday: fires today, next due Thursday
    page = dash.get("/schedules").text
    row = re.search(rf'<tr id="schedule-{s.id}".*?</tr>', page, re.S)
    assert row
    text = row.group(0)
    assert "every Monday and Thursday" in text and "<code>weekly:MON,THU</code>" in text
    assert "2026-06-18 (Thu, in 3 days)" in text
    assert "2026-06-15 (Mon, today)" in text  # last fired on
    assert 'processed <time datetime="2026-06-15T09:00:00+00:00">' in text
    assert ">yes<" in text


def test_the_live_rule_check_shows_the_reason_or_the_next_five_dates(dash) -> None:  # type: ignore[no-untyped-def]
    refused = dash.get("/schedules/rule-preview", params={"rule": "monthly:31"}, headers=HX)
    assert refused.status_code == 200
    assert "<html" not in refused.text
    assert 'data-state="refused"' in refused.text and REFUSED_31 in refused.text
    ok = dash.get("/schedules/rule-preview", params={"rule": "Monthly: 1"}, headers=HX).text
    assert "<code>monthly:1</code>" in ok and "on the 1st of every month" in ok
    dates = re.findall(r'<li><time datetime="([\d-]+)"', ok)
    assert dates == ["2026-07-01", "2026-08-01", "2026-09-01", "2026-10-01", "2026-11-01"]
    cron = dash.get("/schedules/rule-preview", params={"rule": "0 9 * * 1"}, headers=HX).text
    assert 'data-state="refused"' in cron and "weekly:MON" in cron


def test_the_rule_check_counts_every_n_from_the_start_date(dash) -> None:  # type: ignore[no-untyped-def]
    page = dash.get(
        "/schedules/rule-preview", params={"rule": "every:10", "start_on": "2026-06-10"}, headers=HX
    ).text
    assert re.findall(r'<li><time datetime="([\d-]+)"', page)[:2] == ["2026-06-20", "2026-06-30"]


def test_the_rule_check_works_without_javascript_as_a_page(dash) -> None:  # type: ignore[no-untyped-def]
    page = dash.get("/schedules/rule-preview", params={"rule": "monthly:31"})
    assert page.status_code == 200 and "<html" in page.text and REFUSED_31 in page.text


def test_adding_monthly_31_is_refused_with_the_reason_and_nothing_written(dash, engine) -> None:  # type: ignore[no-untyped-def]
    response = dash.post("/schedules", {"title": "Pay rent", "rule": "monthly:31", "kind": "task"})
    assert response.status_code == 422
    assert REFUSED_31 in dash.flash(response.text)
    assert 'value="Pay rent"' in response.text and 'value="monthly:31"' in response.text
    assert _count(engine, schedules_table) == 0


def test_adding_a_schedule_and_its_next_dates(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    response = dash.post(
        "/schedules",
        {
            "title": "Pay rent",
            "rule": "monthly:1",
            "kind": "task",
            "project": "home",
            "priority": "1",
        },
        follow_redirects=False,
    )
    assert response.status_code == 303
    page = dash.get(response.headers["location"]).text
    assert "added schedule 1: Pay rent (next due 2026-07-01)" in dash.flash(page)
    created = _get(engine, 1)
    assert (created.rule, created.project, created.priority) == ("monthly:1", "home", 1)
    detail = dash.get("/schedules/1").text
    upcoming = detail.split("<h2>Next dates</h2>")[1].split("</ol>")[0]
    assert re.findall(r'<time datetime="([\d-]+)"', upcoming) == [
        "2026-07-01",
        "2026-08-01",
        "2026-09-01",
        "2026-10-01",
        "2026-11-01",
    ]
    with engine.connect() as conn:
        assert events.list_events(conn, subject="schedule:1")[0].actor == "dashboard"


def test_now_only_pulls_the_date_and_the_jobs_tick_creates_the_task(
    dash, engine: Engine, settings: Settings
) -> None:  # type: ignore[no-untyped-def]
    Jobs(engine=engine, settings=settings, steps=[]).tick(NOW - timedelta(seconds=20))
    s = _schedule(engine, settings, rule="monthly:1", title="Pay rent")
    response = dash.post(f"/schedules/{s.id}/now", {"next": "/schedules"}, headers=HX)
    assert response.status_code == 200
    assert "due today — will be created by the jobs loop within a minute" in response.text
    assert _get(engine, s.id).next_due == NOW.date()
    assert _count(engine, tasks) == 0  # "now" creates nothing itself
    # The row says the same after a reload: it comes from stored state, not a flash.
    page = dash.get("/schedules").text
    assert "due today — will be created by the jobs loop within a minute" in page
    assert "Pay rent" not in dash.get("/tasks").text
    fire_due(engine, NOW, settings.zone)
    assert _count(engine, tasks) == 1
    assert "Pay rent" in dash.get("/tasks").text
    after = dash.get("/schedules").text
    assert "will be created by the jobs loop" not in after
    assert 'processed <time datetime="2026-06-15T09:00:00+00:00">' in after


def test_now_without_a_ticking_jobs_loop_says_so_instead_of_promising(
    dash, engine: Engine, settings: Settings
) -> None:  # type: ignore[no-untyped-def]
    s = _schedule(engine, settings, rule="monthly:1")
    dash.post(f"/schedules/{s.id}/now", {"next": "/schedules"})
    page = dash.get("/schedules").text
    assert "due today — waiting for the jobs loop, which has never ticked" in page
    assert "will be created by the jobs loop" not in page
    Jobs(engine=engine, settings=settings, steps=[]).tick(NOW - timedelta(hours=1))
    page = dash.get("/schedules").text
    assert "which has not ticked since 2026-06-15T08:00:00+00:00" in page


def test_now_on_a_paused_schedule_is_refused_as_a_flash(dash, engine, settings) -> None:  # type: ignore[no-untyped-def]
    s = _schedule(engine, settings)
    with engine.begin() as conn:
        schedules.pause_schedule(conn, NOW, s.id)
    response = dash.post(f"/schedules/{s.id}/now", {"next": "/schedules"}, headers=HX)
    assert response.status_code == 409 and response.headers["hx-retarget"] == "#flash"
    assert "is paused: resume it first" in response.text


def test_pause_and_resume(dash, engine: Engine, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    s = _schedule(engine, settings)
    paused = dash.post(f"/schedules/{s.id}/pause", {"next": "/schedules"}, follow_redirects=False)
    assert paused.status_code == 303 and not _get(engine, s.id).enabled
    row = dash.post(f"/schedules/{s.id}/resume", {"next": "/schedules"}, headers=HX)
    assert row.status_code == 200 and f'<tr id="schedule-{s.id}" class="enabled">' in row.text
    assert _get(engine, s.id).enabled
    with engine.connect() as conn:
        kinds = [e.kind for e in events.list_events(conn, subject=f"schedule:{s.id}")]
    assert kinds[:2] == ["schedule.resumed", "schedule.paused"]


def test_delete_asks_first(dash, engine: Engine, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    s = _schedule(engine, settings)
    confirm = dash.get(f"/schedules/{s.id}/delete?confirm=1&next=/schedules")
    assert confirm.status_code == 200 and 'name="confirm" value="1"' in confirm.text
    unconfirmed = dash.post(f"/schedules/{s.id}/delete", {"next": "/schedules"})
    assert unconfirmed.status_code == 200 and 'name="confirm" value="1"' in unconfirmed.text
    assert _get(engine, s.id).enabled
    deleted = dash.post(
        f"/schedules/{s.id}/delete",
        {"confirm": "1", "next": f"/schedules/{s.id}"},
        follow_redirects=False,
    )
    assert deleted.status_code == 303 and deleted.headers["location"] == "/schedules"
    assert dash.get(f"/schedules/{s.id}").status_code == 404
    assert "Water the plants" not in dash.get("/schedules").text


def test_edit_changes_the_rule_and_recomputes_next_due(dash, engine, settings) -> None:  # type: ignore[no-untyped-def]
    s = _schedule(engine, settings)
    refused = dash.post(f"/schedules/{s.id}/edit", {"title": "Plants", "rule": "monthly:30"})
    assert refused.status_code == 422 and "day 30 is refused" in dash.flash(refused.text)
    assert _get(engine, s.id).rule == "weekly:MON,THU"
    response = dash.post(
        f"/schedules/{s.id}/edit",
        {"title": "Plants", "rule": "monthly:last", "priority": "3", "missed": "latest"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    edited = _get(engine, s.id)
    assert (edited.title, edited.rule, edited.next_due) == (
        "Plants",
        "monthly:last",
        date(2026, 6, 30),
    )


def test_the_list_is_paginated_and_filtered_by_kind(dash, engine, settings) -> None:  # type: ignore[no-untyped-def]
    for n in range(70):
        _schedule(engine, settings, title=f"s{n:03d}", kind="remind" if n % 5 else "task")
    first = dash.get("/schedules").text
    assert first.count('<tr id="schedule-') == 50 and "1–50 of 70" in first
    second = dash.get("/schedules?page=2").text
    assert second.count('<tr id="schedule-') == 20 and "s069" in second
    tasks_only = dash.get("/schedules?kind=task").text
    assert tasks_only.count('<tr id="schedule-') == 14 and "14 in all" in tasks_only


def test_a_bad_schedule_id_is_a_page_not_a_500(dash) -> None:  # type: ignore[no-untyped-def]
    assert dash.get("/schedules/999").status_code == 404
    assert dash.get(f"/schedules/{2**70}").status_code == 422
    assert dash.post(f"/schedules/{2**70}/now", {"next": "/"}).status_code == 422
