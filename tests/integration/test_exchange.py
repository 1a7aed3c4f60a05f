"""Export and import on both stores: export then import into an empty database gives the
same notes (every status, link, session, time); a second import changes nothing; a bad
line refuses the whole file; Markdown files per project hold what is true."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, func, select

from conftest import NOW, drop_pg_database, new_pg_database
from ondeck.core.errors import InvalidInput
from ondeck.db.engine import make_engine
from ondeck.db.tables import events, notes, sessions
from ondeck.services import exchange
from ondeck.services import notes as svc
from support.memory import make_session

UTC = ZoneInfo("UTC")
SIDES = {"work": ["/w"], "personal": ["/p"]}


@pytest.fixture
def empty(engine: Engine, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A second migrated, empty database on the same store."""
    if engine.dialect.name == "postgresql":
        admin = request.getfixturevalue("pg_admin_url")
        url = new_pg_database(admin, request.getfixturevalue("pg_template"))
        other = make_engine(url)
        yield other
        other.dispose()
        drop_pg_database(admin, url)
        return
    path = tmp_path / "empty.db"
    shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
    other = make_engine(f"sqlite:///{path}")
    yield other
    other.dispose()


def fill(engine: Engine) -> None:
    with engine.begin() as conn:

        def add(text: str, **kw: Any) -> Any:
            values = {"side": "work", "project": "api", "sides": SIDES, "zone": UTC}
            values.update(kw)
            return svc.add_note(conn, NOW, text=text, actor="t", **values)

        first = add("배포는 금요일", kind="decision", pinned=True)
        _, second = svc.supersede(conn, NOW, first.id, "배포는 목요일", zone=UTC, actor="t")
        svc.supersede(conn, NOW, second.id, "배포는 수요일", zone=UTC, actor="t")
        wrong = add("the grace is 6 h", project=None)
        svc.mark_wrong(conn, NOW, wrong.id, "12 h since May", actor="t")
        add("staging down", expires_on=NOW.date() + timedelta(days=3))
        add("개인: 치과 화요일", side="personal", project=None, pinned=True)
        gone = add("deleted one")
        svc.delete_note(conn, NOW, gone.id, actor="t")
        sid = make_session(
            conn, NOW, external_id="s-1", side="work", project="api", branch="main",
            cwd="/w/api", start_head="a" * 40, commits=[("b" * 40, "fix")],
        )  # fmt: skip
        svc.write_handoff(conn, NOW, sid, "next: 내보내기\n- then import", head="b" * 40,
                          branch="main", actor="t")  # fmt: skip
        inbox = make_session(conn, NOW, external_id="s-unc", unclassified=True)
        svc.write_handoff(conn, NOW, inbox, "unfiled", actor="t")
        off = make_session(conn, NOW, external_id="s-off", side="work", capture=False)
        assert off


def snapshot(engine: Engine) -> list[dict[str, Any]]:
    """Every note as stored, ids and links replaced by what they point at."""
    with engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(select(notes).order_by(notes.c.id))]
        sessions_by_id = dict(conn.execute(select(sessions.c.id, sessions.c.external_id)).all())
    texts = {r["id"]: r["text"] for r in rows}
    out = []
    for r in rows:
        r = dict(r)
        r["supersedes"] = texts.get(r["supersedes"])
        r["superseded_by"] = texts.get(r["superseded_by"])
        r["session_id"] = sessions_by_id.get(r["session_id"])
        del r["id"]
        out.append(r)
    return out


