"""Recall on both stores: Korean two-syllable queries, English substrings and paths, over
notes, handoffs, compaction summaries, last words and tasks; kept in step by the store
within the transaction; ranked by match then recency; wrong, superseded and expired items
only when asked and labelled; sides never mixed; the indexes really used."""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, delete, text, update

from conftest import NOW
from ondeck.core.errors import InvalidInput
from ondeck.core.memory import Scope
from ondeck.db.tables import sessions, tasks
from ondeck.memory import notes as notes_svc
from ondeck.memory.recall import recall
from ondeck.work import backlog, backlog_leases
from support.memory import add_compaction, make_session

UTC = ZoneInfo("UTC")
DAY = NOW.date()
POOL = Scope(sides_on=False)
SIDES = {"work": ["/w"], "personal": ["/p"]}
WORK = Scope(sides_on=True, side="work")
PERSONAL = Scope(sides_on=True, side="personal")


def note(engine: Engine, body: str, at=NOW, **kw):  # type: ignore[no-untyped-def]
    values = {"side": None, "project": None, "sides": {}, "zone": UTC, "actor": "t"}
    values.update(kw)
    with engine.begin() as conn:
        return notes_svc.add_note(conn, at, text=body, **values)


def refs(engine: Engine, query: str, scope: Scope = POOL, **kw) -> list[str]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return [h.ref for h in recall(conn, query, scope, DAY, **kw).hits]


def test_a_korean_two_syllable_query_finds_it_inside_words_everywhere(engine: Engine) -> None:
    a = note(engine, "금요일에 배포했다", at=NOW)
    b = note(engine, "다음 주 배포 일정 확인", at=NOW + timedelta(minutes=1))
    c = note(engine, "재배포는 내일", at=NOW + timedelta(minutes=2))
    note(engine, "배가 고프다 포도", at=NOW + timedelta(minutes=3))  # 배 and 포, not 배포
    with engine.begin() as conn:
        sid = make_session(conn, NOW, external_id="s-ko", last_word="서버 배포 완료했습니다")
        cid = add_compaction(conn, sid, NOW + timedelta(minutes=4), "요약: 배포 스크립트 수정")
        task = backlog.create_task(conn, NOW, title="배포 자동화", actor="t")
    found = refs(engine, "배포")
    assert set(found) == {
        f"note {a.id}",
        f"note {b.id}",
        f"note {c.id}",
        f"session {sid}",
        f"session {sid} compaction {cid}",
        f"task {task.id}",
    }
    assert refs(engine, "배포했") == [f"note {a.id}"]
    assert refs(engine, "일정", kinds=["note"]) == [f"note {b.id}"]


def test_english_substrings_paths_and_short_terms(engine: Engine) -> None:
    deploy = note(engine, "We redeployed the API after the outage")
    path = note(engine, "the bug is in src/ondeck/db/engine.py, line 40")
    with engine.begin() as conn:
        task = backlog.create_task(
            conn, NOW, title="Fix WAL checkpoint", body="see ondeck/db/engine.py", actor="t"
        )
    assert refs(engine, "ploy") == [f"note {deploy.id}"]
    assert refs(engine, "DEPLOYED") == [f"note {deploy.id}"], "case folded"
    assert set(refs(engine, "ondeck/db/engine.py")) == {f"note {path.id}", f"task {task.id}"}
    assert set(refs(engine, "db/")) == {f"note {path.id}", f"task {task.id}"}
    assert refs(engine, "AP") == [f"note {deploy.id}"], "two letters inside a word"
    assert refs(engine, "checkpoint") == [f"task {task.id}"]


def test_every_term_must_match_and_the_whole_query_ranks_first(engine: Engine) -> None:
    older_whole = note(engine, "the lease grace period is long", at=NOW)
    newer_apart = note(engine, "grace for every lease", at=NOW + timedelta(hours=1))
    note(engine, "only the lease", at=NOW + timedelta(hours=2))
    assert refs(engine, "lease grace") == [f"note {older_whole.id}", f"note {newer_apart.id}"]
    with engine.connect() as conn:
        hits = recall(conn, "lease grace", POOL, DAY).hits
    assert [h.whole for h in hits] == [True, False]
    assert refs(engine, '"grace period" lease') == [f"note {older_whole.id}"]


