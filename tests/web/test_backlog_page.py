"""Backlog: filters, add, done, cancel, forced release with its confirm step, edit, the task
page's events; plain forms (303 back) and htmx (the row comes back); refusals as a flash."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import Engine, func, select

from ondeck.core.models import TaskStatus
from ondeck.db.tables import tasks
from ondeck.system import events
from ondeck.work import backlog

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
HX = {"HX-Request": "true"}


def _task(engine: Engine, title: str, **fields: object) -> backlog.Task:
    with engine.begin() as conn:
        return backlog.create_task(conn, NOW, title=title, actor="cli", **fields)  # type: ignore[arg-type]


def _get(engine: Engine, task_id: int) -> backlog.Task:
    with engine.connect() as conn:
        return backlog.get_task(conn, task_id)


def _count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(tasks)).scalar_one())


def _kinds(engine: Engine, task_id: int) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        found = events.list_events(conn, subject=f"task:{task_id}")
    return [(e.kind, e.actor) for e in reversed(found)]


def test_it_adds_a_task_and_redirects_back_with_a_message(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    response = dash.post(
        "/tasks",
        {
            "title": "Renew the certificate",
            "priority": "1",
            "due_on": "2026-06-20",
            "project": "ops",
            "body": "before it expires",
            "next": "/tasks?status=all",
        },
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/tasks?status=all"
    page = dash.get(response.headers["location"]).text
    assert "added task 1: Renew the certificate" in dash.flash(page)
    # The message is shown once: a reload does not repeat it.
    assert dash.flash(dash.get("/tasks?status=all").text) == ""
    task = _get(engine, 1)
    assert (task.priority, task.due_on, task.project) == (1, date(2026, 6, 20), "ops")
    assert _kinds(engine, 1) == [("task.created", "dashboard")]


def test_a_refused_task_shows_the_reason_keeps_the_form_and_writes_nothing(dash, engine) -> None:  # type: ignore[no-untyped-def]
    response = dash.post("/tasks", {"title": "Keep me", "priority": "12"})
    assert response.status_code == 422
    assert "priority 12 is out of range" in dash.flash(response.text)
    assert 'value="Keep me"' in response.text
    assert _count(engine) == 0
    bad_date = dash.post("/tasks", {"title": "x", "due_on": "2026-02-30"})
    assert bad_date.status_code == 422 and "is not a date" in dash.flash(bad_date.text)
    empty = dash.post("/tasks", {"title": "   "})
    assert empty.status_code == 422 and "title must not be empty" in dash.flash(empty.text)
    assert _count(engine) == 0


def test_user_text_is_escaped_everywhere(dash, engine: Engine, settings) -> None:  # type: ignore[no-untyped-def]
    evil = "<script>alert(1)</script>"
    task = _task(engine, evil, body=evil)
    from ondeck.work import schedules

    with engine.begin() as conn:
        schedules.create_schedule(conn, NOW, settings.zone, title=evil, rule="daily", body=evil)
        backlog.claim_task(conn, NOW, task.id, owner=evil, actor="cli")
    for path in ("/", "/tasks", f"/tasks/{task.id}", "/schedules", "/schedules/1", "/activity"):
        page = dash.get(path).text
        assert "<script>alert" not in page, path
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page, path


def test_the_list_filters_by_status_and_project(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    _task(engine, "ops ready", project="ops")
    done = _task(engine, "ops done", project="ops")
    _task(engine, "home ready", project="home")
    with engine.begin() as conn:
        backlog.complete_task(conn, NOW, done.id, token=None, actor="cli")
    default = dash.get("/tasks").text
    assert "ops ready" in default and "home ready" in default and "ops done" not in default
    only_done = dash.get("/tasks?status=DONE").text
    assert "ops done" in only_done and "ops ready" not in only_done
    ops = dash.get("/tasks?status=all&project=ops").text
    assert "ops ready" in ops and "ops done" in ops and "home ready" not in ops
    assert '<option value="home"' in ops  # the project filter offers what exists


def test_the_list_is_paginated(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    with engine.begin() as conn:
        for n in range(120):
            backlog.create_task(conn, NOW, title=f"item {n:03d}", actor="cli")
    first = dash.get("/tasks").text
    assert first.count('<tr id="task-') == 50
    assert "1–50 of 120" in first
    third = dash.get("/tasks?page=3").text
    assert third.count('<tr id="task-') == 20 and "item 119" in third


def test_done_and_cancel_with_plain_forms(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    one, two = _task(engine, "one"), _task(engine, "two")
    done = dash.post(f"/tasks/{one.id}/done", {"next": "/tasks"}, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/tasks"
    cancelled = dash.post(f"/tasks/{two.id}/cancel", {"next": "/tasks"}, follow_redirects=False)
    assert cancelled.status_code == 303
    assert _get(engine, one.id).status is TaskStatus.DONE
    assert _get(engine, two.id).status is TaskStatus.CANCELLED
    assert _kinds(engine, one.id)[-1] == ("task.completed", "dashboard")
    assert _kinds(engine, two.id)[-1] == ("task.cancelled", "dashboard")


def test_done_with_htmx_returns_the_row_and_an_out_of_band_flash(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    task = _task(engine, "quick one")
    response = dash.post(f"/tasks/{task.id}/done", {"next": "/tasks"}, headers=HX)
    assert response.status_code == 200
    assert response.text.lstrip().startswith(f'<tr id="task-{task.id}" class="status-done">')
    assert 'hx-swap-oob="innerHTML"' in response.text and "done: quick one" in response.text


def test_a_refused_action_is_a_flash_not_a_500(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    task = _task(engine, "held")
    with engine.begin() as conn:
        backlog.claim_task(conn, NOW, task.id, owner="cli:alice", actor="cli")
    plain = dash.post(f"/tasks/{task.id}/cancel", {"next": "/tasks"})
    assert plain.status_code == 409
    assert "release it first" in dash.flash(plain.text)
    htmx = dash.post(f"/tasks/{task.id}/done", {"next": "/tasks"}, headers=HX)
    assert htmx.status_code == 409
    assert htmx.headers["hx-retarget"] == "#flash"
    assert "lease token" in htmx.text
    missing = dash.post("/tasks/999/done", {"next": "/tasks"})
    assert missing.status_code == 404 and "no task 999" in missing.text
    huge = dash.post(f"/tasks/{2**70}/done", {"next": "/tasks"})
    assert huge.status_code == 422
    assert _get(engine, task.id).status is TaskStatus.RUNNING


def test_release_asks_first_then_forces(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    task = _task(engine, "stuck")
    with engine.begin() as conn:
        backlog.claim_task(conn, NOW, task.id, owner="cli:alice", duration="2h", actor="cli")
    row = dash.get("/tasks").text
    link = re.search(rf'href="(/tasks/{task.id}/release\?confirm=1[^"]*)"', row)
    assert link, "a RUNNING row offers release through the confirm page"
    confirm = dash.get(link.group(1).replace("&amp;", "&"))
    assert confirm.status_code == 200
    assert "cli:alice" in confirm.text and 'name="force" value="1"' in confirm.text
    assert _get(engine, task.id).status is TaskStatus.RUNNING  # asking changed nothing
    unforced = dash.post(f"/tasks/{task.id}/release", {"next": "/tasks"})
    assert unforced.status_code == 200 and 'name="force" value="1"' in unforced.text
    assert _get(engine, task.id).status is TaskStatus.RUNNING
    forced = dash.post(
        f"/tasks/{task.id}/release", {"force": "1", "next": "/tasks"}, follow_redirects=False
    )
    assert forced.status_code == 303
    released = _get(engine, task.id)
    assert released.status is TaskStatus.READY and released.lease_owner is None
    with engine.connect() as conn:
        event = events.list_events(conn, subject=f"task:{task.id}", kind="task.released")[0]
    assert event.actor == "dashboard" and event.details["force"] is True
    assert event.details["owner"] == "cli:alice"


def test_the_task_page_edits_and_shows_its_events(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    task = _task(engine, "draft", project="ops", due_on=date(2026, 6, 20))
    page = dash.get(f"/tasks/{task.id}").text
    assert "task.created" in page and 'value="draft"' in page
    response = dash.post(
        f"/tasks/{task.id}/edit",
        {"title": "final", "body": "", "priority": "0", "due_on": "", "project": "ops"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    edited = _get(engine, task.id)
    assert (edited.title, edited.priority, edited.due_on, edited.project) == (
        "final",
        0,
        None,
        "ops",
    )
    with engine.connect() as conn:
        event = events.list_events(conn, subject=f"task:{task.id}", kind="task.edited")[0]
    # Only what changed is recorded (the project was sent unchanged).
    assert event.details["changes"] == {"title": "final", "priority": 0, "due_on": None}
    after = dash.get(response.headers["location"]).text
    assert "saved task" in dash.flash(after) and "task.edited" in after
    same = dash.post(
        f"/tasks/{task.id}/edit",
        {"title": "final", "body": "", "priority": "0", "due_on": "", "project": "ops"},
    )
    assert "nothing changed" in dash.flash(same.text)


def test_a_refused_edit_keeps_what_was_typed(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    task = _task(engine, "draft")
    response = dash.post(
        f"/tasks/{task.id}/edit",
        {"title": "better", "priority": "2", "project": "not a project!"},
    )
    assert response.status_code == 422
    assert "project 'not a project!' is not valid" in dash.flash(response.text).replace(
        "&#39;", "'"
    )
    assert 'value="better"' in response.text
    assert _get(engine, task.id).title == "draft"


def test_running_rows_show_holder_and_lease_end(dash, engine: Engine, at) -> None:  # type: ignore[no-untyped-def]
    task = _task(engine, "busy")
    with engine.begin() as conn:
        backlog.claim_task(conn, NOW, task.id, owner="cli:alice", duration="30m", actor="cli")
    row = dash.get("/tasks").text
    assert "cli:alice" in row and "lease until" in row and "(in 30 min)" in row
    at.move_to(NOW + timedelta(hours=1))
    later = dash.get("/tasks").text
    assert "EXPIRED 30 min ago, holder silent; due for release at" in later
    assert "(in 6 h), but the jobs loop has never ticked: nothing will release it" in later