def export(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(exchange.export_jsonl(conn, NOW))


def test_export_then_import_into_an_empty_database_gives_the_same_notes(
    engine: Engine, empty: Engine
) -> None:
    fill(engine)
    lines = export(engine)
    assert json.loads(lines[0])["format"] == "ondeck-memory"
    with empty.begin() as conn:
        result = exchange.import_jsonl(conn, NOW, lines, sides=SIDES, actor="cli")
    assert (result.notes, result.sessions, result.skipped) == (8, 2, 0)
    assert snapshot(empty) == snapshot(engine)
    with empty.connect() as conn:
        session_rows = {r.external_id: r for r in conn.execute(select(sessions))}
        imported = conn.execute(
            select(func.count()).select_from(events).where(events.c.kind == "note.imported")
        ).scalar_one()
    with engine.connect() as conn:
        original = {r.external_id: r for r in conn.execute(select(sessions))}
    for name in ("s-1", "s-unc"):
        mine, theirs = dict(session_rows[name]._mapping), dict(original[name]._mapping)
        mine.pop("id"), theirs.pop("id")
        assert mine == theirs, name
    assert imported == 8
    # The copy exports the same (but for the ids, and the end line's digest of them).
    again = [json.loads(line) for line in export(empty)[1:-1]]
    first = [json.loads(line) for line in lines[1:-1]]
    links = ("id", "supersedes", "superseded_by", "session_id")

    def strip(d: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if k not in links}

    assert [strip(d) for d in again] == [strip(d) for d in first]


def test_a_second_import_changes_nothing(engine: Engine, empty: Engine) -> None:
    fill(engine)
    lines = export(engine)
    with empty.begin() as conn:
        exchange.import_jsonl(conn, NOW, lines, sides=SIDES, actor="cli")
    before = snapshot(empty)
    with empty.begin() as conn:
        result = exchange.import_jsonl(conn, NOW, lines, sides=SIDES, actor="cli")
    assert (result.notes, result.sessions, result.skipped) == (0, 0, 8)
    assert snapshot(empty) == before


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda d: {**d, "kind": "memo"}, "line 7"),
        (lambda d: {**d, "text": ""}, "must not be empty"),
        (lambda d: {**d, "side": "hobby"}, "not configured"),
        (lambda d: {**d, "created_at": "2026-06-15T09:00:00"}, "no UTC offset"),
        (lambda d: {**d, "origin": "robot"}, "origin"),
        (lambda d: {**d, "status": "wrong", "status_reason": None}, "status_reason"),
        (lambda d: {**d, "surprise": 1}, "unknown field"),
        (lambda d: {**d, "head": "--upload-pack=x"}, "head"),
        (lambda d: {**d, "id": "7"}, "whole number"),
    ],
)
def test_one_bad_line_refuses_the_whole_file(
    engine: Engine, empty: Engine, change: Any, words: str
) -> None:
    fill(engine)
    lines = export(engine)
    note_lines = [i for i, line in enumerate(lines) if '"type": "note"' in line]
    target = note_lines[3]
    lines[target] = json.dumps(change(json.loads(lines[target])), ensure_ascii=False) + "\n"
    with empty.begin() as conn, pytest.raises(InvalidInput, match=words) as caught:
        exchange.import_jsonl(conn, NOW, lines, sides=SIDES, actor="cli")
    assert f"line {target + 1}" in str(caught.value)
    with empty.connect() as conn:
        assert conn.execute(select(func.count()).select_from(notes)).scalar_one() == 0


@pytest.mark.parametrize(
    "lines, words",
    [
        ([], "empty"),
        (['{"format": "something", "version": 1}\n'], "not an ondeck memory export"),
        (["not json\n"], "line 1: not JSON"),
        (["[1, 2]\n"], "not a JSON object"),
        (['{"format": "ondeck-memory", "version": 1}\n', '{"type": "other"}\n'], "line 2"),
    ],
)
def test_files_that_are_not_exports_are_refused(
    empty: Engine, lines: list[str], words: str
) -> None:
    with empty.begin() as conn, pytest.raises(InvalidInput, match=words):
        exchange.import_jsonl(conn, NOW, lines, sides=SIDES, actor="cli")


def test_markdown_one_file_per_project_with_what_is_true(engine: Engine) -> None:
    fill(engine)
    with engine.connect() as conn:
        files = exchange.export_markdown(conn, NOW, UTC)
    assert set(files) == {
        Path("work/api.md"),
        Path("personal/_side-wide.md"),
    }
    api = files[Path("work/api.md")]
    assert "## Decisions" in api and "배포는 수요일" in api
    assert "배포는 금요일" not in api and "배포는 목요일" not in api
    assert (
        "## Latest handoff" in api and "> next: 내보내기" in api and "at main bbbbbbbbbbbb" in api
    )
    assert "the grace" not in "".join(files.values()), "wrong notes are not true"
    assert "unfiled" not in "".join(files.values()), "the inbox belongs to no side"
    with engine.connect() as conn:
        only_work = exchange.export_markdown(conn, NOW, UTC, side="work")
    assert set(only_work) == {Path("work/api.md")}
