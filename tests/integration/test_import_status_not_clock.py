"""An import judges a note's truth by its statuses, never by the instants they were stamped
with, on both stores: a note written while the clock ran a month ahead, then marked wrong
(or superseded) once the clock was right, is wrong (superseded) after the backup from before
is restored and the export imported; the import names what it changed. And the other way:
an export made before a note was marked wrong never makes it true again, whatever its
stamps say."""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, select

from conftest import NOW
from ondeck.db.tables import events, notes
from ondeck.memory import exchange
from ondeck.memory import notes as svc

UTC = ZoneInfo("UTC")
SIDES = {"work": ["/w"]}
AHEAD = NOW + timedelta(days=30)  # the machine's clock, a month ahead


@pytest.fixture
def restored(second_engine: Engine) -> Engine:
    """The backup, once restored: an empty database on the same store."""
    return second_engine


def _export(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(exchange.export_jsonl(conn, NOW))


def _import(engine: Engine, lines: list[str]) -> exchange.Imported:
    with engine.begin() as conn:
        return exchange.import_jsonl(conn, NOW, lines, sides=SIDES, actor="cli")


def _written_ahead(engine: Engine) -> tuple[int, int]:
    """Two notes written while the clock ran ahead."""
    with engine.begin() as conn:
        deploy = svc.add_note(
            conn, AHEAD, text="배포 창은 금요일", kind="decision", side="work", project="api",
            sides=SIDES, zone=UTC, actor="t", pinned=True,
        )  # fmt: skip
        grace = svc.add_note(
            conn, AHEAD + timedelta(seconds=1), text="유예 시간은 6시간", side="work",
            project="api", sides=SIDES, zone=UTC, actor="t",
        )  # fmt: skip
    return deploy.id, grace.id


def _state(engine: Engine) -> dict[str, tuple[str, bool, str | None]]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(notes.c.text, notes.c.status, notes.c.pinned, notes.c.status_reason)
        )
        return {r.text: (r.status, bool(r.pinned), r.status_reason) for r in rows}


def _ids(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {r.text: r.id for r in conn.execute(select(notes.c.id, notes.c.text))}


def test_a_note_written_ahead_and_marked_wrong_after_stays_wrong_through_restore_and_import(
    engine: Engine, restored: Engine
) -> None:
    deploy, grace = _written_ahead(engine)
    _import(restored, _export(engine))  # the backup: both notes true, stamped a month ahead
    with engine.begin() as conn:  # the clock put right: a month before the notes' stamps
        svc.mark_wrong(conn, NOW, grace, "12시간으로 바뀜", actor="t")
        svc.supersede(conn, NOW, deploy, "배포 창은 목요일", zone=UTC, actor="t")
    result = _import(restored, _export(engine))
    here = _ids(restored)
    assert result.changed == {
        "wrong": [here["유예 시간은 6시간"]],
        "superseded": [here["배포 창은 금요일"]],
    }
    assert (result.notes, result.updated, result.skipped, result.kept) == (1, 2, 0, [])
    state = _state(restored)
    assert state["유예 시간은 6시간"] == ("wrong", False, "12시간으로 바뀜")
    assert state["배포 창은 금요일"][:2] == ("superseded", False)
    assert state["배포 창은 목요일"][:2] == ("active", True)
    assert state == _state(engine)
    with restored.connect() as conn:
        kinds = conn.execute(
            select(events.c.kind).where(events.c.kind == "note.import_updated")
        ).all()
    assert len(kinds) == 2
    again = _import(restored, _export(engine))
    assert (again.notes, again.updated, again.changed, again.kept) == (0, 0, {}, [])


def test_an_export_from_before_never_makes_a_wrong_note_true_again(
    engine: Engine, restored: Engine
) -> None:
    """The export's copy is stamped later (the clock was ahead when it was written) but
    the note was marked wrong since: it stays wrong, and the import says it kept it."""
    _, grace = _written_ahead(engine)
    before = _export(engine)
    _import(restored, before)
    local = _ids(restored)["유예 시간은 6시간"]
    with restored.begin() as conn:
        svc.mark_wrong(conn, NOW, local, "12시간으로 바뀜", actor="t")
    result = _import(restored, before)
    assert _state(restored)["유예 시간은 6시간"] == ("wrong", False, "12시간으로 바뀜")
    assert (result.updated, result.changed, result.kept) == (0, {}, [local])
    assert grace


def test_between_two_true_copies_the_later_change_still_wins(
    engine: Engine, restored: Engine
) -> None:
    """The clock decides only between copies equally far from true: an edit stamped
    earlier than the copy here is not brought (as before)."""
    _, grace = _written_ahead(engine)
    _import(restored, _export(engine))
    with engine.begin() as conn:
        svc.edit_note(conn, NOW, grace, text="유예 시간은 12시간", zone=UTC, actor="t")
    result = _import(restored, _export(engine))
    local = _ids(restored)["유예 시간은 6시간"]
    assert (result.updated, result.kept) == (0, [local])
