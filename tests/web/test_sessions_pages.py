"""The Sessions page (the inbox first, status badges, filters), a session's page (timeline,
classification and disagreements, tasks, commits, files, last word), moving one, and the
spool on the System page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from ondeck.db.tables import events
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import load_settings
from ondeck.sessions import records as svc
from ondeck.sessions.capture import spool
from ondeck.sessions.classify import Facts, Marker, Rules
from ondeck.sessions.intake import apply_record
from ondeck.work import backlog, backlog_leases
from support.hooks import SESSION_ID, later, record
from web.conftest import NOW, Dashboard

RULES = Rules(sides={"work": ["/w"], "own": ["/o"]})


def apply(engine: Engine, rec: dict[str, Any]) -> None:
    with engine.begin() as conn:
        apply_record(conn, rec["at"], rec)


@pytest.fixture
def sided(engine: Engine, db_url: str, tmp_path: Path) -> Iterator[Dashboard]:
    settings = load_settings(
        database_url=db_url,
        tz="UTC",
        data_dir=tmp_path / "data",
        sides={"work": ["/w"], "own": ["/o"]},
    )
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        yield Dashboard(c)


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr class="session [^"]*">', html)


def test_the_inbox_comes_first_with_badges_and_a_move_takes_a_session_out(
    sided: Dashboard, engine: Engine
) -> None:
    apply(engine, record("start", NOW, rules=RULES, facts=Facts(cwd="/w/site"), session_id="a" * 8))
    apply(engine, record("start", NOW, rules=RULES, facts=Facts(cwd="/tmp/x"), session_id="b" * 8))
    off = Facts(cwd="/o/diary", marker=Marker(path="/o/diary/.ondeck.toml", capture=False))
    apply(engine, record("start", NOW, rules=RULES, facts=off, session_id="c" * 8))
    page = sided.get("/sessions")
    assert page.status_code == 200
    html = page.text
    assert html.index("Inbox: 1 unclassified") < html.index('<form method="get" action="/sessions"')
    assert 'class="badge badge-unclassified"' in html and 'class="badge badge-capture-off"' in html
    assert 'class="badge badge-open"' in html
    with engine.connect() as conn:
        inboxed = svc.find_session(conn, "b" * 8)
    answer = sided.post(
        f"/sessions/{inboxed.id}/move",
        {"side": "own", "project": "notes", "next": f"/sessions/{inboxed.id}"},
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text
    assert "Inbox" not in sided.get("/sessions").text
    shown = sided.get(f"/sessions/{inboxed.id}").text
    assert "moved" in shown and "by moved" in shown
    with engine.connect() as conn:
        actor = conn.execute(
            select(events.c.actor).where(events.c.kind == "session.moved")
        ).scalar_one()
    assert actor == "dashboard"
    filtered = sided.get("/sessions", params={"side": "work"}).text
    assert len(_rows(filtered)) == 1 and "Inbox" not in filtered


def test_a_refused_move_says_why_and_changes_nothing(sided: Dashboard, engine: Engine) -> None:
    apply(engine, record("start", NOW, rules=RULES, facts=Facts(cwd="/tmp/x")))
    with engine.connect() as conn:
        s = svc.find_session(conn, SESSION_ID)
    answer = sided.post(f"/sessions/{s.id}/move", {"side": "hobby", "project": ""})
    assert answer.status_code == 422
    assert "is not configured" in answer.text
    without_csrf = sided.client.post(f"/sessions/{s.id}/move", data={"side": "own"})
    assert without_csrf.status_code == 403
    with engine.connect() as conn:
        assert svc.find_session(conn, SESSION_ID).unclassified


def test_a_session_page_shows_what_the_session_did(dash: Dashboard, engine: Engine) -> None:
    apply(engine, record("start", NOW))
    with engine.begin() as conn:
        task = backlog.create_task(conn, NOW, title="retry uploads", actor="cli")
        backlog_leases.claim_task(conn, NOW, task.id, owner=f"claude:{SESSION_ID}", actor="cli")
    apply(engine, record("stop", later(NOW, minutes=1), last_assistant_message="끝 <b>bold</b>"))
    apply(engine, record("compact", later(NOW, minutes=2)))
    apply(engine, record("end", later(NOW, minutes=3)))
    with engine.connect() as conn:
        s = svc.find_session(conn, SESSION_ID)
    html = dash.get(f"/sessions/{s.id}").text
    timeline = html[html.index("<h2>Timeline</h2>") : html.index("<h2>Tasks touched</h2>")]
    assert [m for m in re.findall(r"<strong>(\w[\w ]*)</strong>", timeline)] == [
        "started",
        "compacted",
        "ended",
    ]
    assert "retry on the upload job" in timeline
    assert f'<a href="/tasks/{task.id}">task {task.id}</a> retry uploads' in html
    assert "claimed" in html and "released" in html
    assert "끝 &lt;b&gt;bold&lt;/b&gt;" in html, "escaped"
    assert "not read yet" not in html


def test_a_missing_or_bad_session_is_a_page_not_a_500(dash: Dashboard) -> None:
    assert dash.get("/sessions/999").status_code == 404
    assert dash.get("/sessions/nope").status_code == 404
    odd = dash.get("/sessions", params={"project": "no project!"})
    assert odd.status_code == 422 and "not valid" in odd.text
    assert dash.get("/sessions", params={"status": "weird"}).status_code == 200


def test_the_system_page_shows_a_stuck_spool_with_its_count(
    dash: Dashboard, settings: Any, at: time_machine.Coordinates
) -> None:
    assert "Empty: every hook event reached the database." in dash.get("/system").text
    made = record("stop", NOW)
    spool.append(settings.spool_dir, {**made, "at": made["at"].isoformat()})
    assert "1 event waiting since" in dash.get("/system").text
    at.move_to(later(NOW, minutes=11))
    assert "<strong>Stuck:</strong> 1 event waiting" in dash.get("/system").text


def test_a_session_silent_past_the_grace_is_lost_on_the_pages_before_any_tick(
    sided: Dashboard, engine: Engine
) -> None:
    """Lost is decided as the page reads the session (the grace is
    12 h; this dashboard's clock is NOW, the session was last heard 3 days before)."""
    old = record("start", later(NOW, days=-3), rules=RULES, facts=Facts(cwd="/w/site"))
    apply(engine, old)
    html = sided.get("/sessions").text
    assert '<tr class="session session-lost">' in html
    assert 'class="badge badge-lost"' in html and 'class="badge badge-open"' not in html
    assert "session-lost" in sided.get("/sessions", params={"status": "lost"}).text
    assert "session-lost" not in sided.get("/sessions", params={"status": "open"}).text
    with engine.connect() as conn:
        number = svc.find_session(conn, SESSION_ID).id
    assert 'class="badge badge-lost"' in sided.get(f"/sessions/{number}").text


def test_the_sessions_page_filters_imported_sessions(
    dash: Dashboard, engine: Engine, tmp_path: Path
) -> None:
    from ondeck.host.quick_settings import HookConfig
    from ondeck.sessions.session_import import import_sessions

    apply(engine, record("start", NOW, session_id="h" * 8))  # one the hooks recorded
    folder = tmp_path / "projects" / "-w"
    folder.mkdir(parents=True)
    sid = "0b7e3f52-8c1d-4e6a-9f20-5d4c3b2a1908"
    said = (NOW - timedelta(days=30)).isoformat()
    answer = {"role": "assistant", "content": [{"type": "text", "text": "가져온 답"}]}
    line = {
        "type": "assistant",
        "sessionId": sid,
        "timestamp": said,
        "version": "2.1.332",
        "cwd": "/w/site",
        "message": answer,
    }
    (folder / f"{sid}.jsonl").write_text(json.dumps(line, ensure_ascii=False) + "\n")
    report = import_sessions(
        engine, NOW, agent="claude-code", folder=str(tmp_path / "projects"),
        config=HookConfig(), zone=UTC,
    )  # fmt: skip
    assert report.sessions == 1
    page = dash.get("/sessions?status=imported")
    assert page.status_code == 200
    assert len(_rows(page.text)) == 1 and "가져온 답" in page.text
    assert 'class="badge badge-imported"' in page.text
    assert len(_rows(dash.get("/sessions").text)) == 2
    with engine.connect() as conn:
        imported = svc.find_session(conn, sid)
    shown = dash.get(f"/sessions/{imported.id}").text
    assert "session import" in shown and "claude-code 2.1.332" in shown


def test_the_sessions_page_shows_and_filters_the_agent(dash: Dashboard, engine: Engine) -> None:
    codex = "01a235aa-7bea-7882-ad24-c72bd6cd8948"
    apply(engine, record("start", NOW))
    apply(engine, record("start", later(NOW, minutes=1), session_id=codex, ondeck_agent="codex"))
    html = dash.get("/sessions").text
    assert '<td class="agent">codex</td>' in html and '<td class="agent">claude-code</td>' in html
    only = dash.get("/sessions", params={"agent": "codex"}).text
    assert len(_rows(only)) == 1 and '<td class="agent">codex</td>' in only
    assert '<option value="codex" selected>' in only
    # An agent ondeck does not know filters nothing (as an unknown status does).
    assert len(_rows(dash.get("/sessions", params={"agent": "cursor"}).text)) == 2
