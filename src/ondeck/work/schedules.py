"""Schedules: create, edit, pause, resume, "now", remove. Firing lives in `firing.py`.

`next_due` is precomputed (and indexed by `ix_schedules_due`) so the jobs tick only reads
the schedules that are due. It is set here on create, on a rule or start change and on
resume: the first occurrence on or after max(today, start). "now" only pulls it earlier, to
today at the latest (an overdue schedule keeps the dates it owes); creating anything is the
jobs tick's job and nobody else's.

Dates that will never fire are counted where they are dropped, never lost in silence:
resume records how many dates the pause skipped, "now" on a `missed=skip` schedule how
many owed dates it dropped, and `show_schedule` lists those with the tick's own skips.
"""

from __future__ import annotations

from datetime import date, datetime, tzinfo
from typing import Any

from sqlalchemy import Connection, Row, false, insert, select, text, update

from ondeck.core.clock import aware, iso, today
from ondeck.core.errors import Conflict, InvalidInput, NotFound
from ondeck.core.models import Fire, MissedPolicy, ScheduleKind, choice
from ondeck.core.models import Schedule as Schedule  # re-exported: its callers' old home
from ondeck.core.rules import parse as parse_rule
from ondeck.core.sides import EVERY_SIDE, SideView, check_side
from ondeck.core.validation import (
    check_body,
    check_date,
    check_priority,
    check_project,
    check_title,
)
from ondeck.db.dialect import is_postgres
from ondeck.db.tables import events as events_table
from ondeck.db.tables import fires, schedules
from ondeck.system import events
from ondeck.system.heartbeat import JobsHealth

# `parse_rule` is the rules module's `parse`, the one way to read a rule (its RuleError is
# already the InvalidInput every entry point shows); the name stays for its importers.
MAX_LIST = 1000
UNSET: Any = object()
# Counting the dates a pause or "now" dropped walks the rule; this bounds a pathological one
# (a century of daily dates is 36,525).
MAX_COUNT = 100_000
# The events that record dates dropped without a fire, and why.
_SKIP_REASONS = {
    "schedule.skipped": "missed=skip",
    "schedule.resumed": "paused",
    "schedule.pulled_now": "now, missed=skip",
}

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


def get_schedule(conn: Connection, schedule_id: int, view: SideView = EVERY_SIDE) -> Schedule:
    """A live schedule, or `NotFound` (a removed one is gone for every reader, and one of a
    side `view` does not see is not there for it)."""
    row = conn.execute(
        select(schedules).where(schedules.c.id == schedule_id, schedules.c.deleted_at.is_(None))
    ).first()
    if row is None or not view.sees(row.side):
        where = f" in {view.describe()}" if view.sides_on else ""
        raise NotFound(f"no schedule {schedule_id}{where}")
    return schedule_from_row(row)


def side_filter(query: Any, view: SideView) -> Any:
    """`query` (a select over schedules) narrowed to the rows `view` sees."""
    if not view.sides_on:
        return query
    if view.inbox:
        return query.where(schedules.c.side.is_(None))
    if not view.side:
        return query.where(false())
    return query.where(schedules.c.side == view.side)


