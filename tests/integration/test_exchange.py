"""Export and import on both stores: export then import into an empty database gives the
same notes (every status, link, session, time); a second import changes nothing; a bad
line refuses the whole file; Markdown files per project hold what is true."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, func, select

from conftest import NOW
from ondeck.core.errors import InvalidInput
from ondeck.db.tables import events, notes, sessions
from ondeck.memory import exchange
from ondeck.memory import notes as svc
from support.memory import make_session

UTC = ZoneInfo("UTC")
SIDES = {"work": ["/w"], "personal": ["/p"]}


@pytest.fixture
def empty(second_engine: Engine) -> Engine:
    """An empty database on the same store."""
    return second_engine


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


# --- an export says where it ends and what it holds ------------------------------------


def _import(engine: Engine, lines: list[str]) -> exchange.Imported:
    with engine.begin() as conn:
        return exchange.import_jsonl(conn, NOW, lines, sides=SIDES, actor="cli")


def _note_count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(notes)).scalar_one())


def test_an_export_ends_with_its_counts_and_the_digest_of_what_came_before(
    engine: Engine,
) -> None:
    import hashlib

    fill(engine)
    lines = export(engine)
    end = json.loads(lines[-1])
    assert end == {
        "type": "end",
        "sessions": 2,
        "notes": 8,
        "sha256": hashlib.sha256("".join(lines[:-1]).encode()).hexdigest(),
    }
    assert json.loads(lines[0])["version"] == 2


def test_an_export_cut_at_any_line_break_is_refused_and_nothing_is_written(
    engine: Engine, empty: Engine
) -> None:
    fill(engine)
    lines = export(engine)
    for keep in range(1, len(lines)):
        with pytest.raises(InvalidInput, match="incomplete export") as caught:
            _import(empty, lines[:keep])
        assert f"after line {keep} without its end line" in str(caught.value)
    assert _note_count(empty) == 0


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda ls: [*ls[:3], *ls[4:]], "counts notes: 8"),  # a line taken out of the middle
        (lambda ls: [*ls[:4], ls[4].replace("배포", "배표"), *ls[5:]], "changed after it was"),
        (lambda ls: [*ls, ls[3]], "after the end line"),
        (lambda ls: [ls[0].replace('"version": 2', '"version": 3'), *ls[1:]], "newer ondeck"),
    ],
)
def test_a_damaged_export_is_refused_with_the_reason(
    engine: Engine, empty: Engine, damage: Any, words: str
) -> None:
    fill(engine)
    with pytest.raises(InvalidInput, match=words):
        _import(empty, damage(export(engine)))
    assert _note_count(empty) == 0


def test_an_export_of_version_1_has_no_end_line_and_is_read_with_a_warning(
    engine: Engine, empty: Engine
) -> None:
    fill(engine)
    lines = export(engine)
    old = [lines[0].replace('"version": 2', '"version": 1'), *lines[1:-1]]
    result = _import(empty, old)
    assert (result.notes, result.sessions) == (8, 2)
    assert result.warnings and "cannot be checked" in result.warnings[0]
    assert snapshot(empty) == snapshot(engine)


def test_a_version_1_export_cut_before_the_current_note_is_refused(
    engine: Engine, empty: Engine
) -> None:
    """A cut of two superseded notes, the last one pointing to no replacement, the
    current decision silently dropped."""
    fill(engine)
    lines = [json.loads(line) for line in export(engine)[:-1]]
    lines[0]["version"] = 1
    current = next(
        i for i, d in enumerate(lines) if d.get("text") == "배포는 수요일" and d["type"] == "note"
    )
    cut = [json.dumps(d, ensure_ascii=False) + "\n" for d in lines[:current]]
    with pytest.raises(InvalidInput, match=r"superseded by note .*not in the file"):
        _import(empty, cut)
    assert _note_count(empty) == 0


# --- an import brings the changes of what it already has -------------------------------

LATER = NOW + timedelta(hours=2)


def _first_state(engine: Engine) -> dict[str, int]:
    with engine.begin() as conn:
        pinned = svc.add_note(
            conn, NOW, text="배포는 금요일", kind="decision", pinned=True, side="work",
            project="api", sides=SIDES, zone=UTC, actor="t",
        )  # fmt: skip
        plain = svc.add_note(
            conn, NOW + timedelta(seconds=1), text="the grace is 6 h", side="work",
            project="api", sides=SIDES, zone=UTC, actor="t",
        )  # fmt: skip
        sid = make_session(conn, NOW, external_id="s-h", side="work", project="api")
        handoff, _ = svc.write_handoff(conn, NOW, sid, "next: the old plan", actor="t")
    return {"pinned": pinned.id, "plain": plain.id, "handoff": handoff.id, "session": sid}


def _later_state(engine: Engine, ids: dict[str, int]) -> None:
    with engine.begin() as conn:
        svc.supersede(conn, LATER, ids["pinned"], "배포는 목요일", zone=UTC, actor="t")
        svc.mark_wrong(conn, LATER, ids["plain"], "12 h since May", actor="t")
        svc.write_handoff(conn, LATER, ids["session"], "next: 새 계획", actor="t")


def _by_text(engine: Engine) -> dict[str, dict[str, Any]]:
    return {row["text"]: row for row in snapshot(engine)}


def test_an_import_brings_the_changes_of_the_notes_it_already_has(
    engine: Engine, empty: Engine
) -> None:
    """Back up (here: the first state, imported), supersede, mark wrong, rewrite the
    handoff, export; the database with the first state imports the export."""
    ids = _first_state(engine)
    before = export(engine)
    _later_state(engine, ids)
    after = export(engine)
    _import(empty, before)
    result = _import(empty, after)
    assert (result.notes, result.updated, result.skipped) == (1, 3, 0)
    assert snapshot(empty) == snapshot(engine)
    notes_now = _by_text(empty)
    old = notes_now["배포는 금요일"]
    assert (old["status"], old["pinned"], old["superseded_by"]) == (
        "superseded",
        False,
        "배포는 목요일",
    )
    assert notes_now["배포는 목요일"]["pinned"] and notes_now["배포는 목요일"]["supersedes"]
    assert notes_now["the grace is 6 h"]["status"] == "wrong"
    assert "next: the old plan" not in notes_now and notes_now["next: 새 계획"]["kind"] == "handoff"
    with empty.connect() as conn:
        changed = conn.execute(
            select(events.c.details).where(events.c.kind == "note.import_updated")
        ).scalars()
        fields = sorted(sorted(d["changed"]) for d in changed)
    assert fields == [
        ["pinned", "status", "status_at", "superseded_by"],
        ["status", "status_at", "status_reason"],
        ["text"],
    ]
    again = _import(empty, after)
    assert (again.notes, again.updated, again.skipped) == (0, 0, 4)


def test_an_older_export_leaves_what_changed_here_since(engine: Engine, empty: Engine) -> None:
    ids = _first_state(engine)
    before = export(engine)
    _later_state(engine, ids)
    result = _import(engine, before)
    assert (result.notes, result.updated, result.skipped) == (0, 0, 3)
    assert _by_text(engine)["the grace is 6 h"]["status"] == "wrong"


def test_an_import_that_would_contradict_a_chain_is_refused_listing_the_conflicts(
    engine: Engine, empty: Engine
) -> None:
    """Here the decision was superseded one way, in the file another: one replacement
    each, never two; nothing is imported."""
    from ondeck.core.errors import Conflict

    ids = _first_state(engine)
    before = export(engine)
    _later_state(engine, ids)
    after = export(engine)
    _import(empty, before)
    with empty.begin() as conn:
        pinned = conn.execute(select(notes.c.id).where(notes.c.text == "배포는 금요일")).scalar()
        svc.supersede(conn, LATER + timedelta(hours=1), pinned, "배포는 월요일", zone=UTC,
                      actor="t")  # fmt: skip
    snap = snapshot(empty)
    with pytest.raises(Conflict) as caught:
        _import(empty, after)
    assert "nothing was imported" in str(caught.value)
    assert "already replaces" in str(caught.value)
    assert snapshot(empty) == snap


def test_an_edited_text_is_brought_to_the_note_not_added_beside_it(
    engine: Engine, empty: Engine
) -> None:
    ids = _first_state(engine)
    _import(empty, export(engine))
    with engine.begin() as conn:
        svc.edit_note(conn, LATER, ids["plain"], text="the grace is 12 h", zone=UTC, actor="t")
    result = _import(empty, export(engine))
    assert (result.notes, result.updated) == (0, 1)
    texts = sorted(_by_text(empty))
    assert "the grace is 6 h" not in texts and "the grace is 12 h" in texts
    assert snapshot(empty) == snapshot(engine)


def test_a_note_deleted_here_comes_back_with_its_links(engine: Engine) -> None:
    """Deleting a superseded note cut its replacement's link (SET NULL); importing the
    export makes it again, linked both ways, and the rest stays as it was."""
    fill(engine)
    lines = export(engine)
    before = snapshot(engine)
    with engine.begin() as conn:
        first = conn.execute(select(notes.c.id).where(notes.c.text == "배포는 금요일")).scalar()
        svc.delete_note(conn, NOW, first, actor="t")
    result = _import(engine, lines)
    assert (result.notes, result.updated, result.skipped) == (1, 0, 7)
    after = snapshot(engine)
    assert sorted(after, key=str) == sorted(before, key=str)
