"""Schedules: create, edit, pause, resume, "now", remove. Firing lives in `firing.py`.

`next_due` is precomputed (and indexed by `ix_schedules_due`) so the jobs tick only reads
the schedules that are due. It is set here on create, on a rule or start change and on
resume: the first occurrence on or after max(today, start). "now" only pulls it to today:
creating anything is the jobs tick's job and nobody else's.
"""

from __future__ import annotations

from datetime import date, datetime, tzinfo
from typing import Any

from sqlalchemy import Connection, Row, insert, select, text, update

from ondeck.core.clock import aware, today
from ondeck.core.errors import Conflict, InvalidInput, NotFound
from ondeck.core.models import Fire, MissedPolicy, ScheduleKind, choice, parse_rule
from ondeck.core.models import Schedule as Schedule  # re-exported: its callers' old home
from ondeck.core.validation import check_body, check_priority, check_project, check_title
from ondeck.db.dialect import is_postgres
from ondeck.db.tables import fires, schedules
from ondeck.entrypoints.jobs import WAKE_CHANNEL
from ondeck.services import events

MAX_LIST = 1000
UNSET: Any = object()


# `list_schedules`: by next due date, none (a finished rule) last, then age.
SCHEDULE_ORDER = (schedules.c.next_due.is_(None), schedules.c.next_due, schedules.c.id)


def schedule_from_row(row: Row[Any]) -> Schedule:
    return Schedule.from_values(row._mapping)


def first_due(rule_text: str, start: date, day: date, fired_on: date | None = None) -> date:
    """The first occurrence on or after max(day, start): `next_due` on create, edit, resume.

    A date that already fired is passed over: it cannot fire twice, so pointing `next_due`
    at it would show a schedule as due that will never make anything.
    """
    rule = parse_rule(rule_text)
    found = rule.next_on_or_after(max(day, start), start)
    if fired_on is not None and found <= fired_on:
        found = rule.next_after(fired_on, start)
    return found


def _check_kind(kind: str) -> ScheduleKind:
    return choice(ScheduleKind, kind, "kind")


def _check_missed(missed: str) -> MissedPolicy:
    return choice(MissedPolicy, missed, "missed")


def _subject(schedule_id: int) -> str:
    return f"schedule:{schedule_id}"


# --- reading --------------------------------------------------------------------------


def get_schedule(conn: Connection, schedule_id: int) -> Schedule:
    """A live schedule, or `NotFound` (a removed one is gone for every reader)."""
    row = conn.execute(
        select(schedules).where(schedules.c.id == schedule_id, schedules.c.deleted_at.is_(None))
    ).first()
    if row is None:
        raise NotFound(f"no schedule {schedule_id}")
    return schedule_from_row(row)


def list_schedules(
    conn: Connection,
    *,
    kind: str | None = None,
    project: str | None = None,
    limit: int = MAX_LIST,
) -> list[Schedule]:
    query = (
        select(schedules)
        .where(schedules.c.deleted_at.is_(None))
        .order_by(*SCHEDULE_ORDER)
        .limit(max(1, min(limit, MAX_LIST)))
    )
    if kind is not None:
        query = query.where(schedules.c.kind == _check_kind(kind))
    if project is not None:
        query = query.where(schedules.c.project == project)
    return [schedule_from_row(row) for row in conn.execute(query)]


def list_fires(conn: Connection, schedule_id: int, *, limit: int = 10) -> list[Fire]:
    """The schedule's latest fires, newest first."""
    query = (
        select(fires)
        .where(fires.c.schedule_id == schedule_id)
        .order_by(fires.c.fire_date.desc(), fires.c.id.desc())
        .limit(max(1, min(limit, MAX_LIST)))
    )
    return [Fire(**row._mapping) for row in conn.execute(query)]


def show_schedule(
    conn: Connection, now: datetime, zone: tzinfo, schedule_id: int, *, fires_limit: int = 10
) -> dict[str, Any]:
    """What `schedule show` and `GET /schedules/{id}` give: the schedule, its last fires
    (newest first) and its next 5 dates."""
    schedule = get_schedule(conn, schedule_id)
    return {
        "schedule": schedule.to_json(now, zone),
        "fires": [f.to_json(zone) for f in list_fires(conn, schedule_id, limit=fires_limit)],
        "next": [d.isoformat() for d in schedule.upcoming(today(now, zone))],
    }


# --- changing -------------------------------------------------------------------------


def create_schedule(
    conn: Connection,
    now: datetime,
    zone: tzinfo,
    *,
    title: str,
    rule: str,
    kind: str = ScheduleKind.TASK,
    body: str = "",
    start_on: date | None = None,
    project: str | None = None,
    priority: int = 2,
    missed: str = MissedPolicy.LATEST,
    actor: str = "cli",
) -> Schedule:
    """Validate everything first, so a refused schedule writes nothing."""
    now = aware(now)
    day = today(now, zone)
    canonical = str(parse_rule(rule))
    values = {
        "title": check_title(title),
        "body": check_body(body),
        "kind": _check_kind(kind),
        "rule": canonical,
        "project": check_project(project),
        "priority": check_priority(priority),
        "missed": _check_missed(missed),
        "start_on": start_on or day,
        "enabled": True,
        "created_at": now,
        "updated_at": now,
    }
    values["next_due"] = first_due(canonical, values["start_on"], day)
    schedule_id = conn.execute(insert(schedules).values(values).returning(schedules.c.id))
    schedule_id = int(schedule_id.scalar_one())
    events.record(
        conn,
        now,
        actor=actor,
        kind="schedule.created",
        subject=_subject(schedule_id),
        details={"title": values["title"], "kind": kind, "rule": canonical},
    )
    return get_schedule(conn, schedule_id)