def list_schedules(
    conn: Connection,
    *,
    kind: str | None = None,
    project: str | None = None,
    limit: int = MAX_LIST,
    view: SideView = EVERY_SIDE,
) -> list[Schedule]:
    query = side_filter(
        select(schedules)
        .where(schedules.c.deleted_at.is_(None))
        .order_by(*SCHEDULE_ORDER)
        .limit(max(1, min(limit, MAX_LIST))),
        view,
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
    (newest first), its next 5 dates and the dates dropped without a fire (newest first)."""
    schedule = get_schedule(conn, schedule_id)
    try:
        upcoming = [d.isoformat() for d in schedule.upcoming(today(now, zone))]
    except InvalidInput:
        upcoming = []  # a stored rule that no longer parses: `rule_text` says so
    return {
        "schedule": schedule.to_json(now, zone),
        "fires": [f.to_json(zone) for f in list_fires(conn, schedule_id, limit=fires_limit)],
        "next": upcoming,
        "skipped": list_skipped(conn, zone, schedule_id),
    }


def list_skipped(
    conn: Connection, zone: tzinfo, schedule_id: int, *, limit: int = 10
) -> list[dict[str, Any]]:
    """Dates the schedule dropped without a fire, newest first: under `missed=skip` after
    downtime, while paused, by "now" on a `missed=skip` schedule. Read from their events
    (ix_events_subject), the one record of them."""
    rows = conn.execute(
        select(events_table.c.at, events_table.c.kind, events_table.c.details)
        .where(
            events_table.c.subject == _subject(schedule_id),
            events_table.c.kind.in_(list(_SKIP_REASONS)),
        )
        .order_by(events_table.c.id.desc())
        .limit(limit * 4)
    )
    found = []
    for row in rows:
        details = row.details or {}
        count = details.get("skipped") if row.kind != "schedule.skipped" else details.get("dates")
        if not count:
            continue
        found.append(
            {
                "at": iso(row.at, zone),
                "reason": _SKIP_REASONS[row.kind],
                "dates": int(count),
                "first": details.get("first"),
                "last": details.get("last"),
            }
        )
        if len(found) == limit:
            break
    return found


def due_state(schedule: Schedule, day: date, jobs: JobsHealth, zone: tzinfo) -> str | None:
    """What will happen to a due schedule, in one sentence, or None when its next date is
    simply in the future. The dashboard's rows, `schedule now` everywhere, from one rule."""
    due = schedule.next_due
    if not schedule.enabled or due is None or due > day:
        return None
    try:
        parse_rule(schedule.rule)
    except InvalidInput as exc:
        return (
            f"due since {due.isoformat()}, but its stored rule no longer parses ({exc}): the "
            "jobs loop skips it until the rule is edited"
        )
    if jobs.alive:
        loop = f"{_WHAT.get(schedule.kind, 'will fire')} by the jobs loop {jobs.within()}"
    else:
        loop = jobs.waiting(zone)
    if due < day:
        return f"overdue since {due.isoformat()} — {loop}"
    if schedule.last_fired_on == day:
        return "due today, already fired today: the jobs loop only moves it to its next date"
    return f"due today — {loop}"


def pulled_state(schedule: Schedule, day: date, jobs: JobsHealth, zone: tzinfo) -> str:
    """What "now" did and what will come of it: every entry point's answer to "now"."""
    state = due_state(schedule, day, jobs, zone)
    if state is not None:
        return state
    due = schedule.next_due.isoformat() if schedule.next_due else "none"
    return (
        f"today ({day.isoformat()}) was already processed and cannot fire twice: nothing "
        f"more fires today; next due {due}"
    )


_WHAT = {"task": "will be created", "remind": "will fire", "backup": "will run"}


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
    side: str | None = None,
    actor: str = "cli",
) -> Schedule:
    """Validate everything first, so a refused schedule writes nothing. `side`: the one the
    caller decided (core/sides.py), which its tasks and reminders take."""
    now = aware(now)
    day = today(now, zone)
    canonical = str(parse_rule(rule))
    values: dict[str, Any] = {
        "title": check_title(title),
        "body": check_body(body),
        "kind": _check_kind(kind),
        "rule": canonical,
        "project": check_project(project),
        "side": check_side(side),
        "priority": check_priority(priority),
        "missed": _check_missed(missed),
        "enabled": True,
        "created_at": now,
        "updated_at": now,
    }
    first = day if start_on is None else check_date(start_on, "start date")
    values["start_on"] = first
    values["next_due"] = first_due(canonical, first, day)
    inserted = conn.execute(insert(schedules).values(values).returning(schedules.c.id))
    schedule_id = int(inserted.scalar_one())
    events.record(
        conn,
        now,
        actor=actor,
        kind="schedule.created",
        subject=_subject(schedule_id),
        details={
            "title": values["title"],
            "kind": kind,
            "rule": canonical,
            "side": values["side"],
        },
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
    side: str = UNSET,
    actor: str = "cli",
    view: SideView = EVERY_SIDE,
) -> Schedule:
    """Change what is given. A new rule or start recomputes `next_due`; other edits keep it,
    so renaming an overdue schedule does not lose the fire it owes. A side is moved, never
    taken away (the caller checks it is configured); tasks it made keep theirs."""
    now = aware(now)
    current = get_schedule(conn, schedule_id, view)
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
        changes["start_on"] = check_date(start_on, "start date")
    if project is not UNSET:
        changes["project"] = check_project(project)
    if priority is not UNSET:
        changes["priority"] = check_priority(priority)
    if missed is not UNSET:
        changes["missed"] = _check_missed(missed)
    if side is not UNSET:
        changes["side"] = check_side(side)
        if changes["side"] is None:
            raise InvalidInput("a schedule's side is moved, never taken away: name a side")
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
    conn: Connection,
    now: datetime,
    schedule_id: int,
    *,
    actor: str = "cli",
    view: SideView = EVERY_SIDE,
) -> Schedule:
    """Stop firing. Pausing a paused schedule changes nothing and records nothing. The
    event keeps the date it was due next, the first the pause may skip."""
    current = get_schedule(conn, schedule_id, view)
    if not current.enabled:
        return current
    conn.execute(
        update(schedules)
        .where(schedules.c.id == schedule_id)
        .values(enabled=False, updated_at=aware(now))
    )
    events.record(
        conn,
        now,
        actor=actor,
        kind="schedule.paused",
        subject=_subject(schedule_id),
        details={"next_due": iso_day(current.next_due)},
    )
    return get_schedule(conn, schedule_id)


