"""Today, Activity and System pages: what they show, and that each state has its instant."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import time_machine
from sqlalchemy import Engine, insert

from ondeck.core.models import Task
from ondeck.db.migrate import HEAD
from ondeck.db.tables import backups
from ondeck.entrypoints.jobs.loop import Jobs
from ondeck.host.settings import Settings, load_settings
from ondeck.system import events
from ondeck.work import backlog, backlog_leases, schedules
from ondeck.work.firing import fire_due

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


def _task(engine: Engine, title: str, **fields: object) -> Task:
    with engine.begin() as conn:
        return backlog.create_task(conn, NOW, title=title, actor="cli", **fields)  # type: ignore[arg-type]


def test_it_serves_every_page_as_html_with_the_security_headers(dash) -> None:  # type: ignore[no-untyped-def]
    for path in ("/", "/tasks", "/schedules", "/activity", "/system"):
        response = dash.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert response.headers["x-frame-options"] == "DENY"
        assert '<script src="/static/htmx.min.js"' in response.text


def test_it_serves_htmx_and_the_stylesheet_from_the_package(dash) -> None:  # type: ignore[no-untyped-def]
    htmx = dash.get("/static/htmx.min.js")
    assert htmx.status_code == 200
    assert htmx.text.startswith("/*! htmx 2.")
    assert "0BSD" in htmx.text[:300]
    assert dash.get("/static/ondeck.css").status_code == 200


def test_dashboard_routes_stay_out_of_the_openapi_document(dash) -> None:  # type: ignore[no-untyped-def]
    paths = dash.get("/openapi.json").json()["paths"]
    assert all(p.startswith("/api/") for p in paths)


def test_today_shows_running_due_and_fired_reminders_with_their_instants(
    dash, engine: Engine, settings: Settings
) -> None:  # type: ignore[no-untyped-def]
    held = _task(engine, "Write the report")
    _task(engine, "Pay the invoice", due_on=NOW.date() - timedelta(days=2))
    with engine.begin() as conn:
        backlog_leases.claim_task(
            conn, NOW, held.id, owner="claude:abc", duration="2h", actor="cli"
        )
        schedules.create_schedule(
            conn, NOW, settings.zone, title="Stand-up notes", rule="daily", kind="remind"
        )
    fire_due(engine, NOW, settings.zone)
    page = dash.get("/").text
    assert "Write the report" in page and "claude:abc" in page
    # The lease end in the zone, with its relative hint, backed by the stored instant.
    assert "lease until" in page and "2026-06-15 11:00:00 (in 2 h)" in page
    assert 'datetime="2026-06-15T11:00:00+00:00"' in page
    assert "Pay the invoice" in page and "2 days overdue" in page
    assert "Stand-up notes" in page and "fired" in page
    assert "processed <time" in page  # the fire row's instant, not just "fired"


def test_today_says_an_expired_lease_is_expired_and_when_it_is_released(
    engine: Engine, settings: Settings, dash, at: time_machine.Coordinates
) -> None:  # type: ignore[no-untyped-def]
    held = _task(engine, "Silent holder")
    with engine.begin() as conn:
        backlog_leases.claim_task(conn, NOW, held.id, owner="cli:bob", duration="1h", actor="cli")
    at.move_to(NOW + timedelta(hours=3))  # lease ended 2 h ago; grace 6 h → released in 4 h
    page = dash.get("/").text
    # No jobs loop ever ticked: no release time is promised.
    assert "EXPIRED 2 h ago, holder silent; due for release at 2026-06-15 16:00 (in 4 h)" in page
    assert "nothing will release it until the loop runs" in page
    Jobs(engine=engine, settings=settings, steps=[]).tick(NOW + timedelta(hours=3))
    page = dash.get("/").text
    assert "the jobs loop releases it at 2026-06-15 16:00 (in 4 h) unless the holder renews" in page
    assert "stale_leases" in page  # the warning banner names it too


def test_today_warns_when_the_jobs_loop_is_silent_and_backups_failed(
    engine: Engine, settings: Settings, dash, at: time_machine.Coordinates
) -> None:  # type: ignore[no-untyped-def]
    Jobs(engine=engine, settings=settings, steps=[]).tick(NOW - timedelta(hours=2))
    with engine.begin() as conn:
        conn.execute(
            insert(backups).values(
                started_at=NOW - timedelta(hours=1),
                finished_at=NOW - timedelta(hours=1),
                status="failed",
                error="disk full",
            )
        )
    page = dash.get("/").text
    banner = re.search(r'<div class="banner" role="alert">(.*?)</div>', page, re.S)
    assert banner, "warnings are in a banner"
    assert "has not ticked since 2026-06-15T07:00:00+00:00" in banner.group(1)
    assert "disk full" in banner.group(1)


def test_today_in_the_configured_zone(engine: Engine, settings: Settings, at) -> None:  # type: ignore[no-untyped-def]
    """09:00 UTC is 18:00 in Seoul: the page shows Seoul's date and offset."""
    from fastapi.testclient import TestClient

    from ondeck.entrypoints.api.app import create_app

    seoul = load_settings(database_url=settings.url, tz="Asia/Seoul")
    held = _task(engine, "Zone check")
    with engine.begin() as conn:
        backlog_leases.claim_task(conn, NOW, held.id, owner="x", duration="1h", actor="cli")
    with TestClient(create_app(seoul, engine)) as client:
        page = client.get("/").text
    assert "2026-06-15 19:00:00 (in 60 min)" in page
    assert 'datetime="2026-06-15T19:00:00+09:00"' in page
    assert "times in Asia/Seoul" in page