def test_recency_orders_within_a_rank_and_the_limit_says_there_is_more(engine: Engine) -> None:
    made = [note(engine, f"standup {n}", at=NOW + timedelta(minutes=n)) for n in range(5)]
    with engine.connect() as conn:
        result = recall(conn, "standup", POOL, DAY, limit=3)
    assert [h.id for h in result.hits] == [m.id for m in reversed(made)][:3]
    assert result.more


def test_superseded_wrong_and_expired_only_with_all_and_labelled(engine: Engine) -> None:
    old = note(engine, "backups run at 03:00")
    wrong = note(engine, "backups are kept 7 days")
    expiring = note(engine, "backups paused this week", expires_on=DAY)
    with engine.begin() as conn:
        _, new = notes_svc.supersede(conn, NOW, old.id, "backups run at 04:00", zone=UTC, actor="t")
        notes_svc.mark_wrong(conn, NOW, wrong.id, "14 days since May", actor="t")
    tomorrow = DAY + timedelta(days=1)
    with engine.connect() as conn:
        shown = recall(conn, "backups", POOL, tomorrow)
        everything = recall(conn, "backups", POOL, tomorrow, include_all=True)
    assert [h.id for h in shown.hits] == [new.id]
    labels = {h.id: (h.status, h.true, h.label) for h in everything.hits}
    assert labels[new.id] == ("active", True, None)
    assert labels[old.id][:2] == ("superseded", False)
    assert labels[old.id][2] == f"SUPERSEDED by note {new.id}: not true any more"
    assert labels[wrong.id] == ("wrong", False, "WRONG: 14 days since May")
    assert labels[expiring.id][:2] == ("expired", False), "past its date before the tick"


def test_the_store_keeps_the_index_in_step_within_the_transaction(engine: Engine) -> None:
    with engine.begin() as conn:
        task = backlog.create_task(conn, NOW, title="rotate the certificates", actor="t")
        sid = make_session(conn, NOW, external_id="s-1", last_word="watching the logs")
        # Seen inside the same transaction, before commit.
        assert [h.ref for h in recall(conn, "certif", POOL, DAY).hits] == [f"task {task.id}"]
    with engine.begin() as conn:
        conn.execute(update(tasks).where(tasks.c.id == task.id).values(title="renew the domain"))
        conn.execute(update(sessions).where(sessions.c.id == sid).values(last_word="배포 끝"))
    assert refs(engine, "certif") == []
    assert refs(engine, "domain") == [f"task {task.id}"]
    assert refs(engine, "watching") == [] and refs(engine, "배포") == [f"session {sid}"]
    # A claim changes neither title nor body: the row stays findable, once.
    with engine.begin() as conn:
        backlog_leases.claim_task(conn, NOW, task.id, owner="me", duration="1h", actor="t")
    assert refs(engine, "domain") == [f"task {task.id}"]
    with engine.begin() as conn:
        conn.execute(update(sessions).where(sessions.c.id == sid).values(last_word=None))
        conn.execute(delete(tasks).where(tasks.c.id == task.id))
    assert refs(engine, "배포") == [] and refs(engine, "domain") == []


def test_sides_never_mix_in_recall(engine: Engine) -> None:
    work = note(engine, "deploy window is 10:00", side="work", sides=SIDES)
    mine = note(engine, "deploy the blog on Sunday", side="personal", sides=SIDES)
    with engine.begin() as conn:
        w = make_session(
            conn, NOW, external_id="w1", side="work", project="api", last_word="deploy done"
        )
        p = make_session(
            conn, NOW, external_id="p1", side="personal", project="blog", last_word="deploy ok"
        )
        u = make_session(conn, NOW, external_id="u1", unclassified=True, last_word="deploy ?")
        add_compaction(conn, p, NOW, "personal deploy summary")
        mixed = make_session(conn, NOW, external_id="m1", side="personal", project="api")
        api = backlog.create_task(
            conn, NOW, title="deploy api", project="api", side="work", actor="t"
        )
        blog = backlog.create_task(
            conn, NOW, title="deploy blog", project="blog", side="personal", actor="t"
        )
        # A work task of a project whose sessions are all personal is still the work side's.
        lawyer = backlog.create_task(
            conn, NOW, title="deploy the lawyer's letter", project="blog", side="work", actor="t"
        )
        loose = backlog.create_task(conn, NOW, title="deploy something", actor="t")  # inbox
    assert mixed and api and loose
    found = set(refs(engine, "deploy", WORK))
    assert found == {f"note {work.id}", f"session {w}", f"task {api.id}", f"task {lawyer.id}"}
    found = set(refs(engine, "deploy", PERSONAL))
    assert f"note {mine.id}" in found and f"task {blog.id}" in found and f"session {p}" in found
    assert not any(
        r in found for r in (f"note {work.id}", f"session {w}", f"session {u}", f"task {lawyer.id}")
    )
    assert f"task {loose.id}" not in found
    assert set(refs(engine, "deploy", Scope(sides_on=True, inbox=True))) == {f"session {u}"}
    with engine.connect() as conn, pytest.raises(InvalidInput, match="give a side"):
        recall(conn, "deploy", Scope(sides_on=True), DAY)


