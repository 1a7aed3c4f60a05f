"""Notes and handoffs on both stores: the supersede chain, wrong and expired notes never
shown as true, the jobs tick's expiry, one handoff per session, sides kept apart, the
scrubber at the door, every change an event, and the schema refusing what the service
refuses."""

from __future__ import annotations

from datetime import date, timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, insert, select, update
from sqlalchemy.exc import IntegrityError

from conftest import NOW
from ondeck.core.errors import Conflict, InvalidInput, NotFound
from ondeck.core.memory import NoteKind, NoteStatus, Scope
from ondeck.db.tables import events, notes
from ondeck.memory import notes as svc
from ondeck.sessions import records_move as sessions_move
from support.memory import make_session

UTC = ZoneInfo("UTC")
SEOUL = ZoneInfo("Asia/Seoul")
SIDES = {"work": ["/w"], "personal": ["/p"]}
WORK = Scope.of(sides_on=True, side="work")
PERSONAL = Scope.of(sides_on=True, side="personal")
POOL = Scope.of(sides_on=False)
DAY = NOW.date()


def add(engine: Engine, text: str, **kw):  # type: ignore[no-untyped-def]
    values = {"side": None, "project": None, "sides": {}, "zone": UTC, "actor": "test"}
    values.update(kw)
    with engine.begin() as conn:
        return svc.add_note(conn, kw.pop("now", NOW), text=text, **values)


def listed(engine: Engine, scope: Scope = POOL, day: date = DAY, **kw) -> list[int]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return [n.id for n in svc.list_notes(conn, scope, day, **kw)]


def kinds_of(engine: Engine, note_id: int) -> list[str]:
    with engine.connect() as conn:
        return list(
            conn.execute(
                select(events.c.kind)
                .where(events.c.subject == f"note:{note_id}")
                .order_by(events.c.id)
            ).scalars()
        )


def test_a_supersede_chain_shows_only_the_last_and_keeps_the_others(engine: Engine) -> None:
    first = add(engine, "deploys go out on Fridays", kind="decision", pinned=True)
    with engine.begin() as conn:
        old, second = svc.supersede(
            conn, NOW, first.id, "no deploys on Fridays", zone=UTC, actor="t"
        )
    with engine.begin() as conn:
        old2, third = svc.supersede(
            conn, NOW, second.id, "deploys only Mon-Thu", zone=UTC, actor="t"
        )
    assert (old.status, old.superseded_by, old.pinned) == (NoteStatus.SUPERSEDED, second.id, False)
    assert (second.supersedes, second.kind, second.pinned) == (first.id, NoteKind.DECISION, True)
    assert (old2.superseded_by, third.supersedes) == (third.id, second.id)
    assert listed(engine) == [third.id]
    assert listed(engine, include_all=True) == [third.id, second.id, first.id]
    assert listed(engine, pinned=True) == [third.id]
    # A superseded note cannot be superseded again, nor edited: the newer one is the truth.
    with engine.begin() as conn, pytest.raises(Conflict, match="superseded by note"):
        svc.supersede(conn, NOW, first.id, "again", zone=UTC, actor="t")
    with engine.begin() as conn, pytest.raises(Conflict):
        svc.edit_note(conn, NOW, first.id, text="rewritten", zone=UTC, actor="t")
    # The store refuses a second replacement of the same note too.
    with engine.begin() as conn, pytest.raises(IntegrityError):
        conn.execute(
            insert(notes).values(
                kind="note",
                text="x",
                origin="person",
                supersedes=first.id,
                created_at=NOW,
                updated_at=NOW,
            )
        )
    assert kinds_of(engine, first.id) == ["note.added", "note.superseded"]


def test_a_wrong_note_is_kept_with_its_reason_and_never_shown_as_true(engine: Engine) -> None:
    note = add(engine, "the lease grace is 6 h", pinned=True)
    with engine.begin() as conn, pytest.raises(InvalidInput, match="reason"):
        svc.mark_wrong(conn, NOW, note.id, "  ", actor="t")
    with engine.begin() as conn:
        wrong = svc.mark_wrong(conn, NOW, note.id, "it is 12 h since June", actor="person")
    assert (wrong.status, wrong.status_reason, wrong.pinned) == (
        NoteStatus.WRONG,
        "it is 12 h since June",
        False,
    )
    assert listed(engine) == [] and listed(engine, pinned=True) == []
    assert listed(engine, include_all=True) == [note.id]
    for change in (
        lambda c: svc.set_pinned(c, NOW, note.id, True, actor="t"),
        lambda c: svc.supersede(c, NOW, note.id, "new", zone=UTC, actor="t"),
        lambda c: svc.mark_wrong(c, NOW, note.id, "again", actor="t"),
    ):
        with engine.begin() as conn, pytest.raises(Conflict):
            change(conn)
    with engine.connect() as conn:
        detail = conn.execute(
            select(events.c.details).where(events.c.kind == "note.wrong")
        ).scalar_one()
    assert detail == {"reason": "it is 12 h since June", "was": "active", "was_pinned": True}


