"""Recall's word index on both stores: kept current by every writer (ondeck's services, raw
SQL, a program without ondeck's functions, rows written before the index existed), emptied
by the jobs tick, consistent under concurrent folds on PostgreSQL; common words read best
first give exactly what reading everything gives; and both stores give the same items in
the same order with the same scores."""

from __future__ import annotations

import random
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Connection, Engine, create_engine, delete, func, select, text, update
from sqlalchemy.engine import make_url

from conftest import NOW, drop_pg_database, new_pg_database
from ondeck.core.memory import Scope
from ondeck.db.engine import make_engine
from ondeck.db.migrate import upgrade
from ondeck.db.recall_tables import (
    recall_corpus,
    recall_pending,
    recall_postings,
    recall_terms,
)
from ondeck.db.tables import session_compactions, sessions, tasks
from ondeck.memory import notes as notes_svc
from ondeck.memory import recall_index, recall_rank
from ondeck.memory.recall import parse_query, recall
from ondeck.memory.recall_sources import Reader
from ondeck.work import backlog, backlog_leases
from support.memory import add_compaction, make_session
from support.recall_counts import assert_counts_true, term_docs

UTC = ZoneInfo("UTC")
DAY = NOW.date()
POOL = Scope.of(sides_on=False)
BENCH = Path(__file__).resolve().parents[2] / "bench"


def add(conn: Connection, body: str, at=NOW, **kw: Any) -> Any:  # type: ignore[no-untyped-def]
    values: dict[str, Any] = {"side": None, "project": None, "sides": {}, "zone": UTC}
    values.update(kw)
    return notes_svc.add_note(conn, at, text=body, actor="t", **values)


def refs_in(conn: Connection, query: str, scope: Scope = POOL, **kw: Any) -> list[str]:
    return [h.ref for h in recall(conn, query, scope, DAY, **kw).hits]


def refs(engine: Engine, query: str, **kw: Any) -> list[str]:
    with engine.begin() as conn:
        return refs_in(conn, query, **kw)


# --- every writer -------------------------------------------------------------------------------


def test_every_writer_keeps_the_index_current(engine: Engine) -> None:
    with engine.begin() as conn:
        note = add(conn, "rotate the certificates")
        task = backlog.create_task(conn, NOW, title="renew the domain", body="by June", actor="t")
        sid = make_session(conn, NOW, external_id="s-1", last_word="watching the logs")
        cid = add_compaction(conn, sid, NOW, "summary: tuned the vacuum")
        # Found inside the same transaction, before commit.
        assert refs_in(conn, "certificates") == [f"note {note.id}"]
        assert refs_in(conn, "june") == [f"task {task.id}"]
        assert refs_in(conn, "watching") == [f"session {sid}"]
        assert refs_in(conn, "vacuum") == [f"session {sid} compaction {cid}"]
    with engine.begin() as conn:
        notes_svc.edit_note(conn, NOW, note.id, text="archive the invoices", zone=UTC, actor="t")
        moved = {"title": "move the registrar", "body": "by July"}
        conn.execute(update(tasks).where(tasks.c.id == task.id).values(**moved))
        conn.execute(update(sessions).where(sessions.c.id == sid).values(last_word="배포 끝"))
        conn.execute(
            update(session_compactions)
            .where(session_compactions.c.id == cid)
            .values(summary="요약: 캐시 정리")
        )
        assert refs_in(conn, "invoices") == [f"note {note.id}"]
    for gone in ("certificates", "june", "domain", "watching", "vacuum"):
        assert refs(engine, gone) == [], gone
    assert refs(engine, "july") == refs(engine, "registrar") == [f"task {task.id}"]
    assert refs(engine, "배포") == [f"session {sid}"]
    assert refs(engine, "캐시") == [f"session {sid} compaction {cid}"]
    # A claim changes neither title nor body: the task stays found, once.
    with engine.begin() as conn:
        backlog_leases.claim_task(conn, NOW, task.id, owner="me", duration="1h", actor="t")
    assert refs(engine, "registrar") == [f"task {task.id}"]
    with engine.begin() as conn:
        notes_svc.delete_note(conn, NOW, note.id, actor="t")
        conn.execute(delete(tasks).where(tasks.c.id == task.id))
        conn.execute(update(sessions).where(sessions.c.id == sid).values(last_word=None))
        conn.execute(delete(session_compactions).where(session_compactions.c.id == cid))
        for query in ("invoices", "registrar", "배포", "캐시"):
            assert refs_in(conn, query) == [], query
        assert conn.execute(select(func.count()).select_from(recall_postings)).scalar_one() == 0
        assert_counts_true(conn)