@pytest.mark.parametrize(
    "query",
    ['"', '""', 'a"b', "%", "_x", "\\", "NEAR(a b)", "x* OR y", "-foo", "AND OR NOT", "^ab", ":)"],
)
def test_query_syntax_is_never_the_stores_own(engine: Engine, query: str) -> None:
    """Characters that mean something to FTS5 or LIKE are matched as text, never an error."""
    note(engine, '50% of x* OR y: NEAR(a b) -foo AND OR NOT ^ab :) a"b \\ _x')
    with engine.connect() as conn:
        try:
            result = recall(conn, query, POOL, DAY)
        except InvalidInput as exc:
            assert "at least one term" in str(exc) or "give something" in str(exc)
            return
    assert len(result.hits) == 1


def test_bad_queries_are_refused_in_one_line(engine: Engine) -> None:
    with engine.connect() as conn:
        for bad, reason in (
            ("", "give something"),
            ("a b c", "at least one term"),
            ("x" * 201, "at most 200"),
            ("a\x00b", "NUL"),
            (" ".join(f"w{n}" for n in range(9)), "at most 8"),
        ):
            with pytest.raises(InvalidInput, match=reason):
                recall(conn, bad, POOL, DAY)
        with pytest.raises(InvalidInput, match="not one of"):
            recall(conn, "deploy", POOL, DAY, kinds=["memo"])


def test_a_one_character_term_narrows_what_longer_terms_found(engine: Engine) -> None:
    a = note(engine, "plan 가 for the deploy, rev Q")
    note(engine, "plan for the deploy")
    assert refs(engine, "deploy 가") == [f"note {a.id}"]
    assert refs(engine, "deploy q") == [f"note {a.id}"], "case folded"


def _plan(engine: Engine, sql: str, params: dict[str, str]) -> str:
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SET enable_seqscan = off"))
            rows = conn.execute(text(f"EXPLAIN {sql}"), params)
        else:
            rows = conn.execute(text(f"EXPLAIN QUERY PLAN {sql}"), params)
        return "\n".join(str(tuple(r)) for r in rows)


@pytest.mark.parametrize("term", ["배포", "deploy"])
def test_the_full_text_indexes_are_what_answers(engine: Engine, term: str) -> None:
    """The SQL recall writes matches the indexed expressions exactly (else every query would
    read the whole table): its plan names the trigram machinery, for both term lengths."""
    from sqlalchemy.dialects import postgresql, sqlite

    from ondeck.memory.recall_patterns import SOURCES, Shape, match_values
    from ondeck.memory.recall_sql import statement

    dialect = postgresql.dialect() if engine.dialect.name == "postgresql" else sqlite.dialect()
    for name in SOURCES:
        shape = Shape(
            dialect=engine.dialect.name, source=name, lengths=(min(len(term), 3),),
            cased=(term.lower() != term.upper(),), ascii=(term.isascii(),),
            sides_on=False, inbox=False, project=False, skip=False, include_all=True,
        )  # fmt: skip
        # PostgreSQL: a rare term's statement (the indexes give the candidates).
        strategy = "rare" if engine.dialect.name == "postgresql" else "plain"
        query = statement(shape, strategy).params(**match_values(shape, [term]), limit=20)
        compiled = query.compile(dialect=dialect, compile_kwargs={"literal_binds": True})
        plan = _plan(engine, str(compiled), {})
        kind = "pairs" if len(term) == 2 else "trgm"
        if engine.dialect.name == "postgresql":
            index = "ix_fts_pairs_trgm" if kind == "pairs" else f"ix_{name}_trgm"
            assert index in plan, plan
        else:
            fts = f"fts_{name}_pairs" if kind == "pairs" else f"fts_{name}"
            assert f"SCAN {fts} VIRTUAL TABLE" in plan, plan
            # FTS5 gives its matches newest first: nothing is sorted, LIMIT stops early.
            assert "TEMP B-TREE" not in plan, plan