def test_expiry_by_the_tick_and_never_shown_past_its_date_before_it(engine: Engine) -> None:
    from ondeck.host.settings import load_settings

    seoul = load_settings(database_url=str(engine.url), tz="Asia/Seoul")
    day = NOW.astimezone(SEOUL).date()
    soon = add(engine, "the staging server is down this week", expires_on=day, zone=SEOUL)
    later = add(engine, "freeze until the audit", expires_on=day + timedelta(days=30), zone=SEOUL)
    with engine.begin() as conn, pytest.raises(InvalidInput, match="before today"):
        svc.add_note(
            conn,
            NOW,
            text="x",
            side=None,
            project=None,
            sides={},
            zone=SEOUL,
            expires_on=day - timedelta(days=1),
            actor="t",
        )
    assert listed(engine, day=day) == [later.id, soon.id]
    # Midnight in Seoul (15:00 UTC): the next day there, the note is past its date at once,
    # even though the jobs tick has not run yet.
    midnight = NOW.replace(hour=15, minute=0)
    tomorrow = midnight.astimezone(SEOUL).date()
    assert tomorrow == day + timedelta(days=1)
    assert listed(engine, day=tomorrow) == [later.id]
    assert svc.notes_step(engine, midnight - timedelta(seconds=1), seoul)["expired"] == 0
    result = svc.notes_step(engine, midnight, seoul)
    assert result == {"expired": 1, "ids": [soon.id]}
    assert svc.notes_step(engine, midnight, seoul)["expired"] == 0, "once"
    with engine.connect() as conn:
        marked = svc.get_note(conn, soon.id)
    assert marked.status is NoteStatus.EXPIRED
    assert marked.status_reason == f"past its date ({day.isoformat()})"
    assert kinds_of(engine, soon.id) == ["note.added", "note.expired"]


