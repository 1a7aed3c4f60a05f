"""The records and their states: one spelling each, the JSON shape scripts read, and nothing
heavy on the way in (the session hook imports this module at every session start)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from markupsafe import escape

from ondeck.core.errors import InvalidInput
from ondeck.core.models import (
    OPEN,
    TASK_JSON_FIELDS,
    BackupStatus,
    Event,
    Fire,
    MissedPolicy,
    Schedule,
    ScheduleKind,
    Task,
    TaskStatus,
    choice,
)
from ondeck.db import tables

SEOUL = ZoneInfo("Asia/Seoul")
# Monday 2026-06-15, 09:00 UTC: 18:00 in Seoul.
NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


def test_imports_only_the_standard_library_and_the_pure_core() -> None:
    code = (
        "import sys; before = set(sys.modules); import ondeck.core.models; "
        "new = set(sys.modules) - before; "
        "print(' '.join(sorted(m for m in new if m.split('.')[0] not in sys.stdlib_module_names)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [
        "ondeck",
        "ondeck.core",
        "ondeck.core.clock",
        "ondeck.core.errors",
        "ondeck.core.models",
        "ondeck.core.session_terms",
    ]


# --- the states ---------------------------------------------------------------------------


def test_each_state_has_its_one_spelling() -> None:
    assert [s.value for s in TaskStatus] == ["READY", "RUNNING", "DONE", "CANCELLED"]
    assert [k.value for k in ScheduleKind] == ["task", "remind", "backup"]
    assert [m.value for m in MissedPolicy] == ["latest", "all", "skip"]
    assert [b.value for b in BackupStatus] == ["running", "ok", "failed", "abandoned"]
    assert OPEN == (TaskStatus.READY, TaskStatus.RUNNING)


@pytest.mark.parametrize("member", [*TaskStatus, *ScheduleKind, *MissedPolicy, *BackupStatus])
def test_a_member_is_its_value_wherever_it_is_shown(member: Any) -> None:
    """JSON, f-strings, templates and dict keys see the same text as before the enums."""
    assert member == member.value and str(member) == member.value
    assert f"{member}" == member.value and escape(member) == member.value  # as Jinja shows it
    assert json.dumps({"x": member}) == json.dumps({"x": member.value})
    assert {member.value: 1}[member] == 1 and {member: 1}[member.value] == 1


def test_choice_takes_the_exact_stored_spelling() -> None:
    assert choice(ScheduleKind, "remind", "kind") is ScheduleKind.REMIND
    assert choice(MissedPolicy, MissedPolicy.SKIP, "missed") is MissedPolicy.SKIP


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("TASK", "'TASK'"),
        ("task ", "'task '"),
        ("", "''"),
        ("작업", "'작업'"),
        (None, "None"),
        (1, "1"),
        (["task"], "['task']"),  # unhashable: from a JSON body, still one clear line
        ("x" * 5000, "'" + "x" * 38 + "…"),  # a pasted file is not echoed back whole
    ],
)
def test_choice_refuses_anything_else_naming_what_is_accepted(value: object, shown: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        choice(ScheduleKind, value, "kind")
    assert str(caught.value) == f"kind {shown}: use one of task, remind, backup"
    assert caught.value.code == "invalid_input"


# --- the records hold their tables' columns -----------------------------------------------


@pytest.mark.parametrize(
    ("record", "table"),
    [
        (Task, tables.tasks),
        (Schedule, tables.schedules),
        (Fire, tables.fires),
        (Event, tables.events),
    ],
)
def test_a_record_has_exactly_its_tables_columns(record: type, table: Any) -> None:
    """A new column must reach the record (and so its JSON) or be left out on purpose."""
    assert [f.name for f in dataclasses.fields(record)] == [c.name for c in table.c]


def _task(**changes: Any) -> Task:
    values: dict[str, Any] = {
        "id": 7,
        "title": "보고서 write",
        "body": "몸\nbody",
        "status": TaskStatus.RUNNING,
        "priority": 1,
        "due_on": date(2026, 6, 16),
        "project": "ondeck",
        "source": "sch:3:2026-06-16",
        "lease_owner": "claude:s1",
        "lease_until": NOW + timedelta(hours=1),
        "lease_token": 4,
        "created_at": NOW - timedelta(days=1),
        "updated_at": NOW,
        "done_at": None,
    }
    return Task(**{**values, **changes})


def test_records_are_frozen() -> None:
    task = _task()
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.status = TaskStatus.DONE  # type: ignore[misc]


# --- Task ---------------------------------------------------------------------------------


def test_a_task_in_json_keeps_its_keys_order_and_text() -> None:
    shown = _task().to_json(NOW, SEOUL)
    assert tuple(shown) == TASK_JSON_FIELDS
    assert json.dumps(shown, ensure_ascii=False) == (
        '{"id": 7, "title": "보고서 write", "body": "몸\\nbody", "status": "RUNNING", '
        '"priority": 1, "due_on": "2026-06-16", "project": "ondeck", "side": null, '
        '"source": "sch:3:2026-06-16", "lease_owner": "claude:s1", '
        '"lease_until": "2026-06-15T19:00:00+09:00", "lease_token": 4, "expired": false, '
        '"created_at": "2026-06-14T18:00:00+09:00", "updated_at": "2026-06-15T18:00:00+09:00", '
        '"done_at": null}'
    )
    assert type(shown["status"]) is str


def test_a_task_without_dates_shows_nulls() -> None:
    ready = _task(status=TaskStatus.READY, due_on=None, lease_owner=None, lease_until=None)
    shown = ready.to_json(NOW, UTC)
    assert (shown["due_on"], shown["lease_until"], shown["expired"]) == (None, None, False)


def test_a_lease_is_expired_from_its_end_on() -> None:
    task = _task()
    end = NOW + timedelta(hours=1)
    assert not task.is_expired(end - timedelta(microseconds=1))
    assert task.is_expired(end)
    assert task.to_json(end.astimezone(SEOUL), SEOUL)["expired"] is True
    # Only a RUNNING task can be expired, whatever its (impossible) lease columns say.
    assert not _task(status=TaskStatus.DONE).is_expired(end + timedelta(days=1))


def test_a_naive_now_is_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        _task().is_expired(datetime(2026, 6, 15, 9, 0))


def test_a_task_from_a_row_leaves_other_columns_out() -> None:
    row = {**dataclasses.asdict(_task()), "status": "DONE", "prior_owner": "x", "step": 1}
    task = Task.from_values(row)
    assert task.status is TaskStatus.DONE
    assert task == _task(status=TaskStatus.DONE)
    with pytest.raises(ValueError):
        Task.from_values({**row, "status": "done"})


# --- Schedule and Fire --------------------------------------------------------------------


def _schedule_row(**changes: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "id": 3,
        "title": "주간 review",
        "body": "",
        "kind": "task",
        "rule": "weekly:MON,THU",
        "project": None,
        "start_on": date(2026, 6, 1),
        "next_due": date(2026, 6, 18),
        "missed": "skip",
        "last_fired_on": date(2026, 6, 15),
        "last_fired_at": NOW,
        "enabled": 1,
        "priority": 2,
        "created_at": NOW - timedelta(days=14),
        "updated_at": NOW,
        "deleted_at": None,
    }
    return {**values, **changes}


def test_a_schedule_from_a_row_has_its_states_as_enums() -> None:
    schedule = Schedule.from_values(_schedule_row())
    assert schedule.kind is ScheduleKind.TASK and schedule.missed is MissedPolicy.SKIP
    assert schedule.enabled is True
    assert Schedule.from_values(_schedule_row(enabled=0)).enabled is False
    with pytest.raises(ValueError):
        Schedule.from_values(_schedule_row(kind="Task"))


def test_a_schedule_in_json_keeps_its_keys_order_and_text() -> None:
    shown = Schedule.from_values(_schedule_row()).to_json(NOW, SEOUL)
    assert json.dumps(shown, ensure_ascii=False) == (
        '{"id": 3, "title": "주간 review", "body": "", "kind": "task", '
        '"rule": "weekly:MON,THU", "rule_text": "every Monday and Thursday", '
        '"project": null, "side": null, "start_on": "2026-06-01", '
        '"next_due": "2026-06-18", "missed": "skip", "last_fired_on": "2026-06-15", '
        '"last_fired_at": "2026-06-15T18:00:00+09:00", "enabled": true, "priority": 2, '
        '"created_at": "2026-06-01T18:00:00+09:00", "updated_at": "2026-06-15T18:00:00+09:00"}'
    )
    assert type(shown["kind"]) is str and type(shown["missed"]) is str


def test_a_schedule_with_an_unreadable_rule_still_shows() -> None:
    """A row written by hand (or by an older version) must not break every list it is in."""
    broken = Schedule.from_values(_schedule_row(rule="0 9 * * 1", next_due=None))
    shown = broken.to_json(NOW, UTC)
    assert shown["rule_text"] == "unreadable rule '0 9 * * 1'"
    assert shown["next_due"] is None
    with pytest.raises(InvalidInput) as caught:
        broken.upcoming(date(2026, 6, 15))
    assert caught.value.code == "invalid_rule"


def test_upcoming_starts_at_next_due_once_today_fired() -> None:
    schedule = Schedule.from_values(_schedule_row())
    # Monday the 15th fired already: next is Thursday.
    assert schedule.upcoming(date(2026, 6, 15), 3) == [
        date(2026, 6, 18),
        date(2026, 6, 22),
        date(2026, 6, 25),
    ]


def test_a_fire_in_json() -> None:
    fire = Fire(
        id=1, schedule_id=3, fire_date=date(2026, 6, 15), fired_at=NOW, task_id=None, skipped=2
    )
    assert json.dumps(fire.to_json(SEOUL)) == (
        '{"id": 1, "schedule_id": 3, "fire_date": "2026-06-15", '
        '"fired_at": "2026-06-15T18:00:00+09:00", "task_id": null, "skipped": 2}'
    )


def test_an_event_in_json() -> None:
    event = Event(
        id=9,
        at=NOW,
        actor="mcp:클라이언트",
        kind="task.claimed",
        subject="task:7",
        details={"owner": "claude:s1", "token": 4, "note": "메모"},
    )
    assert json.dumps(event.to_json(SEOUL), ensure_ascii=False) == (
        '{"id": 9, "at": "2026-06-15T18:00:00+09:00", "actor": "mcp:클라이언트", '
        '"kind": "task.claimed", "subject": "task:7", '
        '"details": {"owner": "claude:s1", "token": 4, "note": "메모"}}'
    )