TRICKY = "줄1\n줄2\r\n\t탭 e\u0301 😀 \\1 '\"% _ \u200b끝"


def test_the_doubled_text_is_the_same_on_both_stores(engine: Engine) -> None:
    """Python's `ondeck_pairs` (SQLite's triggers) and PostgreSQL's `regexp_replace` double
    every character alike: line breaks, combining marks, emoji, quotes, backslashes."""
    from ondeck.db.textpairs import pairs

    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            doubled = conn.execute(
                text("SELECT regexp_replace(:t, '(.)', '\\1\\1', 'g')"), {"t": TRICKY}
            ).scalar_one()
        else:
            doubled = conn.execute(text("SELECT ondeck_pairs(:t)"), {"t": TRICKY}).scalar_one()
    assert doubled == pairs(TRICKY) == "".join(c * 2 for c in TRICKY)
    note(engine, TRICKY)
    for query in ("e\u0301", '"😀 \\"', "\\1", "'\"", '"% _"', "탭 줄2"):
        assert len(refs(engine, query)) == 1, query


def test_a_writer_without_the_function_is_refused_and_writes_nothing(db_url: str) -> None:
    """SQLite: the triggers need `ondeck_pairs`; a program that lacks it (the sqlite3 shell)
    cannot write a row the index would miss: its statement fails whole."""
    import sqlite3

    from sqlalchemy.engine import make_url

    if not db_url.startswith("sqlite"):
        pytest.skip("PostgreSQL indexes need no function")
    path = make_url(db_url).database
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        with pytest.raises(sqlite3.OperationalError, match="no such function: ondeck_pairs"):
            conn.execute(
                "INSERT INTO tasks (title, created_at, updated_at) VALUES ('x', '2026', '2026')"
            )
        assert conn.execute("SELECT count(*) FROM tasks").fetchone() == (0,)
        from ondeck.db.textpairs import install

        install(conn)
        conn.execute(
            "INSERT INTO tasks (title, created_at, updated_at) VALUES ('배포', '2026', '2026')"
        )
    finally:
        conn.close()