def edit_schedule(
    conn: Connection,
    now: datetime,
    zone: tzinfo,
    schedule_id: int,
    *,
    title: str = UNSET,
    rule: str = UNSET,
    body: str = UNSET,
    start_on: date = UNSET,
    project: str | None = UNSET,
    priority: int = UNSET,
    missed: str = UNSET,
    actor: str = "cli",
) -> Schedule:
    """Change what is given. A new rule or start recomputes `next_due`; other edits keep it,
    so renaming an overdue schedule does not lose the fire it owes."""
    now = aware(now)
    current = get_schedule(conn, schedule_id)
    changes: dict[str, Any] = {}
    if title is not UNSET:
        changes["title"] = check_title(title)
    if rule is not UNSET:
        changes["rule"] = str(parse_rule(rule))
    if body is not UNSET:
        changes["body"] = check_body(body)
    if start_on is not UNSET:
        if start_on is None:
            raise InvalidInput("start: a date is required")
        changes["start_on"] = start_on
    if project is not UNSET:
        changes["project"] = check_project(project)
    if priority is not UNSET:
        changes["priority"] = check_priority(priority)
    if missed is not UNSET:
        changes["missed"] = _check_missed(missed)
    changes = {k: v for k, v in changes.items() if getattr(current, k) != v}
    if not changes:
        return current
    if "rule" in changes or "start_on" in changes:
        changes["next_due"] = first_due(
            changes.get("rule", current.rule),
            changes.get("start_on", current.start_on),
            today(now, zone),
            current.last_fired_on,
        )
    conn.execute(
        update(schedules).where(schedules.c.id == schedule_id).values(**changes, updated_at=now)
    )
    details = {k: (v.isoformat() if isinstance(v, date) else v) for k, v in changes.items()}
    events.record(
        conn,
        now,
        actor=actor,
        kind="schedule.edited",
        subject=_subject(schedule_id),
        details=details,
    )
    return get_schedule(conn, schedule_id)


def pause_schedule(
    conn: Connection, now: datetime, schedule_id: int, *, actor: str = "cli"
) -> Schedule:
    """Stop firing. Pausing a paused schedule changes nothing and records nothing."""
    current = get_schedule(conn, schedule_id)
    if not current.enabled:
        return current
    conn.execute(
        update(schedules)
        .where(schedules.c.id == schedule_id)
        .values(enabled=False, updated_at=aware(now))
    )
    events.record(conn, now, actor=actor, kind="schedule.paused", subject=_subject(schedule_id))
    return get_schedule(conn, schedule_id)


def resume_schedule(
    conn: Connection, now: datetime, zone: tzinfo, schedule_id: int, *, actor: str = "cli"
) -> Schedule:
    """Fire again from today on: the paused time is not backfilled."""
    current = get_schedule(conn, schedule_id)
    if current.enabled:
        return current
    next_due = first_due(current.rule, current.start_on, today(now, zone), current.last_fired_on)
    conn.execute(
        update(schedules)
        .where(schedules.c.id == schedule_id)
        .values(enabled=True, next_due=next_due, updated_at=aware(now))
    )
    events.record(
        conn,
        now,
        actor=actor,
        kind="schedule.resumed",
        subject=_subject(schedule_id),
        details={"next_due": next_due.isoformat()},
    )
    return get_schedule(conn, schedule_id)


def pull_now(
    conn: Connection, now: datetime, zone: tzinfo, schedule_id: int, *, actor: str = "cli"
) -> Schedule:
    """ "now": `next_due` becomes today, nothing else. The next jobs tick does the firing
    (on PostgreSQL it is woken at commit); pressing it twice a day still fires once."""
    current = get_schedule(conn, schedule_id)
    if not current.enabled:
        raise Conflict(f"schedule {schedule_id} is paused: resume it first")
    day = today(now, zone)
    conn.execute(
        update(schedules)
        .where(schedules.c.id == schedule_id)
        .values(next_due=day, updated_at=aware(now))
    )
    events.record(
        conn,
        now,
        actor=actor,
        kind="schedule.pulled_now",
        subject=_subject(schedule_id),
        details={"next_due": day.isoformat(), "was": iso_day(current.next_due)},
    )
    wake_jobs(conn)
    return get_schedule(conn, schedule_id)


def delete_schedule(
    conn: Connection, now: datetime, schedule_id: int, *, actor: str = "cli"
) -> Schedule:
    """Soft delete: fires and events keep naming the row; every reader treats it as gone."""
    current = get_schedule(conn, schedule_id)
    conn.execute(
        update(schedules)
        .where(schedules.c.id == schedule_id)
        .values(deleted_at=aware(now), updated_at=aware(now))
    )
    events.record(
        conn,
        now,
        actor=actor,
        kind="schedule.deleted",
        subject=_subject(schedule_id),
        details={"title": current.title},
    )
    return current


def wake_jobs(conn: Connection) -> None:
    """Ask every LISTENing jobs loop to tick now; delivered when the transaction commits."""
    if is_postgres(conn):
        conn.execute(text("SELECT pg_notify(:channel, '')"), {"channel": WAKE_CHANNEL})


def iso_day(day: date | None) -> str | None:
    return day.isoformat() if day else None
