"""The Memory page: search (htmx fragment and the plain GET form), the notes of one side
with pin, supersede, mark wrong and expire, adding one; refusals as flashes, never a 500;
a session's page shows its handoff."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import load_settings
from ondeck.memory import notes as notes_svc
from support.memory import make_session
from web.conftest import NOW, Dashboard

UTC = ZoneInfo("UTC")
SIDES = {"work": ["/w"], "own": ["/o"]}
HTMX = {"HX-Request": "true"}


@pytest.fixture
def sided(engine: Engine, db_url: str, tmp_path: Path) -> Iterator[Dashboard]:
    settings = load_settings(database_url=db_url, tz="UTC", data_dir=tmp_path / "d", sides=SIDES)
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as c:
        yield Dashboard(c)


def add(engine: Engine, text: str, side: str = "work", **kw):  # type: ignore[no-untyped-def]
    with engine.begin() as conn:
        return notes_svc.add_note(
            conn, NOW, text=text, side=side, project=kw.pop("project", None), sides=SIDES,
            zone=UTC, actor="t", **kw,
        )  # fmt: skip


def test_the_page_searches_one_side_and_the_fragment_answers_typing(
    sided: Dashboard, engine: Engine
) -> None:
    work = add(engine, "금요일에 배포했다")
    add(engine, "배포 of my blog", side="own")
    # The first side in order (own) unless another is chosen.
    assert "Notes of side own" in sided.get("/memory").text
    page = sided.get("/memory", params={"q": "배포", "side": "work"})
    assert page.status_code == 200
    assert f'href="#note-{work.id}">note {work.id}</a>' in page.text
    assert "my blog" not in page.text.split('id="results"')[1].split("</section>")[0]
    assert 'hx-get="/memory/search"' in page.text and 'action="/memory"' in page.text
    fragment = sided.get("/memory/search", params={"q": "배포", "side": "own"}, headers=HTMX)
    assert fragment.status_code == 200 and "<html" not in fragment.text
    assert "my blog" in fragment.text and "금요일" not in fragment.text
    common = sided.get("/memory/search", params={"q": "the", "side": "work"}, headers=HTMX)
    assert common.status_code == 200 and "nothing to look for" in common.text
    # Without JavaScript the same URL gives the whole page.
    whole = sided.get("/memory/search", params={"q": "배포", "side": "work"})
    assert "<html" in whole.text and "금요일" in whole.text


def test_pin_expire_wrong_and_supersede_from_the_page(sided: Dashboard, engine: Engine) -> None:
    note = add(engine, "deploys on Thursday")
    row = sided.post(f"/memory/notes/{note.id}/pin", {"next": "/memory"}, headers=HTMX)
    assert row.status_code == 200 and f'id="note-{note.id}"' in row.text
    assert ">pinned</span>" in row.text and "pinned note" in row.text
    wrong = sided.post(f"/memory/notes/{note.id}/wrong", {"reason": ""}, headers=HTMX)
    assert wrong.status_code == 422 and "reason" in wrong.text
    other = add(engine, "grace is 6 h")
    marked = sided.post(
        f"/memory/notes/{other.id}/wrong",
        {"reason": "12 h now", "next": "/memory"},
        follow_redirects=False,
    )
    assert marked.status_code == 303
    page = sided.get("/memory", params={"all": "1", "side": "work"})
    assert "WRONG: 12 h now" in page.text
    assert "grace is 6 h" not in sided.get("/memory", params={"side": "work"}).text
    replaced = sided.post(
        f"/memory/notes/{note.id}/supersede",
        {"text": "deploys on Wednesday", "next": "/memory"},
        follow_redirects=False,
    )
    assert replaced.status_code == 303
    page = sided.get("/memory", params={"side": "work"}).text
    assert "deploys on Wednesday" in page and "deploys on Thursday" not in page
    third = add(engine, "staging is down")
    expired = sided.post(f"/memory/notes/{third.id}/expire", {"next": "/memory"}, headers=HTMX)
    assert "EXPIRED" in expired.text
    again = sided.post(f"/memory/notes/{third.id}/expire", {"next": "/memory"}, headers=HTMX)
    assert again.status_code == 409 and "expired" in again.text


def test_adding_a_note_and_its_refusals(sided: Dashboard) -> None:
    made = sided.post(
        "/memory/notes",
        {"text": "use WAL", "kind": "decision", "side": "work", "project": "api",
         "pinned": "1", "next": "/memory?side=work"},
        follow_redirects=False,
    )  # fmt: skip
    assert made.status_code == 303
    page = sided.get("/memory", params={"side": "work"}).text
    assert "use WAL" in page and "decision" in page
    for data, words in (
        ({"text": "", "side": "work"}, "must not be empty"),
        ({"text": "x", "side": "nope"}, "not configured"),
        ({"text": "x", "side": "work", "kind": "memo"}, "not one of"),
        ({"text": "x", "side": "work", "expires_on": "2020-01-01"}, "before today"),
        ({"text": "x", "side": "work", "expires_on": "June"}, "not a date"),
        ({"text": "x", "side": "work", "project": "a b"}, "not valid"),
    ):
        answer = sided.post("/memory/notes", data)
        assert answer.status_code == 422 and words in answer.text, data
    assert sided.get("/memory", params={"project": "a b"}).status_code == 422
    assert sided.post("/memory/notes/99999/pin", {}).status_code == 404


def test_a_session_page_shows_its_handoff(sided: Dashboard, engine: Engine) -> None:
    with engine.begin() as conn:
        sid = make_session(conn, NOW, external_id="s-with", side="work", project="api")
        notes_svc.write_handoff(conn, NOW, sid, "next: the export", head="c" * 40, actor="t")
        bare = make_session(conn, NOW, external_id="s-without", side="work", project="api")
    page = sided.get(f"/sessions/{sid}").text
    assert "<h2>Handoff</h2>" in page and "next: the export" in page and "cccccccccccc" in page
    assert "This session left no handoff." in sided.get(f"/sessions/{bare}").text
    assert re.search(r'<a href="/memory"[^>]*>Memory</a>', sided.get("/memory").text)