def test_a_write_by_another_program_is_queued_and_found_by_the_next_recall(
    engine: Engine, db_url: str
) -> None:
    """The triggers queue a row whoever writes it: the sqlite3 module without any function of
    ondeck's, or plain SQL on PostgreSQL."""
    at = "2026-06-15 09:00:00+00:00"
    statements = (
        f"INSERT INTO tasks (title, body, created_at, updated_at) "
        f"VALUES ('배포 자동화', 'the canary rollout', '{at}', '{at}')",
        "UPDATE tasks SET body = 'the blue rollout' WHERE title = '배포 자동화'",
    )
    if engine.dialect.name == "sqlite":
        raw = sqlite3.connect(make_url(db_url).database or "", isolation_level=None)
        try:
            raw.execute(statements[0])
        finally:
            raw.close()
    else:
        plain = create_engine(db_url)
        with plain.begin() as conn:
            conn.execute(text(statements[0]))
        plain.dispose()
    with engine.connect() as conn:
        assert recall_index.waiting(conn)
    (task_ref,) = refs(engine, "배포")
    assert refs(engine, "canary") == [task_ref]
    with engine.begin() as conn:
        conn.execute(text(statements[1]))
    assert refs(engine, "canary") == [] and refs(engine, "blue") == [task_ref]


def test_rows_written_before_the_index_existed_are_indexed_by_the_upgrade(
    empty_url: str,
) -> None:
    engine = make_engine(empty_url)
    try:
        upgrade(engine, "0011")
        with engine.begin() as conn:
            note = add(conn, "the lease grace is six hours")
            task = backlog.create_task(conn, NOW, title="배포 스크립트 정리", actor="t")
            sid = make_session(conn, NOW, external_id="old-1", last_word="watching the WAL")
            cid = add_compaction(conn, sid, NOW, "요약: 캐시 만료")
        upgrade(engine)
        with engine.connect() as conn:
            assert recall_index.waiting(conn)
        assert recall_index.recall_step(engine, NOW, None) == {"indexed": 4}
        with engine.connect() as conn:
            assert not recall_index.waiting(conn)
            assert_counts_true(conn)
        assert refs(engine, "grace") == [f"note {note.id}"]
        assert refs(engine, "배포") == [f"task {task.id}"]
        assert refs(engine, "wal") == [f"session {sid}"]
        assert refs(engine, "캐시") == [f"session {sid} compaction {cid}"]
    finally:
        engine.dispose()


