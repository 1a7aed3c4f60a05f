"""Recall on both stores, as a reader sees it: words found in any of their forms (English
stems, Korean particles and endings, compounds), any word of the query matching and the
items ranked by BM25 weight, recency breaking ties only; quoted phrases and identifiers held
as typed; each hit saying why it matched; case folded alike beyond ASCII; wrong, superseded
and expired items only when asked and labelled; sides never mixed; bad queries refused in
one line. The index's upkeep and the two stores' agreement: test_recall_index.py."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine

from conftest import NOW
from ondeck.core.errors import InvalidInput
from ondeck.core.memory import Scope
from ondeck.memory import notes as notes_svc
from ondeck.memory.recall import Recall, recall
from ondeck.work import backlog
from support.memory import add_compaction, make_session

UTC = ZoneInfo("UTC")
DAY = NOW.date()
POOL = Scope.of(sides_on=False)
SIDES = {"work": ["/w"], "personal": ["/p"]}
WORK = Scope.of(sides_on=True, side="work")
PERSONAL = Scope.of(sides_on=True, side="personal")


def note(engine: Engine, body: str, at=NOW, **kw):  # type: ignore[no-untyped-def]
    values = {"side": None, "project": None, "sides": {}, "zone": UTC, "actor": "t"}
    values.update(kw)
    with engine.begin() as conn:
        return notes_svc.add_note(conn, at, text=body, **values)


def found(engine: Engine, query: str, scope: Scope = POOL, **kw: Any) -> Recall:
    # A recall is a write transaction: it indexes what was written since the last one.
    with engine.begin() as conn:
        return recall(conn, query, scope, DAY, **kw)


def refs(engine: Engine, query: str, scope: Scope = POOL, **kw: Any) -> list[str]:
    return [h.ref for h in found(engine, query, scope, **kw).hits]


def ref(item: Any) -> str:
    return f"note {item.id}"


# --- words in any of their forms --------------------------------------------------------------


def test_english_word_forms_find_each_other(engine: Engine) -> None:
    deploy = note(engine, "we deploy on Thursdays")
    deployed = note(engine, "the API was deployed after the outage")
    deployment = note(engine, "blue-green deployment was rejected")
    migrations = note(engine, "migrations run before the restart")
    migration = note(engine, "one migration per release")
    note(engine, "the weather report for Friday")
    every = {ref(deploy), ref(deployed), ref(deployment)}
    for query in ("deploy", "deploying", "deployed", "deployment", "DEPLOYS"):
        assert set(refs(engine, query)) == every, query
    assert set(refs(engine, "migration")) == {ref(migrations), ref(migration)}
    assert set(refs(engine, "migrations")) == {ref(migrations), ref(migration)}
    assert refs(engine, "weathers") == refs(engine, "weather") != []


def test_korean_words_are_found_in_any_form_and_inside_compounds(engine: Engine) -> None:
    plain = note(engine, "금요일 배포 일정 확인", at=NOW)
    compound = note(engine, "자동배포 파이프라인 설정", at=NOW + timedelta(minutes=1))
    password = note(engine, "비밀번호 금고 위치", at=NOW + timedelta(minutes=2))
    ttl = note(engine, "캐시 TTL 60초", at=NOW + timedelta(minutes=3))
    apart = note(engine, "배가 고프다 포도", at=NOW + timedelta(minutes=4))  # 배 and 포
    for query in ("배포", "배포는", "배포하지", "배포했다", "언제 배포해"):
        assert set(refs(engine, query)) == {ref(plain), ref(compound)}, query
    assert refs(engine, "비밀번호를") == [ref(password)]
    assert refs(engine, "자동배포")[0] == ref(compound), "the whole compound ranks first"
    assert refs(engine, "TTL은") == [ref(ttl)], "a particle glued to a Latin word"
    assert ref(apart) not in refs(engine, "배포")


def test_a_word_finds_its_other_in_the_other_language_and_counts_once(engine: Engine) -> None:
    english = note(engine, "we deploy on Thursdays", at=NOW)
    korean = note(engine, "배포는 목요일에 한다", at=NOW + timedelta(minutes=1))
    both = note(engine, "배포 deploy 체크리스트", at=NOW + timedelta(minutes=2))
    note(engine, "배가 고프다", at=NOW + timedelta(minutes=3))
    every = {ref(english), ref(korean), ref(both)}
    assert set(refs(engine, "배포")) == every
    assert set(refs(engine, "deploying")) == every
    # Typed in both languages it is still one thing asked: the same scores as either alone,
    # and one reason a hit.
    alone = [(h.ref, h.score) for h in found(engine, "deploy").hits]
    twice = found(engine, "배포 deploy").hits
    assert [(h.ref, h.score) for h in twice] == alone
    assert all(len(h.matched) == 1 for h in twice)
    assert [(h.ref, h.score) for h in found(engine, "배포").hits] == alone


def test_a_korean_word_is_found_in_every_kind_of_item(engine: Engine) -> None:
    a = note(engine, "금요일에 배포했다")
    with engine.begin() as conn:
        sid = make_session(conn, NOW, external_id="s-ko", last_word="서버 배포 완료했습니다")
        cid = add_compaction(conn, sid, NOW + timedelta(minutes=4), "요약: 배포 스크립트 수정")
        task = backlog.create_task(conn, NOW, title="배포 자동화", actor="t")
    assert set(refs(engine, "배포")) == {
        ref(a),
        f"session {sid}",
        f"session {sid} compaction {cid}",
        f"task {task.id}",
    }
    assert refs(engine, "배포", kinds=["task"]) == [f"task {task.id}"]


# --- any word, ranked by weight; recency breaks ties --------------------------------------


def test_an_item_matching_more_of_the_words_ranks_above_one_matching_fewer(
    engine: Engine,
) -> None:
    more = note(engine, "lease grace held", at=NOW)
    fewer = note(engine, "lease token held", at=NOW + timedelta(hours=1))
    note(engine, "nothing of it here", at=NOW + timedelta(hours=2))
    assert refs(engine, "lease grace") == [ref(more), ref(fewer)]
    hits = found(engine, "lease grace").hits
    assert hits[0].score > hits[1].score > 0


def test_a_rare_word_outweighs_a_common_one(engine: Engine) -> None:
    for n in range(6):
        note(engine, f"backup log {n}", at=NOW + timedelta(minutes=n))
    rare = note(engine, "restic alpha", at=NOW)
    common = note(engine, "backup alpha", at=NOW + timedelta(hours=1))  # and newer
    order = refs(engine, "backup restic")
    assert order[0] == ref(rare)
    assert order.index(ref(rare)) < order.index(ref(common))


def test_stop_words_neither_make_nor_break_a_match(engine: Engine) -> None:
    note(engine, "how do we deploy the API")
    note(engine, "deploy on Thursdays", at=NOW + timedelta(minutes=1))
    note(engine, "how do we do it", at=NOW + timedelta(minutes=2))
    plain = [(h.ref, h.score) for h in found(engine, "deploy").hits]
    assert len(plain) == 2
    assert [(h.ref, h.score) for h in found(engine, "how do we deploy").hits] == plain


def test_recency_breaks_ties_only(engine: Engine) -> None:
    older = note(engine, "rotate the keys", at=NOW)
    newer = note(engine, "rotate the keys", at=NOW + timedelta(hours=1))
    assert refs(engine, "rotate keys") == [ref(newer), ref(older)]
    more = note(engine, "renew vault certificates", at=NOW)
    fewer = note(engine, "renew dns certificates", at=NOW + timedelta(days=1))
    assert refs(engine, "renew vault") == [ref(more), ref(fewer)]


def test_recency_orders_equal_matches_and_the_limit_says_there_is_more(engine: Engine) -> None:
    made = [note(engine, f"standup {n}", at=NOW + timedelta(minutes=n)) for n in range(5)]
    result = found(engine, "standup", limit=3)
    assert [h.id for h in result.hits] == [m.id for m in reversed(made)][:3]
    assert result.more
    assert not found(engine, "standup", limit=5).more


# --- phrases and identifiers as typed ---------------------------------------------------------


def test_a_quoted_phrase_must_be_held_as_typed(engine: Engine) -> None:
    whole = note(engine, "the lease grace period is long", at=NOW)
    apart = note(engine, "grace for every lease", at=NOW + timedelta(hours=1))
    assert refs(engine, '"lease grace"') == [ref(whole)]
    assert refs(engine, '"grace period" lease') == [ref(whole)]
    assert set(refs(engine, "lease grace")) == {ref(whole), ref(apart)}
    hits = {h.id: h.whole for h in found(engine, "lease grace").hits}
    assert hits == {whole.id: True, apart.id: False}
    assert refs(engine, '"grace lease"') == []


def test_identifiers_paths_and_versions_match_as_typed(engine: Engine) -> None:
    path = note(engine, "the bug is in src/ondeck/db/engine.py, line 40")
    note(engine, "src and db of ondeck, said apart")
    with engine.begin() as conn:
        task = backlog.create_task(
            conn, NOW, title="Fix WAL checkpoint", body="see src/ondeck/db/engine.py", actor="t"
        )
    name = note(engine, "flaky: test_lease_holder_dies on CI")
    note(engine, "a test where the lease holder dies")
    v332 = note(engine, "released v2.1.332 today")
    v333 = note(engine, "released v2.1.333 yesterday")
    assert set(refs(engine, "src/ondeck/db")) == {ref(path), f"task {task.id}"}
    assert set(refs(engine, "SRC/Ondeck/DB/Engine.PY")) == {ref(path), f"task {task.id}"}
    assert refs(engine, "test_lease_holder_dies") == [ref(name)]
    assert refs(engine, "v2.1.332") == [ref(v332)]
    assert refs(engine, "v2.1.333") == [ref(v333)]
    assert refs(engine, "v2.1.334") == []


def test_terms_with_signs_and_digits_are_case_folded_too(engine: Engine) -> None:
    a = note(engine, "moved SRC/Ondeck/DB/Engine.PY and REF-0042")
    note(engine, "src ondeck db engine py ref 0042 elsewhere")
    assert refs(engine, "src/ondeck/db/engine.py") == [ref(a)]
    assert refs(engine, "Ref-0042 Engine.py") == [ref(a)]
    assert refs(engine, "ref-0042") == refs(engine, "REF-0042") == [ref(a)]


# --- why it matched ---------------------------------------------------------------------------


def test_each_hit_says_which_word_matched_in_which_form_and_its_score(engine: Engine) -> None:
    a = note(engine, "we deployed the API on Friday; deploying again Monday")
    note(engine, "an unrelated note about lunch")
    result = found(engine, "deploying friday")
    (hit,) = result.hits
    assert hit.id == a.id and hit.score > 0
    words = {m.word: m for m in hit.matched}
    assert set(words) == {"deploying", "friday"}
    assert words["deploying"].terms == ("deploy",)
    assert set(words["deploying"].forms) == {"deployed", "deploying"}
    assert words["friday"].forms == ("Friday",)
    assert all(m.weight > 0 for m in hit.matched)
    assert hit.score == pytest.approx(sum(m.weight for m in hit.matched))
    shown = result.to_json(UTC, NOW)["results"][0]
    assert shown["score"] == round(hit.score, 3) > 0
    assert {m["word"]: m["forms"] for m in shown["matched"]}["deploying"] == list(
        words["deploying"].forms
    )
    assert "deployed" in shown["snippet"]


def test_a_korean_hit_names_the_form_it_was_found_in(engine: Engine) -> None:
    note(engine, "목요일에 배포했다")
    (hit,) = found(engine, "배포는").hits
    (match,) = hit.matched
    assert (match.word, match.terms, match.forms) == ("배포는", ("배포",), ("배포했다",))


# --- case folding beyond ASCII ------------------------------------------------------------------


def test_letters_beyond_ascii_fold_their_case_alike_on_both_stores(engine: Engine) -> None:
    german = note(engine, "Ärger über den Server")
    greek_upper = note(engine, "ΣΎΣΤΗΜΑ ελέγχου")
    greek_lower = note(engine, "το σύστημα τρέχει")
    other = note(engine, "ПРОВЕРКА для Émile")
    street = note(engine, "die Straße ist gesperrt")
    assert refs(engine, "ärger Ü") == [ref(german)]
    assert refs(engine, "ÄRGER") == [ref(german)]
    assert set(refs(engine, "σύστημα Α")) == {ref(greek_upper), ref(greek_lower)}
    for query in ("проверка", "ПРОВЕРКА", "émile", "ÉMILE"):
        assert refs(engine, query) == [ref(other)], query
    assert refs(engine, "STRASSE") == refs(engine, "straße") == [ref(street)]


# --- what is shown, and to whom -------------------------------------------------------------


def test_superseded_wrong_and_expired_only_with_all_and_labelled(engine: Engine) -> None:
    old = note(engine, "backups run at 03:00")
    wrong = note(engine, "backups are kept 7 days")
    expiring = note(engine, "backups paused this week", expires_on=DAY)
    with engine.begin() as conn:
        _, new = notes_svc.supersede(conn, NOW, old.id, "backups run at 04:00", zone=UTC, actor="t")
        notes_svc.mark_wrong(conn, NOW, wrong.id, "14 days since May", actor="t")
    tomorrow = DAY + timedelta(days=1)
    with engine.begin() as conn:
        shown = recall(conn, "backups", POOL, tomorrow)
        everything = recall(conn, "backups", POOL, tomorrow, include_all=True)
    assert [h.id for h in shown.hits] == [new.id]
    labels = {h.id: (h.status, h.true, h.label) for h in everything.hits}
    assert labels[new.id] == ("active", True, None)
    assert labels[old.id][:2] == ("superseded", False)
    assert labels[old.id][2] == f"SUPERSEDED by note {new.id}: not true any more"
    assert labels[wrong.id] == ("wrong", False, "WRONG: 14 days since May")
    assert labels[expiring.id][:2] == ("expired", False), "past its date before the tick"


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
    seen = set(refs(engine, "deploy", WORK))
    assert seen == {ref(work), f"session {w}", f"task {api.id}", f"task {lawyer.id}"}
    seen = set(refs(engine, "deploy", PERSONAL))
    assert ref(mine) in seen and f"task {blog.id}" in seen and f"session {p}" in seen
    assert not any(
        r in seen for r in (ref(work), f"session {w}", f"session {u}", f"task {lawyer.id}")
    )
    assert f"task {loose.id}" not in seen
    assert set(refs(engine, "deploy", Scope.of(sides_on=True, inbox=True))) == {f"session {u}"}
    with engine.begin() as conn, pytest.raises(InvalidInput, match="give a side"):
        recall(conn, "deploy", Scope.of(sides_on=True), DAY)


def test_a_last_word_says_which_agent_said_it(engine: Engine) -> None:
    with engine.begin() as conn:
        codex = make_session(
            conn, NOW, external_id="01a235aa-7bea", agent="codex", last_word="코덱스 배포 끝"
        )
        claude = make_session(conn, NOW, external_id="3f1c2d3e-5b6a", last_word="클로드 배포 끝")
    hits = {h.session_id: h.origin for h in found(engine, "배포").hits}
    assert hits[codex] == f"session {codex}'s last word (codex, 01a235aa-7be)"
    assert hits[claude] == f"session {claude}'s last word (3f1c2d3e-5b6)"


# --- the query's syntax -------------------------------------------------------------------------

STORE_SYNTAX = '50% of x* OR y: NEAR(a b) -foo AND OR NOT ^ab :) a"b \\ _x'


@pytest.mark.parametrize(
    "query",
    ['"', '""', 'a"b', "%", "_x", "\\", "NEAR(a b)", "x* OR y", "-foo", "AND OR NOT", "^ab", ":)"],
)
def test_query_syntax_is_never_the_stores_own(engine: Engine, query: str) -> None:
    """Signs that mean something to SQL's LIKE or a full text engine are plain text: a query
    finds the note by its words, or is refused for having none, never an error of the store."""
    note(engine, STORE_SYNTAX)
    note(engine, "an unrelated note")
    try:
        result = found(engine, query)
    except InvalidInput as exc:
        assert "give something" in str(exc) or "nothing to look for" in str(exc)
        assert "\n" not in str(exc)
        return
    assert len(result.hits) == 1


@pytest.mark.parametrize("query", ["the", "how do we", "언제", "d", "to be or not to be"])
def test_a_query_of_only_common_words_is_refused_with_nothing_to_look_for(
    engine: Engine, query: str
) -> None:
    note(engine, "how do we deploy the API")
    with pytest.raises(InvalidInput, match="nothing to look for") as refused:
        found(engine, query)
    assert "\n" not in str(refused.value)


def test_bad_queries_are_refused_in_one_line(engine: Engine) -> None:
    for bad, reason in (
        ("", "give something"),
        ("   ", "give something"),
        ("x" * 201, "at most 200"),
        ("a\x00b", "NUL"),
        (" ".join(f"w{n}" for n in range(17)), "at most 16"),
        ("\ud800", "not valid text"),
    ):
        with pytest.raises(InvalidInput, match=reason) as refused:
            found(engine, bad)
        assert "\n" not in str(refused.value)
    with pytest.raises(InvalidInput, match="not one of"):
        found(engine, "deploy", kinds=["memo"])


def test_nothing_held_is_no_match_not_an_error(engine: Engine) -> None:
    assert refs(engine, "deploy") == []
    note(engine, "deploy on Thursdays")
    assert refs(engine, "zyzzyva") == []
    assert refs(engine, "deploy", kinds=["compaction"]) == []
