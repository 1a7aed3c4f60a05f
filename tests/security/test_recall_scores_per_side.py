"""Recall's scores count only the caller's side (issue 35): every score, `matched` weight and
`--explain` line a reader sees is the same whether or not another side (or the inbox) holds
the words, on both stores; an item moved to another side, by any door, takes its counts with
it; the CLI's `--explain` says the same, run as a real subprocess.

The gate is one: the counts are kept per part (an item's side, '' for the inbox) and a
reader's weights read its own part (memory/recall_rank.py `_stats`, memory/recall_sources.py
`Reader.parts`).
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Connection, Engine, select, text

from conftest import NOW
from ondeck.core.memory import Scope
from ondeck.db.recall_tables import recall_corpus
from ondeck.db.tables import notes
from ondeck.entrypoints.cli.recall import lines_of
from ondeck.memory import notes as notes_svc
from ondeck.memory.notes_changes import edit_note
from ondeck.memory.recall import recall
from ondeck.sessions.records_move import move_session
from ondeck.work import backlog
from support.hooks import ONDECK
from support.memory import add_compaction, make_session
from support.recall_counts import assert_counts_true, term_docs

UTC = ZoneInfo("UTC")
DAY = NOW.date()
SIDES = {"work": ["/w"], "personal": ["/p"]}
WORK = Scope.of(sides_on=True, side="work")
PERSONAL = Scope.of(sides_on=True, side="personal")
INBOX = Scope.of(sides_on=True, inbox=True)
POOL = Scope.of(sides_on=False)
READERS = {"work": WORK, "personal": PERSONAL, "": INBOX}
# English and Korean, a word alone and with others, a phrase held as typed, an identifier.
QUERIES = (
    "divorce",
    "이혼",
    "이혼 서류",
    "divorce lawyer 이혼",
    '"divorce lawyer"',
    "divorce-2026 settlement",
)


def _note(conn: Connection, body: str, side: str | None, minutes: int = 0) -> int:
    made = notes_svc.add_note(
        conn,
        NOW + timedelta(minutes=minutes),
        text=body,
        side=side,
        project=None,
        sides=SIDES if side else {},
        zone=UTC,
        actor="t",
    )
    return made.id


def _fill(conn: Connection, part: str, tag: str) -> None:
    """Items holding the words in `part` (a side, or '' for the inbox): notes, a session's
    last word and its compaction summary, and a task (a side's only: an inbox task is found
    by nobody's recall)."""
    side = part or None
    for n in range(5):
        _note(conn, f"divorce lawyer {n} 이혼 서류 정리 divorce-2026 settlement {tag}", side, n)
    _note(conn, f"이혼 상담 {tag}", side, 7)
    session = make_session(
        conn,
        NOW,
        external_id=f"{tag}-{part or 'inbox'}",
        side=side,
        unclassified=side is None,
        last_word=f"이혼 서류 보냄 divorce {tag}",
    )
    add_compaction(conn, session, NOW, f"divorce lawyer called; 이혼 합의 {tag}")
    if side:
        backlog.create_task(conn, NOW, title=f"file the divorce papers {tag}", side=side, actor="t")


def _seen(conn: Connection, scope: Scope) -> list[Any]:
    """What a reader sees of each query: the hits as the API, the CLI's --json and the MCP
    tool show them (scores and matched weights), and the CLI's --explain lines."""
    shown = []
    for query in QUERIES:
        found = recall(conn, query, scope, DAY, limit=50).to_json(UTC, NOW + timedelta(hours=1))
        shown.append((query, found["results"], lines_of(found, explain=True)))
    return shown


def _weights(conn: Connection, scope: Scope) -> set[float]:
    found = recall(conn, "divorce", scope, DAY).to_json(UTC, NOW)
    return {m["weight"] for hit in found["results"] for m in hit["matched"]}


@pytest.mark.parametrize("target", ["personal", "work", ""])
def test_a_reader_s_scores_are_the_same_whether_or_not_another_part_holds_the_words(
    engine: Engine, target: str
) -> None:
    with engine.begin() as conn:
        for part in READERS:
            _fill(conn, part, "before")
            # Items without the words too: the corpus's size is a count like the others.
            _note(conn, f"the weekly review {part}", part or None)
        before = {part: _seen(conn, scope) for part, scope in READERS.items()}
        pooled = _weights(conn, POOL)
        assert all(before[part][0][1] for part in READERS), "every reader finds the word"
    with engine.begin() as conn:
        _fill(conn, target, "added")
        for n in range(20):
            _note(conn, f"unrelated {n}", target or None)
        after = {part: _seen(conn, scope) for part, scope in READERS.items()}
        # The words weigh differently over the whole store (no sides) and in the part that
        # gained them: the counts did change; only the other parts' readers see none of it.
        assert _weights(conn, POOL) != pooled
    for part in READERS:
        if part == target:
            assert after[part] != before[part]
        else:
            assert after[part] == before[part], (target, part)


def test_a_move_through_every_door_takes_its_counts_to_the_other_part(engine: Engine) -> None:
    """A note's side changed, a task's, a session moved (its last word, compaction summary
    and notes follow), the inbox resolved, and a row changed by plain SQL: the part it left
    counts one item fewer holding 이혼, the part it went to one more, and every count is
    that of the items where they are now."""
    with engine.begin() as conn:
        note = _note(conn, "이혼 서류 준비", "personal")
        _note(conn, "이혼 상담 예약", "personal")
        _note(conn, "주간 회의 work", "work")
        task = backlog.create_task(conn, NOW, title="이혼 변호사 연락", side="personal", actor="t")
        session = make_session(
            conn, NOW, external_id="moved", side="personal", last_word="이혼 합의 끝"
        )
        add_compaction(conn, session, NOW, "이혼 요약")
        session_note = notes_svc.add_note(
            conn,
            NOW,
            text="이혼 메모",
            side="personal",
            project=None,
            sides=SIDES,
            zone=UTC,
            actor="t",
            session_id=session,
        ).id
        inbox = make_session(conn, NOW, external_id="inbox", unclassified=True, last_word="이혼 ?")
        raw = _note(conn, "이혼 기록", "personal")
        recall(conn, "이혼", WORK, DAY)  # indexes

    def docs(conn: Connection) -> tuple[int, int, int]:
        return tuple(term_docs(conn, "이혼", (p,)) for p in ("personal", "work", ""))  # type: ignore[return-value]

    def moved(name: str, door: Any, by: tuple[int, int, int]) -> None:
        with engine.begin() as conn:
            was = docs(conn)
            door(conn)
            recall(conn, "이혼", WORK, DAY)  # folds what the door queued
            now = docs(conn)
            assert tuple(n - w for n, w in zip(now, was, strict=True)) == by, name
            assert_counts_true(conn)

    moved(
        "a note's side",
        lambda c: edit_note(
            c, NOW, note, side="work", sides=set(SIDES), zone=UTC, actor="t", scope=PERSONAL
        ),
        (-1, 1, 0),
    )
    moved(
        "a task's side",
        lambda c: backlog.edit_task(c, NOW, task.id, side="work", actor="t"),
        (-1, 1, 0),
    )
    # The session's last word, its compaction summary and its note: three items.
    moved(
        "session move",
        lambda c: move_session(c, NOW, session, side="work", project=None, sides=SIDES, actor="t"),
        (-3, 3, 0),
    )
    moved(
        "the inbox resolved",
        lambda c: move_session(c, NOW, inbox, side="work", project=None, sides=SIDES, actor="t"),
        (0, 1, -1),
    )
    moved(
        "plain SQL",
        lambda c: c.execute(text("UPDATE notes SET side = 'work' WHERE id = :id"), {"id": raw}),
        (-1, 1, 0),
    )
    with engine.begin() as conn:
        assert conn.execute(select(notes.c.side).where(notes.c.id == session_note)).scalar() == (
            "work"
        )
        assert docs(conn) == (1, 7, 0)
        corpus = dict(conn.execute(select(recall_corpus.c.part, recall_corpus.c.docs)).all())
        assert {p: int(n) for p, n in corpus.items()} == {"personal": 1, "work": 8, "": 0}


def _ondeck(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ONDECK_TZ": "UTC", "ONDECK_SIDES": json.dumps(SIDES)}
    return subprocess.run(
        [ONDECK, "--db", db_url, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=Path("/"),
        check=False,
    )


def _why(db_url: str, query: str) -> list[str]:
    done = _ondeck(db_url, "recall", query, "--side", "work", "--explain")
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line.strip().startswith("why:")]


def test_the_command_line_explain_is_the_same_whatever_the_other_side_holds(db_url: str) -> None:
    for body in ("이혼 서류 정리 divorce", "divorce lawyer 이혼", "weekly review"):
        done = _ondeck(db_url, "note", "add", body, "--side", "work")
        assert done.returncode == 0, done.stderr
    before = {q: _why(db_url, q) for q in ("이혼", "divorce", "이혼 divorce")}
    assert all(before.values())
    for n in range(5):
        done = _ondeck(db_url, "note", "add", f"이혼 divorce {n}", "--side", "personal")
        assert done.returncode == 0, done.stderr
    assert {q: _why(db_url, q) for q in before} == before