def test_a_rare_term_beyond_the_newest_rows_is_found_and_a_common_one_newest_first(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL reads the newest rows first and asks the indexes only when the page is not
    filled there: both ways give the same answer as reading everything."""
    from ondeck.memory import recall_sql as recall_module

    monkeypatch.setattr(recall_module, "WINDOW", 3)
    recall_module.statement.cache_clear()
    try:
        oldest = note(engine, "승인 받기 the approval", at=NOW)
        made = [
            note(engine, f"common words {n}", at=NOW + timedelta(minutes=n + 1)) for n in range(8)
        ]
        assert refs(engine, "승인") == [f"note {oldest.id}"]
        assert refs(engine, "approval") == [f"note {oldest.id}"]
        with engine.connect() as conn:
            found = recall(conn, "common", POOL, DAY, limit=2)
        assert [h.id for h in found.hits] == [made[-1].id, made[-2].id] and found.more
        assert refs(engine, "words", limit=20) == [f"note {m.id}" for m in reversed(made)]
    finally:
        recall_module.statement.cache_clear()


def test_a_term_rare_in_notes_but_common_elsewhere_gives_the_newest_there_too(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL: a term rare in notes sends the next sources to their indexes first, for
    CAP candidates at most; where it is commoner than that, the newest rows are read as for
    any term: the same answer either way."""
    from ondeck.memory import recall_sql as recall_module

    monkeypatch.setattr(recall_module, "CAP", 2)
    only = note(engine, "승인 approval in one note", at=NOW)
    with engine.begin() as conn:
        made = [
            backlog.create_task(
                conn, NOW + timedelta(minutes=n + 1), title=f"승인 approval {n}", actor="t"
            )
            for n in range(6)
        ]
    for query in ("승인", "approval"):
        with engine.connect() as conn:
            found = recall(conn, query, POOL, DAY, limit=3)
        assert [h.ref for h in found.hits] == [f"task {t.id}" for t in made[:-4:-1]], query
        assert found.more
        assert f"note {only.id}" in refs(engine, query, limit=20)


def test_terms_with_signs_and_digits_are_case_folded_too(engine: Engine) -> None:
    """PostgreSQL checks such a term's signs and digits as they are before lowering the text
    for the rest: every case of the letters still matches, and only the term as a whole."""
    a = note(engine, "moved SRC/Ondeck/DB/Engine.PY and REF-0042")
    note(engine, "src ondeck db engine py ref 0042, and ref-00420 elsewhere")
    assert refs(engine, "src/ondeck/db/engine.py") == [f"note {a.id}"]
    assert refs(engine, "Ref-0042 Engine.py") == [f"note {a.id}"]
    assert refs(engine, "ref-0042") == refs(engine, "REF-0042")
    assert len(refs(engine, "ref-0042")) == 2


def test_a_term_in_part_of_the_newest_rows_is_read_further_with_the_same_answer(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL reads older rows at the rate a term was found in the newest (and the next
    sources that many at once) before asking the indexes: the page is the newest matches,
    as reading everything gives."""
    from ondeck.memory import recall_sql as recall_module

    monkeypatch.setattr(recall_module, "WINDOW", 6)
    monkeypatch.setattr(recall_module, "FURTHER", 30)
    recall_module.statement.cache_clear()
    try:
        tasks_made, notes_made = {}, {}
        for n in range(24):
            body = "midway point" if n % 3 == 0 else "elsewhere"
            with engine.begin() as conn:
                at = NOW + timedelta(minutes=n)
                tasks_made[n] = backlog.create_task(conn, at, title=body, actor="t").id
            notes_made[n] = note(engine, body, at=NOW + timedelta(minutes=n, seconds=30)).id
        with engine.connect() as conn:
            found = recall(conn, "midway", POOL, DAY, limit=5)
        assert [h.ref for h in found.hits] == [
            f"note {notes_made[21]}",
            f"task {tasks_made[21]}",
            f"note {notes_made[18]}",
            f"task {tasks_made[18]}",
            f"note {notes_made[15]}",
        ]
        assert found.more
        assert len(refs(engine, "midway", limit=40)) == 16
    finally:
        recall_module.statement.cache_clear()


@pytest.mark.parametrize("window", [3, 2_000])
def test_letters_beyond_ascii_fold_their_case_by_either_way_in(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """Accented Latin, Greek and Cyrillic letters fold their case as ASCII letters do, whether
    the newest rows answer (a large window) or the indexes do (a window of 3)."""
    from ondeck.memory import recall_sql as recall_module

    monkeypatch.setattr(recall_module, "WINDOW", window)
    recall_module.statement.cache_clear()
    try:
        found = note(engine, "Ärger mit dem ΣΎΣΤΗΜΑ und der ПРОВЕРКА, Émile", at=NOW)
        for n in range(8):
            note(engine, f"common words {n}", at=NOW + timedelta(minutes=n + 1))
        for query in ("ärger", "ÄRGER", "σύστημα", "проверка", "émile", "ÉMILE"):
            assert refs(engine, query) == [f"note {found.id}"], query
    finally:
        recall_module.statement.cache_clear()


def test_a_last_word_says_which_agent_said_it(engine: Engine) -> None:
    with engine.begin() as conn:
        codex = make_session(
            conn, NOW, external_id="01a235aa-7bea", agent="codex", last_word="코덱스 배포 끝"
        )
        claude = make_session(conn, NOW, external_id="3f1c2d3e-5b6a", last_word="클로드 배포 끝")
    with engine.connect() as conn:
        hits = {h.session_id: h.origin for h in recall(conn, "배포", POOL, DAY).hits}
    assert hits[codex] == f"session {codex}'s last word (codex, 01a235aa-7be)"
    assert hits[claude] == f"session {claude}'s last word (3f1c2d3e-5b6)"