def test_the_jobs_tick_runs_the_notes_step(engine: Engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ondeck.entrypoints.jobs.loop import Jobs
    from ondeck.host.settings import load_settings

    note = add(engine, "short-lived", expires_on=DAY)
    settings = load_settings(database_url=str(engine.url), tz="UTC", data_dir=tmp_path)
    jobs = Jobs(engine=engine, settings=settings)
    assert "notes" in [name for name, _ in jobs.steps or []]
    jobs.tick(NOW + timedelta(days=2))
    with engine.connect() as conn:
        assert svc.get_note(conn, note.id).status is NoteStatus.EXPIRED


def test_one_handoff_per_session_written_again_replaces_it_keeping_the_old(
    engine: Engine,
) -> None:
    with engine.begin() as conn:
        sid = make_session(conn, NOW, external_id="s-1", side="work", project="ondeck")
        first, replaced = svc.write_handoff(
            conn, NOW, sid, "next: finish recall", head="a" * 40, branch="main", actor="mcp"
        )
    assert not replaced
    assert (first.kind, first.side, first.project, first.origin) == (
        NoteKind.HANDOFF,
        "work",
        "ondeck",
        "agent:s-1",
    )
    with engine.begin() as conn:
        second, replaced = svc.write_handoff(
            conn, NOW + timedelta(minutes=5), sid, "next: the brief", head="b" * 40, actor="mcp"
        )
    assert replaced and second.id == first.id and second.text == "next: the brief"
    assert second.head == "b" * 40
    with engine.connect() as conn:
        details = conn.execute(
            select(events.c.details).where(events.c.kind == "handoff.replaced")
        ).scalar_one()
    assert details["before"]["text"] == "next: finish recall"
    assert details["before"]["head"] == "a" * 40
    # The store keeps it at one per session whatever writes.
    with engine.begin() as conn, pytest.raises(IntegrityError):
        conn.execute(
            insert(notes).values(
                kind="handoff",
                text="x",
                origin="agent:s-1",
                session_id=sid,
                created_at=NOW,
                updated_at=NOW,
            )
        )
    with engine.begin() as conn, pytest.raises(IntegrityError):
        conn.execute(
            insert(notes).values(
                kind="handoff", text="x", origin="person", created_at=NOW, updated_at=NOW
            )
        )
    with engine.begin() as conn, pytest.raises(InvalidInput, match="handoff is written"):
        svc.add_note(
            conn,
            NOW,
            text="x",
            kind="handoff",
            side=None,
            project=None,
            sides={},
            zone=UTC,
            actor="t",
        )


def test_a_session_that_keeps_no_text_keeps_no_handoff(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = make_session(conn, NOW, external_id="s-off", side="work", capture=False)
    with engine.begin() as conn, pytest.raises(InvalidInput, match="capture is off"):
        svc.write_handoff(conn, NOW, sid, "secret plans", actor="mcp")


def test_sides_never_mix_and_the_inbox_is_for_a_person_asking(engine: Engine) -> None:
    work = add(engine, "work: the VPN needs a new cert", side="work", sides=SIDES)
    mine = add(engine, "personal: dentist on Tuesday", side="personal", sides=SIDES)
    with engine.begin() as conn:
        lost = make_session(conn, NOW, external_id="s-unc", unclassified=True)
        inbox, _ = svc.write_handoff(conn, NOW, lost, "unfiled words", actor="mcp")
    assert inbox.side is None and inbox.project is None
    assert listed(engine, WORK) == [work.id]
    assert listed(engine, PERSONAL) == [mine.id]
    assert listed(engine, Scope.of(sides_on=True, inbox=True)) == [inbox.id]
    with engine.connect() as conn, pytest.raises(NotFound, match="in side work"):
        svc.get_note(conn, mine.id, WORK)
    with engine.connect() as conn, pytest.raises(InvalidInput, match="give a side"):
        svc.list_notes(conn, Scope.of(sides_on=True), DAY)
    with engine.begin() as conn, pytest.raises(InvalidInput, match="not configured"):
        svc.add_note(
            conn, NOW, text="x", side="hobby", project=None, sides=SIDES, zone=UTC, actor="t"
        )
    with engine.begin() as conn, pytest.raises(InvalidInput, match="give the side"):
        svc.add_note(conn, NOW, text="x", side=None, project=None, sides=SIDES, zone=UTC, actor="t")
    # A person moves the session out of the inbox: its handoff moves with it.
    with engine.begin() as conn:
        sessions_move.move_session(
            conn, NOW, lost, side="work", project="infra", sides=SIDES, actor="cli"
        )
    assert listed(engine, WORK) == [inbox.id, work.id]
    assert listed(engine, Scope.of(sides_on=True, inbox=True)) == []
    assert kinds_of(engine, inbox.id) == ["handoff.written", "note.moved"]


def test_project_scope_shows_the_project_and_side_wide_notes(engine: Engine) -> None:
    wide = add(engine, "side-wide: always run the linters", side="work", sides=SIDES)
    here = add(engine, "ondeck: SQLite in WAL", side="work", project="ondeck", sides=SIDES)
    add(engine, "blog: drafts in /d", side="work", project="blog", sides=SIDES)
    scope = Scope.of(sides_on=True, side="work", project="ondeck")
    assert listed(engine, scope) == [here.id, wide.id]


def test_the_scrubber_runs_before_anything_is_stored(engine: Engine) -> None:
    note = add(
        engine,
        "deploy key: AKIAIOSFODNN7EXAMPLE <private>my home address</private> 배포 완료",
    )
    assert "AKIA" not in note.text and "home address" not in note.text
    assert "[redacted:" in note.text and "배포 완료" in note.text
    assert note.redactions == 2
    with engine.begin() as conn, pytest.raises(InvalidInput, match="nothing is left"):
        svc.add_note(
            conn,
            NOW,
            text="<private>all of it</private>",
            side=None,
            project=None,
            sides={},
            zone=UTC,
            actor="t",
        )
    with engine.connect() as conn:
        stored = conn.execute(select(events.c.details).where(events.c.subject == f"note:{note.id}"))
        assert "AKIA" not in str(stored.scalar_one())


def test_text_limits_hold_in_the_service_and_in_the_schema(engine: Engine) -> None:
    add(engine, "가" * 8000)
    for bad, reason in (("", "empty"), ("가" * 8001, "8001 characters"), ("a\x00b", "NUL")):
        with engine.begin() as conn, pytest.raises(InvalidInput, match=reason):
            svc.add_note(
                conn, NOW, text=bad, side=None, project=None, sides={}, zone=UTC, actor="t"
            )
    with engine.begin() as conn, pytest.raises(IntegrityError):
        conn.execute(
            insert(notes).values(
                kind="note", text="가" * 8001, origin="person", created_at=NOW, updated_at=NOW
            )
        )
    with engine.begin() as conn, pytest.raises(IntegrityError):
        conn.execute(
            insert(notes).values(
                kind="note", text="x", origin="somebody", created_at=NOW, updated_at=NOW
            )
        )
    with engine.begin() as conn, pytest.raises(IntegrityError):
        conn.execute(
            insert(notes).values(
                kind="memo", text="x", origin="person", created_at=NOW, updated_at=NOW
            )
        )


def test_edits_keep_what_they_replaced_and_refuse_nothing_to_change(engine: Engine) -> None:
    note = add(engine, "use ruff", project="ondeck")
    with engine.begin() as conn:
        edited = svc.edit_note(
            conn,
            NOW,
            note.id,
            text="use ruff and mypy",
            kind="decision",
            project=None,
            expires_on=DAY + timedelta(days=3),
            zone=UTC,
            actor="cli",
        )
    assert (edited.text, edited.kind, edited.project) == (
        "use ruff and mypy",
        NoteKind.DECISION,
        None,
    )
    with engine.connect() as conn:
        details = conn.execute(
            select(events.c.details).where(events.c.kind == "note.edited")
        ).scalar_one()
    assert details["before"] == {
        "text": "use ruff",
        "kind": "note",
        "project": "ondeck",
        "expires_on": None,
    }
    with engine.begin() as conn, pytest.raises(InvalidInput, match="nothing to change"):
        svc.edit_note(conn, NOW, note.id, text="use ruff and mypy", zone=UTC, actor="cli")


def test_delete_removes_the_note_and_the_events_stay(engine: Engine) -> None:
    first = add(engine, "old")
    with engine.begin() as conn:
        _, second = svc.supersede(conn, NOW, first.id, "new", zone=UTC, actor="t")
        gone = svc.delete_note(conn, NOW, second.id, actor="cli")
    assert gone.id == second.id
    with engine.connect() as conn, pytest.raises(NotFound):
        svc.get_note(conn, second.id)
    with engine.connect() as conn:
        left = svc.get_note(conn, first.id)
    # Still superseded (it was replaced); the replacement is gone, so the link is cleared.
    assert (left.status, left.superseded_by) == (NoteStatus.SUPERSEDED, None)
    assert kinds_of(engine, second.id) == ["note.added", "note.deleted"]
    with engine.connect() as conn:
        details = conn.execute(
            select(events.c.details).where(events.c.kind == "note.deleted")
        ).scalar_one()
    assert details["note"]["text"] == "new" and details["note"]["supersedes"] == first.id


def test_a_change_made_meanwhile_is_not_overwritten(engine: Engine) -> None:
    note = add(engine, "x")
    with engine.begin() as conn:
        conn.execute(
            update(notes).where(notes.c.id == note.id).values(updated_at=NOW + timedelta(1))
        )
        before = svc.get_note(conn, note.id)
    stale = before.__class__(
        **{**{f: getattr(before, f) for f in before.__dataclass_fields__}, "updated_at": NOW}
    )
    with engine.begin() as conn, pytest.raises(Conflict, match="changed while"):
        svc.guarded_update(conn, stale, pinned=True)


def test_two_writers_of_a_first_handoff_at_once_leave_one(engine: Engine) -> None:
    """Both succeed: one writes the session's handoff, the other replaces it (never an
    error, never two)."""
    import threading

    with engine.begin() as conn:
        sid = make_session(conn, NOW, external_id="s-race", side="work", project="api")
    barrier = threading.Barrier(2)
    results: list[object] = []

    # PostgreSQL: both transactions open before either writes. SQLite serialises writers at
    # BEGIN, so there the two start together and one waits for the other.
    inside = engine.dialect.name == "postgresql"

    def write(text: str) -> None:
        try:
            if not inside:
                barrier.wait(timeout=30)
            with engine.begin() as conn:
                if inside:
                    barrier.wait(timeout=30)
                results.append(svc.write_handoff(conn, NOW, sid, text, actor="t")[1])
        except Exception as exc:
            results.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in ("one", "two")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(map(str, results)) == ["False", "True"], results
    with engine.connect() as conn:
        found = conn.execute(select(notes.c.text).where(notes.c.session_id == sid)).scalars()
        assert list(found) in (["one"], ["two"])


def test_two_supersedes_of_one_note_at_once_leave_one(engine: Engine) -> None:
    import threading

    note = add(engine, "the first")
    barrier = threading.Barrier(2)
    results: list[object] = []

    inside = engine.dialect.name == "postgresql"

    def replace(text: str) -> None:
        try:
            if not inside:
                barrier.wait(timeout=30)
            with engine.begin() as conn:
                if inside:
                    barrier.wait(timeout=30)
                results.append(svc.supersede(conn, NOW, note.id, text, zone=UTC, actor="t")[1].id)
        except Exception as exc:
            results.append(exc)

    threads = [threading.Thread(target=replace, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    errors = [r for r in results if isinstance(r, Exception)]
    assert len(results) == 2 and len(errors) == 1, results
    assert isinstance(errors[0], Conflict), errors
    assert listed(engine) == [r for r in results if isinstance(r, int)]