def test_today_refreshes_as_an_htmx_partial(dash) -> None:  # type: ignore[no-untyped-def]
    partial = dash.get("/", headers={"HX-Request": "true"}).text
    assert partial.lstrip().startswith('<section id="today"')
    assert "<html" not in partial


def test_activity_lists_events_newest_first_filtered_and_paginated(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    with engine.begin() as conn:
        for n in range(120):
            events.record(conn, NOW, actor="cli", kind="task.note", subject=f"task:{n % 3}")
        events.record(conn, NOW, actor="jobs", kind="schedule.fired", subject="schedule:9")
    first = dash.get("/activity").text
    ids = [int(i) for i in re.findall(r"<tr>\s*<td>(\d+)</td>", first)]
    assert len(ids) == 50 and ids == sorted(ids, reverse=True)
    assert "schedule.fired" in first.split("task.note")[0]  # the newest is on top
    older = re.search(r'href="(/activity\?before=\d+)" rel="next"', first)
    assert older
    second = dash.get(older.group(1).replace("&amp;", "&")).text
    second_ids = [int(i) for i in re.findall(r"<tr>\s*<td>(\d+)</td>", second)]
    assert max(second_ids) < min(ids)
    by_kind = dash.get("/activity?kind=schedule.").text
    assert "schedule:9" in by_kind and "task.note" not in by_kind.split("<tbody>")[1]
    by_subject = dash.get("/activity?subject=task:1").text
    rows = by_subject.split("<tbody>")[1]
    assert "task:1" in rows and "task:2" not in rows


def test_activity_refuses_a_bad_page_cursor_with_a_page_not_a_500(dash) -> None:  # type: ignore[no-untyped-def]
    response = dash.get("/activity?before=abc")
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("text/html")
    assert "before" in response.text


def test_system_shows_heartbeat_backups_database_and_zone(
    dash, engine: Engine, settings: Settings
) -> None:  # type: ignore[no-untyped-def]
    Jobs(engine=engine, settings=settings, steps=[]).tick(NOW - timedelta(seconds=30))
    with engine.begin() as conn:
        conn.execute(
            insert(backups).values(
                started_at=NOW - timedelta(hours=1),
                finished_at=NOW - timedelta(minutes=59),
                status="ok",
                file="/backups/ondeck-1.db",
                bytes=4096,
            )
        )
    page = dash.get("/system").text
    assert "jobs@" in page and "ticking" in page and "30 s ago" in page
    assert "/backups/ondeck-1.db" in page and "4.0 KiB" in page
    assert engine.dialect.name in page
    assert f"schema version</dt><dd>{HEAD}" in page
    assert "UTC" in page


def test_system_says_when_no_jobs_process_ever_ticked(dash) -> None:  # type: ignore[no-untyped-def]
    assert "No jobs process has ever ticked" in dash.get("/system").text


def test_unknown_pages_get_an_html_404_and_api_paths_keep_json(dash) -> None:  # type: ignore[no-untyped-def]
    page = dash.get("/no-such-page")
    assert page.status_code == 404 and "text/html" in page.headers["content-type"]
    api = dash.get("/api/v1/no-such-thing")
    assert api.status_code == 404 and api.json()["error"]["code"] == "not_found"


def test_today_scopes_to_a_project_like_the_context(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    _task(engine, "ops work", project="ops")
    _task(engine, "home work", project="home")
    _task(engine, "anyone's work")
    page = dash.get("/?project=ops").text
    assert "ops work" in page and "anyone&#39;s work" in page and "home work" not in page
    assert '<option value="ops" selected>' in page
    assert dash.get("/?project=not%20valid").status_code == 422


def test_a_database_that_cannot_be_reached_gives_a_page_not_a_traceback(settings, at) -> None:  # type: ignore[no-untyped-def]
    from fastapi.testclient import TestClient

    from ondeck.db.engine import make_engine
    from ondeck.entrypoints.api.app import create_app

    dead = make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")
    with TestClient(create_app(settings, dead)) as client:
        page = client.get("/tasks")
        api = client.get("/api/v1/tasks")
    assert page.status_code == 503 and "text/html" in page.headers["content-type"]
    assert "database" in page.text
    assert api.status_code == 503 and api.json()["error"]["code"] == "unavailable"