def test_ondeck_db_upgrade_indexes_what_it_queued_and_says_how_many(
    empty_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from ondeck.entrypoints.cli import run

    engine = make_engine(empty_url)
    try:
        upgrade(engine, "0011")
        with engine.begin() as conn:
            add(conn, "배포 창구는 목요일")
            backlog.create_task(conn, NOW, title="rotate the deploy keys", actor="t")
    finally:
        engine.dispose()
    assert run(["--db", empty_url, "db", "upgrade"]) == 0
    out = capsys.readouterr().out
    assert "schema 0011 -> " in out and out.rstrip().endswith("; 2 items indexed for recall")
    engine = make_engine(empty_url)
    try:
        with engine.connect() as conn:
            assert not recall_index.waiting(conn), "indexed by the upgrade, not left queued"
    finally:
        engine.dispose()
    assert run(["--db", empty_url, "db", "upgrade"]) == 0
    assert "indexed" not in capsys.readouterr().out, "nothing new: nothing said"


def test_a_fold_gives_back_the_planner_setting_it_changed(engine: Engine) -> None:
    """The fold plans its statements afresh on PostgreSQL; the recall that follows in the
    same transaction plans as the server is set to."""
    if engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL's planner setting")
    with engine.begin() as conn:
        before = conn.exec_driver_sql("SHOW plan_cache_mode").scalar_one()
        add(conn, "배포 창구는 목요일")
        assert recall_index.fold(conn) == 1
        assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar_one() == before
        assert recall_index.fold(conn) == 0  # nothing queued: nothing set


def test_the_jobs_tick_recall_step_empties_the_queue(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recall_index, "BATCH", 2)  # several transactions
    with engine.begin() as conn:
        made = [add(conn, f"standup notes {n}") for n in range(5)]
        assert recall_index.waiting(conn)
    assert recall_index.recall_step(engine, NOW, None) == {"indexed": 5}
    with engine.connect() as conn:
        assert not recall_index.waiting(conn)
        assert conn.execute(select(func.count()).select_from(recall_pending)).scalar_one() == 0
        assert_counts_true(conn)
    assert recall_index.recall_step(engine, NOW, None) == {"indexed": 0}
    assert len(refs(engine, "standup")) == len(made)


# --- best first, exactly ------------------------------------------------------------------------

VOCABULARY = [
    *("cache", "restart", "backup", "lease", "token", "vault", "schedule", "billing"),
    *("invoice", "migration", "배포", "캐시", "백업", "일정", "인증", "로그", "장애", "서버"),
]


def _brute_force(conn: Connection, query: str, scope: Scope, room: int) -> list[tuple[str, float]]:
    """BM25 over every item in scope, from the postings as stored: what recall must give."""
    p, t = recall_postings, recall_terms
    held: dict[int, dict[str, int]] = defaultdict(dict)
    docs: dict[str, int] = {}
    for term, item_id, impact in conn.execute(
        select(t.c.term, p.c.item_id, p.c.impact)
        .join(p, p.c.term_id == t.c.id)
        .where(p.c.source == "notes")
    ):
        held[int(item_id)][term] = int(impact)
        if term not in docs:
            docs[term] = term_docs(conn, term)
    corpus = int(conn.execute(select(func.sum(recall_corpus.c.docs))).scalar_one())
    weight = {term: recall_rank.weight_of(n, corpus) for term, n in docs.items()}
    reader = Reader(scope=scope, day=DAY, kinds=(), include_all=False, lost_before=None)
    visible = reader.hits(conn, {"notes": sorted(held)})
    scored = []
    for (_source, item_id), hit in visible.items():
        total, any_word = 0.0, False
        for word in parse_query(query).words:
            share = 0.0
            for choice in word.choices:
                here = [w for w in choice if w in held[item_id]]
                if here:
                    got = sum(weight[w] * held[item_id][w] for w in here) / len(choice)
                    share = max(share, got)
            total += share
            any_word = any_word or share > 0
        if any_word:
            scored.append((-total, -hit.at.timestamp(), -item_id, total / recall_rank.SCALE))
    scored.sort()
    return [(f"note {-neg_id}", total) for _s, _at, neg_id, total in scored[:room]]


@pytest.mark.parametrize(
    ("seed", "summed"),
    # Several terms summed in SQL (the corpus is small), and read best first as common ones.
    [(7, recall_rank.SUMMED), (11, recall_rank.SUMMED), (7, 0), (11, 0)],
)
def test_common_words_read_best_first_give_what_reading_everything_gives(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, seed: int, summed: int
) -> None:
    monkeypatch.setattr(recall_rank, "SUMMED", summed)
    monkeypatch.setattr(recall_rank, "WHOLE", 24)
    monkeypatch.setattr(recall_rank, "FIRST", 4)
    monkeypatch.setattr(recall_rank, "DEEPER", 2)
    rng = random.Random(seed)
    with engine.begin() as conn:
        for n in range(260):
            words = rng.choices(VOCABULARY, k=rng.randint(1, 9))
            if rng.random() < 0.9:
                words.insert(rng.randint(0, len(words)), "deploy" if n % 2 else "deployed")
            if n % 17 == 0:
                words = ["deploy", "cache"]  # identical texts: ties
            project = "api" if rng.random() < 0.1 else "web"
            add(
                conn,
                " ".join(words),
                at=NOW + timedelta(minutes=rng.randint(0, 50)),
                project=project,
            )
    narrow = Scope.of(sides_on=False, project="api")
    queries = ("deploy", "deploy cache", "deploying backup vault", "배포 deploy", "캐시 로그 장애")
    with engine.begin() as conn:
        recall(conn, "deploy", POOL, DAY)  # indexes
        assert term_docs(conn, "deploy") > recall_rank.WHOLE * 4
        for scope in (narrow, POOL):
            for query in queries:
                for room in (1, 5, 20):
                    got = recall(conn, query, scope, DAY, limit=room).hits
                    want = _brute_force(conn, query, scope, room)
                    assert [(h.ref, h.score) for h in got] == want, (query, scope, room)


# --- PostgreSQL: folds at once ----------------------------------------------------------------


def test_concurrent_folds_neither_deadlock_nor_count_twice(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite writes one transaction at a time")
    workers, rounds = 4, 4
    errors: list[BaseException] = []

    def work(n: int, barrier: threading.Barrier) -> None:
        rng = random.Random(n)
        try:
            with engine.begin() as conn:
                for k in range(5):
                    words = [*rng.sample(VOCABULARY, 4), f"only{n}x{k}", "shared"]
                    add(conn, " ".join(words))
                barrier.wait(timeout=30)
                recall(conn, "shared cache", POOL, DAY)  # folds what it wrote, at once
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    for r in range(rounds):
        barrier = threading.Barrier(workers)
        threads = [
            threading.Thread(target=work, args=(r * workers + n, barrier)) for n in range(workers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads), "a fold hangs"
        assert not errors, errors
    with engine.begin() as conn:
        assert len(refs_in(conn, "shared", limit=200)) == workers * rounds * 5
        assert_counts_true(conn)


# --- both stores alike --------------------------------------------------------------------------


@pytest.fixture
def both_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Engine, Engine]]:
    """A migrated SQLite file and a migrated PostgreSQL database, in the same test."""
    import shutil

    path = tmp_path / "alike.db"
    shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
    admin = request.getfixturevalue("pg_admin_url")
    url = new_pg_database(admin, request.getfixturevalue("pg_template"))
    lite, pg = make_engine(f"sqlite:///{path}"), make_engine(url)
    try:
        yield lite, pg
    finally:
        lite.dispose()
        pg.dispose()
        drop_pg_database(admin, url)


def test_both_stores_give_the_same_items_in_the_same_order_with_the_same_scores(
    both_stores: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quality bench's year of notes (bench/recall_quality_data.py) in each store, and
    each of its questions asked of both; a small reading depth makes common words read best
    first, deeper and deeper."""
    monkeypatch.syspath_prepend(str(BENCH))
    from recall_quality import QUESTIONS, write_notes

    monkeypatch.setattr(recall_rank, "WHOLE", 16)
    monkeypatch.setattr(recall_rank, "FIRST", 4)
    answers = []
    for engine in both_stores:
        write_notes(engine)
        with engine.begin() as conn:
            for n in range(6):  # identical texts: ties broken alike
                add(conn, "배포 deploy 캐시 cache", at=NOW + timedelta(minutes=n % 2))
        got: dict[str, list[tuple[str, float, tuple[Any, ...]]]] = {}
        with engine.begin() as conn:
            for question, _answers in QUESTIONS:
                found = recall(conn, question, POOL, DAY, limit=10).hits
                got[question] = [(h.ref, h.score, h.matched) for h in found]
            for extra in ("배포 캐시", "deploy cache", '"make release"', "v2.1.331", "Ärger"):
                found = recall(conn, extra, POOL, DAY, limit=10).hits
                got[extra] = [(h.ref, h.score, h.matched) for h in found]
        answers.append(got)
    lite, pg = answers
    assert sum(1 for hits in lite.values() if hits) > len(QUESTIONS) * 0.9
    for question in lite:
        assert lite[question] == pg[question], question
