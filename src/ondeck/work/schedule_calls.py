"""Schedules, one function per operation, each returning the API route's JSON.

The route (`entrypoints/api/schedules.py`), the CLI's command on this machine's database
(`entrypoints/cli/schedules.py`) and the MCP tool (`entrypoints/mcp/tools.py`) all call
these, in the transaction they open; each chooses the side view by its own rule (a token's
side, a directory's, a session's) and passes it in.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

from ondeck.core.models import MissedPolicy, ScheduleKind
from ondeck.core.validation import PRIORITY_DEFAULT
from ondeck.system import heartbeat
from ondeck.work import schedules

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ondeck.core.models import Schedule
    from ondeck.core.sides import SideView
    from ondeck.system.caller import Caller


def _json(at: Caller, schedule: Schedule) -> dict[str, Any]:
    return schedule.to_json(at.now(), at.settings.zone)


def list_schedules(
    conn: Connection,
    at: Caller,
    *,
    view: SideView,
    kind: str | None = None,
    project: str | None = None,
) -> list[dict[str, Any]]:
    found = schedules.list_schedules(conn, kind=kind, project=project, view=view)
    return [_json(at, s) for s in found]


def show_schedule(
    conn: Connection, at: Caller, schedule_id: int, *, view: SideView
) -> dict[str, Any]:
    """The schedule, its last fires, its next dates and the dates it skipped."""
    schedules.get_schedule(conn, schedule_id, view)
    return schedules.show_schedule(conn, at.now(), at.settings.zone, schedule_id)


def list_fires(
    conn: Connection, at: Caller, schedule_id: int, *, limit: int, view: SideView
) -> list[dict[str, Any]]:
    schedules.get_schedule(conn, schedule_id, view)
    zone = at.settings.zone
    return [f.to_json(zone) for f in schedules.list_fires(conn, schedule_id, limit=limit)]


def create_schedule(
    conn: Connection,
    at: Caller,
    *,
    title: str,
    rule: str,
    kind: str = ScheduleKind.TASK,
    body: str = "",
    start_on: date | None = None,
    project: str | None = None,
    priority: int = PRIORITY_DEFAULT,
    missed: str = MissedPolicy.LATEST,
    side: str | None,
) -> dict[str, Any]:
    schedule = schedules.create_schedule(
        conn,
        at.now(),
        at.settings.zone,
        title=title,
        rule=rule,
        kind=kind,
        body=body,
        start_on=start_on,
        project=project,
        priority=priority,
        missed=missed,
        side=side,
        actor=at.actor,
    )
    return _json(at, schedule)


def edit_schedule(
    conn: Connection, at: Caller, schedule_id: int, *, view: SideView, **changes: Any
) -> dict[str, Any]:
    """Only the fields given change (`project` given as None clears it)."""
    zone = at.settings.zone
    schedule = schedules.edit_schedule(
        conn, at.now(), zone, schedule_id, actor=at.actor, view=view, **changes
    )
    return _json(at, schedule)


def delete_schedule(
    conn: Connection, at: Caller, schedule_id: int, *, view: SideView
) -> dict[str, Any]:
    """The schedule as it was (the route answers 204; a command names what it removed)."""
    removed = schedules.delete_schedule(conn, at.now(), schedule_id, actor=at.actor, view=view)
    return _json(at, removed)


def pause_schedule(
    conn: Connection, at: Caller, schedule_id: int, *, view: SideView
) -> dict[str, Any]:
    schedule = schedules.pause_schedule(conn, at.now(), schedule_id, actor=at.actor, view=view)
    return _json(at, schedule)


def resume_schedule(
    conn: Connection, at: Caller, schedule_id: int, *, view: SideView
) -> dict[str, Any]:
    zone = at.settings.zone
    schedule = schedules.resume_schedule(
        conn, at.now(), zone, schedule_id, actor=at.actor, view=view
    )
    return _json(at, schedule)


def pull_now(conn: Connection, at: Caller, schedule_id: int, *, view: SideView) -> dict[str, Any]:
    """Due today at the latest; `note` says what will come of it (nothing if today already
    fired, nothing yet while the jobs loop is not running)."""
    zone, now = at.settings.zone, at.now()
    schedule = schedules.pull_now(conn, now, zone, schedule_id, actor=at.actor, view=view)
    jobs = heartbeat.jobs_health(conn, now, tick_seconds=at.settings.tick_seconds)
    note = schedules.pulled_state(schedule, at.today(), jobs, zone)
    return {**_json(at, schedule), "note": note}
