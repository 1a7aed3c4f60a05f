"""Tasks and leases: claim, renew, complete, release, fencing, and one event per change."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, func, select, text, update
from sqlalchemy.exc import IntegrityError

from ondeck.core.errors import Conflict, InvalidInput, LeaseLost, NotFound, NothingClaimable
from ondeck.core.models import Task, TaskStatus
from ondeck.db.tables import events as events_table
from ondeck.db.tables import tasks
from ondeck.system import events
from ondeck.work import backlog
from ondeck.work.reaper import reap_stale_leases

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
GRACE = timedelta(hours=6)


def add(engine: Engine, title: str = "t", **values: Any) -> Task:
    with engine.begin() as conn:
        return backlog.create_task(conn, NOW, title=title, actor="cli", **values)


def get(engine: Engine, task_id: int) -> Task:
    with engine.connect() as conn:
        return backlog.get_task(conn, task_id)


def kinds(engine: Engine, task_id: int) -> list[str]:
    with engine.connect() as conn:
        found = events.list_events(conn, subject=f"task:{task_id}")
    return [e.kind for e in reversed(found)]


def snapshot(engine: Engine) -> tuple[list[Any], int]:
    """Every task row and the number of events: "nothing changed" compares two of these."""
    with engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(select(tasks).order_by(tasks.c.id))]
        count = conn.execute(select(func.count()).select_from(events_table)).scalar_one()
    return rows, count


def claim(engine: Engine, task_id: int, owner: str = "cli:alice", **kw: Any) -> Task:
    with engine.begin() as conn:
        return backlog.claim_task(conn, kw.pop("now", NOW), task_id, owner=owner, actor="cli", **kw)


def test_it_claims_renews_and_completes(engine: Engine) -> None:
    task = add(engine, "write the report", priority=1, project="ondeck")
    claimed = claim(engine, task.id, duration="2h")
    assert claimed.status is TaskStatus.RUNNING
    assert claimed.lease_owner == "cli:alice"
    assert claimed.lease_until == NOW + timedelta(hours=2)
    assert claimed.lease_token == 1

    later = NOW + timedelta(minutes=90)
    with engine.begin() as conn:
        renewed = backlog.renew_lease(
            conn, later, task.id, token=claimed.lease_token, duration="1h", actor="cli"
        )
    assert renewed.lease_until == later + timedelta(hours=1)
    assert renewed.lease_token == claimed.lease_token, "renewing keeps the token"

    with engine.begin() as conn:
        done = backlog.complete_task(conn, later, task.id, token=1, note="sent", actor="cli")
    assert done.status is TaskStatus.DONE
    assert done.done_at == later
    assert (done.lease_owner, done.lease_until) == (None, None)
    assert kinds(engine, task.id) == [
        "task.created",
        "task.claimed",
        "task.renewed",
        "task.completed",
    ]
    with engine.connect() as conn:
        completed = events.list_events(conn, kind="task.completed")[0]
    assert completed.details == {"owner": "cli:alice", "token": 1, "by_hand": False, "note": "sent"}
    assert completed.actor == "cli"


def test_the_default_lease_is_one_hour_and_at_most_seven_days(engine: Engine) -> None:
    task = add(engine)
    assert claim(engine, task.id).lease_until == NOW + timedelta(hours=1)
    for bad in ("8d", "0s", "0", "soon", -5, "999999999d999999999d"):
        with pytest.raises(InvalidInput):
            backlog.lease_duration(bad)
    assert backlog.lease_duration("7d") == timedelta(days=7)
    assert backlog.lease_duration(90) == timedelta(seconds=90)


def test_a_stale_token_after_a_reap_and_reclaim_changes_nothing(engine: Engine) -> None:
    """The fencing promise: the first holder wakes up after its lease was retaken."""
    task = add(engine)
    first = claim(engine, task.id, owner="claude:one")
    with engine.begin() as conn:
        reaped = reap_stale_leases(conn, NOW + timedelta(hours=8), GRACE)
    assert [r.task_id for r in reaped] == [task.id]
    second = claim(engine, task.id, owner="claude:two", now=NOW + timedelta(hours=8))
    assert second.lease_token > first.lease_token

    before = snapshot(engine)
    later = NOW + timedelta(hours=8, minutes=5)
    with pytest.raises(LeaseLost) as lost, engine.begin() as conn:
        backlog.complete_task(conn, later, task.id, token=first.lease_token, actor="cli")
    assert "held by claude:two" in str(lost.value)
    assert lost.value.code == "lease_lost"
    with pytest.raises(LeaseLost), engine.begin() as conn:
        backlog.release_task(conn, later, task.id, token=first.lease_token, actor="cli")
    with pytest.raises(LeaseLost), engine.begin() as conn:
        backlog.renew_lease(conn, later, task.id, token=first.lease_token, actor="cli")
    assert snapshot(engine) == before
    assert get(engine, task.id).lease_owner == "claude:two"


def test_a_stale_token_after_a_reap_alone_is_lease_lost_too(engine: Engine) -> None:
    task = add(engine)
    first = claim(engine, task.id)
    with engine.begin() as conn:
        reap_stale_leases(conn, NOW + timedelta(hours=8), GRACE)
    lost = r"task \d+ is READY \(its lease was released or reaped\)"
    with pytest.raises(LeaseLost, match=lost), engine.begin() as conn:
        backlog.complete_task(conn, NOW, task.id, token=first.lease_token, actor="cli")
    assert get(engine, task.id).status is TaskStatus.READY


def test_the_token_only_grows(engine: Engine) -> None:
    task = add(engine)
    tokens = []
    for _ in range(3):
        held = claim(engine, task.id)
        tokens.append(held.lease_token)
        with engine.begin() as conn:
            backlog.release_task(conn, NOW, task.id, token=held.lease_token, actor="cli")
    assert tokens == [1, 2, 3]
    assert get(engine, task.id).lease_token == 3, "release keeps the value"


def test_claim_next_takes_due_date_then_priority_then_age(engine: Engine) -> None:
    undated_urgent = add(engine, "undated p0", priority=0)
    later_due = add(engine, "due 20th", due_on=date(2026, 6, 20), priority=0)
    soon_low = add(engine, "due 16th p5", due_on=date(2026, 6, 16), priority=5)
    soon_high_old = add(engine, "due 16th p1 old", due_on=date(2026, 6, 16), priority=1)
    soon_high_new = add(engine, "due 16th p1 new", due_on=date(2026, 6, 16), priority=1)
    undated_low = add(engine, "undated p3", priority=3)
    order = []
    with engine.begin() as conn:
        for _ in range(6):
            order.append(backlog.claim_next(conn, NOW, owner="cli:a", actor="cli").id)
        with pytest.raises(NothingClaimable):
            backlog.claim_next(conn, NOW, owner="cli:a", actor="cli")
    assert order == [
        soon_high_old.id,
        soon_high_new.id,
        soon_low.id,
        later_due.id,
        undated_urgent.id,
        undated_low.id,
    ]


def test_claim_next_can_keep_to_one_project(engine: Engine) -> None:
    add(engine, "other", project="home", priority=0)
    mine = add(engine, "mine", project="ondeck")
    with engine.begin() as conn:
        got = backlog.claim_next(conn, NOW, owner="cli:a", project="ondeck", actor="cli")
    assert got.id == mine.id
    with pytest.raises(NothingClaimable, match="in project ondeck"), engine.begin() as conn:
        backlog.claim_next(conn, NOW, owner="cli:a", project="ondeck", actor="cli")


def test_claim_next_skips_tasks_that_are_not_ready(engine: Engine) -> None:
    running = add(engine, priority=0)
    claim(engine, running.id)
    done = add(engine, priority=0)
    with engine.begin() as conn:
        backlog.complete_task(conn, NOW, done.id, token=None, actor="cli")
    ready = add(engine, priority=9)
    with engine.begin() as conn:
        assert backlog.claim_next(conn, NOW, owner="cli:b", actor="cli").id == ready.id


@pytest.mark.parametrize("status", ["RUNNING", "DONE", "CANCELLED"])
def test_only_a_ready_task_can_be_claimed(engine: Engine, status: str) -> None:
    task = add(engine)
    if status == "RUNNING":
        claim(engine, task.id, owner="cli:bob")
    elif status == "DONE":
        with engine.begin() as conn:
            backlog.complete_task(conn, NOW, task.id, token=None, actor="cli")
    else:
        with engine.begin() as conn:
            backlog.cancel_task(conn, NOW, task.id, actor="cli")
    before = snapshot(engine)
    with pytest.raises(Conflict, match=f"task {task.id} is {status}"):
        claim(engine, task.id, owner="cli:alice")
    assert snapshot(engine) == before


def test_a_conflict_names_the_holder_and_an_expired_lease(engine: Engine) -> None:
    task = add(engine)
    claim(engine, task.id, owner="cli:bob")
    with pytest.raises(Conflict, match=r"held by cli:bob \(lease ended 2h ago, expired\)"):
        claim(engine, task.id, now=NOW + timedelta(hours=3))


def test_a_ready_task_is_done_or_cancelled_by_hand(engine: Engine) -> None:
    one, two = add(engine), add(engine)
    with engine.begin() as conn:
        done = backlog.complete_task(conn, NOW, one.id, token=None, note="did it", actor="cli")
        cancelled = backlog.cancel_task(conn, NOW, two.id, note="not needed", actor="cli")
    assert done.status is TaskStatus.DONE and done.done_at == NOW
    assert cancelled.status is TaskStatus.CANCELLED and cancelled.done_at is None
    with engine.connect() as conn:
        [completed] = events.list_events(conn, subject=f"task:{one.id}", kind="task.completed")
    assert completed.details["by_hand"] is True
    for task_id in (one.id, two.id):
        for act in (backlog.complete_task, backlog.cancel_task):
            kw: dict[str, Any] = {"token": None} if act is backlog.complete_task else {}
            with pytest.raises(Conflict, match="is already"), engine.begin() as conn:
                act(conn, NOW, task_id, actor="cli", **kw)


def test_a_running_task_needs_its_token_to_be_done_and_release_to_be_cancelled(
    engine: Engine,
) -> None:
    task = add(engine)
    claim(engine, task.id)
    before = snapshot(engine)
    with pytest.raises(Conflict, match="give its lease token"), engine.begin() as conn:
        backlog.complete_task(conn, NOW, task.id, token=None, actor="cli")
    with pytest.raises(Conflict, match="release it first"), engine.begin() as conn:
        backlog.cancel_task(conn, NOW, task.id, actor="cli")
    assert snapshot(engine) == before


def test_a_person_can_force_release_and_it_is_recorded(engine: Engine) -> None:
    task = add(engine)
    held = claim(engine, task.id, owner="claude:s1")
    with pytest.raises(InvalidInput, match="lease token, or force"), engine.begin() as conn:
        backlog.release_task(conn, NOW, task.id, actor="cli")
    with pytest.raises(InvalidInput, match="not both"), engine.begin() as conn:
        backlog.release_task(conn, NOW, task.id, token=held.lease_token, force=True, actor="cli")
    with engine.begin() as conn:
        released = backlog.release_task(conn, NOW, task.id, force=True, actor="cli")
    assert released.status is TaskStatus.READY
    assert (released.lease_owner, released.lease_until) == (None, None)
    with engine.connect() as conn:
        [event] = events.list_events(conn, kind="task.released")
    assert event.details["force"] is True
    assert event.details["owner"] == "claude:s1"
    assert event.details["token"] == held.lease_token
    with pytest.raises(Conflict, match="no lease to release"), engine.begin() as conn:
        backlog.release_task(conn, NOW, task.id, force=True, actor="cli")


def test_a_holder_releases_with_its_token(engine: Engine) -> None:
    task = add(engine)
    held = claim(engine, task.id)
    with engine.begin() as conn:
        backlog.release_task(conn, NOW, task.id, token=held.lease_token, actor="cli")
    with engine.connect() as conn:
        [event] = events.list_events(conn, kind="task.released")
    assert event.details["force"] is False


def test_an_expired_lease_can_still_be_renewed_by_its_holder(engine: Engine) -> None:
    """Between lease end and reaping the holder may come back: its token is still current."""
    task = add(engine)
    held = claim(engine, task.id)
    late = NOW + timedelta(hours=3)
    assert get(engine, task.id).is_expired(late)
    with engine.begin() as conn:
        renewed = backlog.renew_lease(conn, late, task.id, token=held.lease_token, actor="cli")
    assert not renewed.is_expired(late)


def test_expired_is_derived_from_now(engine: Engine) -> None:
    task = claim(engine, add(engine).id)
    zone = UTC
    assert task.to_json(NOW, zone)["expired"] is False
    assert task.to_json(NOW + timedelta(hours=1), zone)["expired"] is True
    assert task.to_json(NOW + timedelta(hours=1), zone)["status"] == "RUNNING"


def test_session_end_releases_what_that_owner_holds(engine: Engine) -> None:
    mine, other, also_mine = add(engine), add(engine), add(engine)
    claim(engine, mine.id, owner="claude:s1")
    claim(engine, other.id, owner="claude:s2")
    claim(engine, also_mine.id, owner="claude:s1")
    with engine.begin() as conn:
        released = backlog.release_held_by(
            conn, NOW, owner="claude:s1", actor="hook:s1", reason="logout"
        )
    assert released == [mine.id, also_mine.id]
    assert get(engine, other.id).status is TaskStatus.RUNNING
    assert get(engine, mine.id).status is TaskStatus.READY


def test_edit_changes_fields_and_clears_due_date_and_project(engine: Engine) -> None:
    task = add(engine, "old", due_on=date(2026, 6, 20), project="p")
    with engine.begin() as conn:
        edited = backlog.edit_task(
            conn,
            NOW,
            task.id,
            title="new",
            body="more",
            priority=0,
            due_on=None,
            project=None,
            actor="api",
        )
    assert (edited.title, edited.body, edited.priority) == ("new", "more", 0)
    assert (edited.due_on, edited.project) == (None, None)
    with engine.connect() as conn:
        [event] = events.list_events(conn, kind="task.edited")
    assert event.details["changes"] == {
        "title": "new",
        "body": "more",
        "priority": 0,
        "due_on": None,
        "project": None,
    }
    with pytest.raises(InvalidInput, match="nothing to change"), engine.begin() as conn:
        backlog.edit_task(conn, NOW, task.id, actor="cli")


def test_a_closed_task_is_not_edited(engine: Engine) -> None:
    task = add(engine)
    with engine.begin() as conn:
        backlog.cancel_task(conn, NOW, task.id, actor="cli")
    with pytest.raises(Conflict, match="is CANCELLED"), engine.begin() as conn:
        backlog.edit_task(conn, NOW, task.id, title="x", actor="cli")


def test_list_filters_and_orders(engine: Engine) -> None:
    a = add(engine, "a", due_on=date(2026, 6, 18), project="x")
    b = add(engine, "b", project="y", priority=0)
    c = add(engine, "c", due_on=date(2026, 6, 16), project="x")
    claim(engine, c.id)
    with engine.connect() as conn:
        everything = backlog.list_tasks(conn)
        in_x = backlog.list_tasks(conn, project="x")
        running = backlog.list_tasks(conn, statuses=[TaskStatus.RUNNING])
        due = backlog.list_tasks(conn, due_before=date(2026, 6, 18))
        first = backlog.list_tasks(conn, limit=1)
    assert [t.id for t in everything] == [c.id, a.id, b.id]
    assert [t.id for t in in_x] == [c.id, a.id]
    assert [t.id for t in running] == [c.id]
    assert [t.id for t in due] == [c.id]
    assert [t.id for t in first] == [c.id]


def test_statuses_parse_case_insensitively() -> None:
    assert backlog.parse_statuses("ready, Running") == (TaskStatus.READY, TaskStatus.RUNNING)
    assert backlog.parse_statuses("all") is None
    with pytest.raises(InvalidInput, match="unknown status 'PAUSED'"):
        backlog.parse_statuses("ready,paused")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"title": ""}, "title must not be empty"),
        ({"title": "   "}, "title must not be empty"),
        ({"title": "x" * 501}, "at most 500"),
        ({"title": "two\nlines"}, "one line"),
        ({"title": "nul\x00"}, "one line"),
        ({"body": "b" * 20_001}, "at most 20000"),
        ({"body": "nul\x00"}, "NUL"),
        ({"title": "\ud800"}, "not valid text"),
        ({"priority": 10}, "out of range"),
        ({"priority": -1}, "out of range"),
        ({"project": "has space"}, "project 'has space' is not valid"),
        ({"project": "p" * 65}, "is not valid"),
        ({"project": ""}, "is not valid"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    engine: Engine, values: dict[str, Any], message: str
) -> None:
    before = snapshot(engine)
    with pytest.raises(InvalidInput, match=message), engine.begin() as conn:
        backlog.create_task(conn, NOW, **{"title": "t", **values}, actor="cli")
    assert snapshot(engine) == before


def test_limits_themselves_are_accepted(engine: Engine) -> None:
    task = add(engine, "x" * 500, body="b" * 20_000, project="A.b_c-9" * 9 + "a", priority=9)
    assert len(task.title) == 500 and len(task.project or "") == 64


@pytest.mark.parametrize("task_id", [0, -1, 2**63])
def test_ids_out_of_range_are_invalid_input(engine: Engine, task_id: int) -> None:
    with pytest.raises(InvalidInput), engine.connect() as conn:
        backlog.get_task(conn, task_id)


def test_unknown_tasks_are_not_found(engine: Engine) -> None:
    with pytest.raises(NotFound, match="no task 42"), engine.begin() as conn:
        backlog.claim_task(conn, NOW, 42, owner="cli:a", actor="cli")


def test_every_change_writes_one_event_in_its_transaction(engine: Engine) -> None:
    """A change rolled back takes its event with it: the record never shows what did not happen."""
    task = add(engine)
    with pytest.raises(RuntimeError), engine.begin() as conn:
        backlog.claim_task(conn, NOW, task.id, owner="cli:a", actor="cli")
        raise RuntimeError("crash after the claim, before commit")
    assert get(engine, task.id).status is TaskStatus.READY
    assert kinds(engine, task.id) == ["task.created"]


def test_the_database_refuses_a_running_task_without_a_lease_end(engine: Engine) -> None:
    """The CHECK constraint: even SQL written by hand cannot make a lease without an end."""
    task = add(engine)
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(
            update(tasks)
            .where(tasks.c.id == task.id)
            .values(status="RUNNING", lease_owner="cli:a", lease_until=None)
        )
    held = claim(engine, task.id)
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(text("UPDATE tasks SET lease_until = NULL WHERE id = :id"), {"id": task.id})
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(text("UPDATE tasks SET status = 'READY' WHERE id = :id"), {"id": task.id})
    assert get(engine, task.id) == held


def test_no_service_leaves_a_running_task_without_a_lease(engine: Engine) -> None:
    """After a run of every kind of change, every row still satisfies the lease invariant."""
    ids = [add(engine).id for _ in range(4)]
    t0 = claim(engine, ids[0])
    t1 = claim(engine, ids[1])
    claim(engine, ids[2])
    with engine.begin() as conn:
        backlog.renew_lease(conn, NOW, ids[0], token=t0.lease_token, actor="cli")
        backlog.complete_task(conn, NOW, ids[0], token=t0.lease_token, actor="cli")
        backlog.release_task(conn, NOW, ids[1], token=t1.lease_token, actor="cli")
        backlog.claim_next(conn, NOW, owner="cli:z", actor="cli")
        reap_stale_leases(conn, NOW + timedelta(hours=8), GRACE)
    with engine.connect() as conn:
        rows = conn.execute(select(tasks.c.status, tasks.c.lease_owner, tasks.c.lease_until))
        for status, owner, until in rows:
            assert (status == "RUNNING") == (owner is not None) == (until is not None)