def resume_schedule(
    conn: Connection,
    now: datetime,
    zone: tzinfo,
    schedule_id: int,
    *,
    actor: str = "cli",
    view: SideView = EVERY_SIDE,
) -> Schedule:
    """Fire again from today on: the paused time is not backfilled, and the event counts
    the dates it skipped (from the one due when paused up to the new next date)."""
    current = get_schedule(conn, schedule_id, view)
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
        details={"next_due": next_due.isoformat(), **_dropped(current, next_due)},
    )
    return get_schedule(conn, schedule_id)


def _dropped(schedule: Schedule, until: date) -> dict[str, Any]:
    """{"skipped", "first", "last"}: the schedule's dates from its `next_due` up to `until`
    (not included), which will never fire. At most MAX_COUNT are counted ("skipped" then
    says at least that many)."""
    start = schedule.next_due
    if start is None or start >= until:
        return {"skipped": 0}
    rule = parse_rule(schedule.rule)
    first = last = start
    count = 1
    while count < MAX_COUNT:
        following = rule.next_after(last, schedule.start_on)
        if following is None or following >= until:
            break
        last = following
        count += 1
    return {"skipped": count, "first": first.isoformat(), "last": last.isoformat()}


def pull_now(
    conn: Connection,
    now: datetime,
    zone: tzinfo,
    schedule_id: int,
    *,
    actor: str = "cli",
    view: SideView = EVERY_SIDE,
) -> Schedule:
    """ "now": make the schedule due today at the latest, nothing else. The next jobs tick
    does the firing (on PostgreSQL it is woken at commit); pressing it twice a day still
    fires once. `pulled_state` words the outcome.

    - `next_due` only moves earlier: `min(next_due, today)`, so an overdue schedule keeps
      the dates it owes (its `missed` policy fires them).
    - `missed=skip` drops past dates by design, and a past date that is not today fires
      nothing under it: "now" there means today, and the dropped dates are counted in the
      event (`show_schedule` lists them).
    - Today already processed (a fire for today's date exists): nothing can fire today
      again, so nothing changes and nothing is recorded.
    """
    current = get_schedule(conn, schedule_id, view)
    if not current.enabled:
        raise Conflict(f"schedule {schedule_id} is paused: resume it first")
    day = today(now, zone)
    if _fired_for(conn, schedule_id, day):
        return current
    due = current.next_due
    target = day if due is None or due > day or current.missed == "skip" else due
    wake_jobs(conn)
    if target == due:
        return current  # already due: the owed dates stand; the loop is woken all the same
    conn.execute(
        update(schedules)
        .where(schedules.c.id == schedule_id)
        .values(next_due=target, updated_at=aware(now))
    )
    details: dict[str, Any] = {"next_due": target.isoformat(), "was": iso_day(due)}
    if due is not None and due < target:
        details.update(_dropped(current, target))
    events.record(
        conn,
        now,
        actor=actor,
        kind="schedule.pulled_now",
        subject=_subject(schedule_id),
        details=details,
    )
    return get_schedule(conn, schedule_id)


def _fired_for(conn: Connection, schedule_id: int, day: date) -> bool:
    """Whether `day` was processed for the schedule (uq_fires_schedule_id_fire_date)."""
    found = conn.execute(
        select(fires.c.id).where(fires.c.schedule_id == schedule_id, fires.c.fire_date == day)
    ).first()
    return found is not None


def delete_schedule(
    conn: Connection,
    now: datetime,
    schedule_id: int,
    *,
    actor: str = "cli",
    view: SideView = EVERY_SIDE,
) -> Schedule:
    """Soft delete: fires and events keep naming the row; every reader treats it as gone."""
    current = get_schedule(conn, schedule_id, view)
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


# "now" on PostgreSQL sends NOTIFY on this channel at commit; the jobs loop LISTENs on it.
WAKE_CHANNEL = "ondeck_jobs"
# Marks the transaction of a change that wants the jobs loop to tick now. The entry point
# that commits it wakes the loop running in its own process (entrypoints/gateway.py): the
# only way on SQLite, which has no NOTIFY.
WAKE_REQUESTED = "ondeck.wake_jobs"


def wake_jobs(conn: Connection) -> None:
    """Ask the jobs loops to tick now, once the transaction commits: every LISTENing one on
    PostgreSQL, and on either store the one in the committing entry point's process."""
    conn.info[WAKE_REQUESTED] = True
    if is_postgres(conn):
        conn.execute(text("SELECT pg_notify(:channel, '')"), {"channel": WAKE_CHANNEL})


def iso_day(day: date | None) -> str | None:
    return day.isoformat() if day else None
