"""Firing: turning due schedules into tasks and fires (the jobs tick's first step).

For each enabled schedule with `next_due <= today`, in batches, each batch one transaction:

    1. read the due schedules (`ix_schedules_due`; on PostgreSQL `FOR UPDATE SKIP LOCKED`,
       so several jobs processes share the work without waiting for each other; on SQLite
       the write transaction is BEGIN IMMEDIATE, so they take turns);
    2. work out the fire dates from the `missed` policy (below);
    3. advance `next_due` to the first occurrence after today, guarded by the `next_due`
       that was read: a schedule somebody else advanced is left alone;
    4. insert the tasks (`source = "sch:{id}:{fire_date}"`, UNIQUE) and the `fires` rows
       (UNIQUE per schedule and date), both ON CONFLICT DO NOTHING, and their events.

Running the same tick twice, or two processes at once, therefore creates each task once.

Missed days (the jobs process was down) follow the schedule's `missed` policy:
    latest  one fire for the latest due date: max(next_due, last occurrence <= today),
            the earlier dates counted in `skipped`;
    all     one fire per missed date (the last 31; the first kept one counts the rest);
    skip    no fire for past dates (today still fires); an event says what was skipped.

Backup schedules are not fired here: their backup takes time, so the jobs tick's backups
step starts it (`backup_runs.claim_due`) and, once it succeeded, records the fire through
`record_fire`: the same guarded advance, `fires` row and event as every other fire.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from typing import Any, Protocol

from sqlalchemy import Connection, Engine, bindparam, select, update

from ondeck.core import logs
from ondeck.core.clock import aware, today
from ondeck.core.errors import InvalidInput
from ondeck.core.humanize import counted
from ondeck.core.models import MissedPolicy, ScheduleKind
from ondeck.core.rules import Rule
from ondeck.core.rules import parse as parse_rule
from ondeck.db.dialect import insert_for, is_postgres
from ondeck.db.tables import SCHEDULES_LIVE, fires, schedules, tasks
from ondeck.host.settings import Settings
from ondeck.system import events
from ondeck.work import backlog

log = logs.logger("ondeck.firing")

BATCH = 300
# missed=all fires at most this many past dates: a month of daily work, not years of it.
MAX_BACKFILL = 31
# Counting missed dates is a walk over the rule; this bounds a pathological one.
MAX_WALK = 100_000


@dataclass
class FireResult:
    fired: int = 0  # fires recorded
    tasks: int = 0  # tasks created
    coalesced: int = 0  # missed dates folded into a later fire (missed=latest)
    skipped: int = 0  # missed dates dropped without a fire (missed=skip)
    schedules: int = 0  # schedules advanced
    errors: int = 0  # schedules whose stored rule cannot be read
    batches: int = 0

    def add(self, other: FireResult) -> None:
        for key in self.__dataclass_fields__:
            setattr(self, key, getattr(self, key) + getattr(other, key))

    def as_dict(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in self.__dataclass_fields__}


class DueRow(Protocol):
    """What planning reads of a due schedule (a `schedules` row, or a record like it)."""

    @property
    def id(self) -> int: ...
    @property
    def rule(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def missed(self) -> str: ...
    @property
    def start_on(self) -> date: ...
    @property
    def next_due(self) -> date: ...
    @property
    def title(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def project(self) -> str | None: ...
    @property
    def side(self) -> str | None: ...
    @property
    def last_fired_on(self) -> date | None: ...
    @property
    def last_fired_at(self) -> datetime | None: ...


@dataclass
class _Plan:
    """What one due schedule does: its fires (date, skipped) and its next `next_due`."""

    row: DueRow
    new_next: date
    fires: list[tuple[date, int]] = field(default_factory=list)
    dropped: list[date] = field(default_factory=list)  # missed=skip: dates not fired


class _Raced(Exception):
    """A guarded advance matched fewer rows than were read: redo the batch row by row."""


def due_dates(rule: Rule, start: date, next_due: date, day: date, *, limit: int) -> list[date]:
    """The due dates in [next_due, day]: `next_due` itself (it may have been pulled "now"
    to a day that is not an occurrence) and every occurrence after it, oldest first."""
    found = [next_due]
    current = next_due
    while len(found) < limit:
        current = rule.next_after(current, start)
        if current is None or current > day:
            break
        found.append(current)
    return found


def plan(row: DueRow, day: date) -> _Plan:
    """The fires of one due schedule on `day`. Pure: no database."""
    rule = parse_rule(row.rule)
    start, next_due = row.start_on, row.next_due
    new_next = rule.next_after(max(day, next_due), start)
    result = _Plan(row=row, new_next=new_next)
    if row.kind == ScheduleKind.BACKUP or row.missed == MissedPolicy.LATEST:
        last = rule.last_on_or_before(day, start)
        fire_date = max(next_due, last) if last is not None else next_due
        skipped = 0
        if fire_date > next_due:
            # next_due and every occurrence strictly between it and the fire date.
            skipped = len(due_dates(rule, start, next_due, fire_date, limit=MAX_WALK)) - 1
        result.fires.append((fire_date, skipped))
    elif row.missed == MissedPolicy.ALL:
        dates = due_dates(rule, start, next_due, day, limit=MAX_WALK)
        kept = dates[-MAX_BACKFILL:]
        result.fires.append((kept[0], len(dates) - len(kept)))
        result.fires.extend((d, 0) for d in kept[1:])
    else:  # skip: the past is dropped, today (if due today) still fires
        dates = due_dates(rule, start, next_due, day, limit=MAX_WALK)
        if dates[-1] == day:
            result.fires.append((day, 0))
            result.dropped = dates[:-1]
        else:
            result.dropped = dates
    return result


def _select_due(conn: Connection, day: date, batch: int, exclude: set[int]) -> list[Any]:
    query = (
        select(
            schedules.c.id,
            schedules.c.title,
            schedules.c.body,
            schedules.c.kind,
            schedules.c.rule,
            schedules.c.project,
            schedules.c.side,
            schedules.c.start_on,
            schedules.c.next_due,
            schedules.c.missed,
            schedules.c.priority,
            schedules.c.last_fired_on,
            schedules.c.last_fired_at,
        )
        .where(
            SCHEDULES_LIVE,
            schedules.c.next_due <= day,
            schedules.c.kind != ScheduleKind.BACKUP.value,
        )
        .order_by(schedules.c.next_due, schedules.c.id)
        .limit(batch)
    )
    if exclude:
        query = query.where(schedules.c.id.not_in(sorted(exclude)))
    if is_postgres(conn):
        query = query.with_for_update(skip_locked=True)
    return list(conn.execute(query))


_ADVANCE = (
    update(schedules)
    .where(schedules.c.id == bindparam("sid"), schedules.c.next_due == bindparam("read"))
    .values(next_due=bindparam("new"))
)
_ADVANCE_FIRED = _ADVANCE.values(
    last_fired_on=bindparam("fired_on"), last_fired_at=bindparam("fired_at")
)


def _advance(conn: Connection, now: datetime, plans: list[_Plan], *, careful: bool) -> list[_Plan]:
    """The compare-and-set on `next_due`; returns the plans whose schedule it moved.

    Under the batch's row locks (PostgreSQL) or write lock (SQLite) every guard matches, so
    the fast path sends one statement per kind; `careful` checks each row on its own.
    """
    fired = [p for p in plans if p.fires]
    quiet = [p for p in plans if not p.fires]
    if careful:
        moved = []
        for p in plans:
            stmt = _ADVANCE_FIRED if p.fires else _ADVANCE
            if conn.execute(stmt, _advance_params(p, now)).rowcount == 1:
                moved.append(p)
        return moved
    matched = 0
    if fired:
        matched += conn.execute(_ADVANCE_FIRED, [_advance_params(p, now) for p in fired]).rowcount
    if quiet:
        matched += conn.execute(_ADVANCE, [_advance_params(p, now) for p in quiet]).rowcount
    if matched != len(plans):
        raise _Raced
    return plans


def _advance_params(p: _Plan, now: datetime) -> dict[str, Any]:
    params = {"sid": p.row.id, "read": p.row.next_due, "new": p.new_next}
    if p.fires:
        params.update(fired_on=p.fires[-1][0], fired_at=now)
    return params


def _existing_task(conn: Connection, source: str) -> int | None:
    return conn.execute(select(tasks.c.id).where(tasks.c.source == source)).scalar()


def _record(conn: Connection, now: datetime, plans: list[_Plan], actor: str) -> FireResult:
    """Tasks, fires and events for plans whose advance went through (same transaction).

    A few statements per batch, not per schedule: 10,000 fires must fit in a tick.
    """
    result = FireResult(schedules=len(plans))
    wanted: list[dict[str, Any]] = []
    for p in plans:
        row = p.row
        if row.kind != ScheduleKind.TASK:
            continue
        for fire_date, _ in p.fires:
            wanted.append(
                {
                    "source": _source(row.id, fire_date),
                    "title": row.title,
                    "body": row.body,
                    "priority": row.priority,
                    "project": row.project,
                    # What a schedule fires is of its side (sides are hard partitions).
                    "side": row.side,
                    "due_on": fire_date,
                    "schedule_id": row.id,
                }
            )
    created = backlog.insert_many_from_schedule(conn, now, wanted, actor=actor)
    result.tasks = len(created)
    rows: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    for p in plans:
        row = p.row
        for fire_date, skipped in p.fires:
            task_id = None
            if row.kind == ScheduleKind.TASK:
                source = _source(row.id, fire_date)
                task_id = created.get(source) or _existing_task(conn, source)
            rows.append(
                {
                    "schedule_id": row.id,
                    "fire_date": fire_date,
                    "fired_at": now,
                    "task_id": task_id,
                    "skipped": skipped,
                }
            )
        if p.dropped:
            result.skipped += len(p.dropped)
            notes.append(
                {
                    "actor": actor,
                    "kind": "schedule.skipped",
                    "subject": f"schedule:{row.id}",
                    "details": {
                        "dates": len(p.dropped),
                        "first": p.dropped[0].isoformat(),
                        "last": p.dropped[-1].isoformat(),
                        "next_due": p.new_next.isoformat(),
                    },
                }
            )
    inserted: set[tuple[int, date]] = set()
    if rows:
        stmt = (
            insert_for(conn, fires)
            .on_conflict_do_nothing(index_elements=[fires.c.schedule_id, fires.c.fire_date])
            .returning(fires.c.schedule_id, fires.c.fire_date)
        )
        inserted = {(r.schedule_id, r.fire_date) for r in conn.execute(stmt, rows)}
    fresh = {schedule_id for schedule_id, _ in inserted}
    for p in plans:
        if p.fires and p.row.id not in fresh:
            # Every date was processed before ("now" pressed again): nothing fired now, so
            # the schedule keeps saying when it really did.
            conn.execute(
                update(schedules)
                .where(schedules.c.id == p.row.id)
                .values(last_fired_on=p.row.last_fired_on, last_fired_at=p.row.last_fired_at)
            )
    for fire in rows:
        if (fire["schedule_id"], fire["fire_date"]) not in inserted:
            continue  # that date was already processed ("now" pressed twice, a rerun)
        result.fired += 1
        result.coalesced += fire["skipped"]
        notes.append(
            {
                "actor": actor,
                "kind": "schedule.fired",
                "subject": f"schedule:{fire['schedule_id']}",
                "details": {
                    "fire_date": fire["fire_date"].isoformat(),
                    "skipped": fire["skipped"],
                    "task_id": fire["task_id"],
                },
            }
        )
    events.record_many(conn, now, notes)
    return result


def _source(schedule_id: int, fire_date: date) -> str:
    return f"sch:{schedule_id}:{fire_date.isoformat()}"


def _fire_batch(
    conn: Connection,
    now: datetime,
    day: date,
    batch: int,
    bad: set[int],
    actor: str,
    *,
    careful: bool = False,
) -> tuple[int, FireResult]:
    """One batch in the caller's transaction; returns (rows read, result)."""
    rows = _select_due(conn, day, batch, bad)
    plans = []
    result = FireResult()
    for row in rows:
        try:
            plans.append(plan(row, day))
        except (InvalidInput, ValueError) as exc:
            # A stored rule that no longer parses must not stop every other schedule.
            log.error("schedule %s: cannot read rule %r: %s", row.id, row.rule, exc)
            bad.add(row.id)
            result.errors += 1
    moved = _advance(conn, now, plans, careful=careful)
    if len(moved) < len(plans):
        # Somebody else advanced these: not ours to fire, and not to be read again here.
        bad.update(p.row.id for p in plans if p not in moved)
    result.add(_record(conn, now, moved, actor))
    result.batches = 1
    return len(rows), result


def fire_due(
    target: Engine | Connection,
    now: datetime,
    zone: tzinfo,
    *,
    batch: int = BATCH,
    actor: str = "jobs",
) -> FireResult:
    """Fire every task and remind schedule due on `now`'s date in `zone`.

    With an engine each batch commits on its own (a crash loses at most the batch in
    flight, which a rerun redoes); with a connection everything runs in its transaction.
    """
    now = aware(now)
    day = today(now, zone)
    total = FireResult()
    bad: set[int] = set()
    while True:
        if isinstance(target, Connection):
            seen, result = _fire_batch(target, now, day, batch, bad, actor, careful=True)
        else:
            try:
                with target.begin() as conn:
                    seen, result = _fire_batch(conn, now, day, batch, bad, actor)
            except _Raced:
                with target.begin() as conn:
                    seen, result = _fire_batch(conn, now, day, batch, bad, actor, careful=True)
        total.add(result)
        if seen < batch:
            return total


def record_fire(
    conn: Connection, day: date, fired_at: datetime, schedule_id: int, *, actor: str
) -> bool:
    """Fire one schedule that is due on `day`, in the caller's transaction: how a backup
    schedule's fire is recorded once its backup succeeded (`fired_at`).

    False when nothing fired: it is no longer due on `day` (edited, paused, removed,
    advanced by another run), and nothing changes; or that date's fire was recorded before
    ("now" pressed after the day's backup), and `next_due` advances as for any fire.
    """
    row = conn.execute(
        select(schedules).where(
            schedules.c.id == schedule_id, SCHEDULES_LIVE, schedules.c.next_due <= day
        )
    ).first()
    if row is None:
        return False
    fired_at = aware(fired_at)
    moved = _advance(conn, fired_at, [plan(row, day)], careful=True)
    if not moved:
        return False
    return _record(conn, fired_at, moved, actor).fired > 0


def fire_step(engine: Engine, now: datetime, settings: Settings) -> dict[str, Any]:
    """The jobs tick's first step: due task and remind schedules."""
    result = fire_due(engine, now, settings.zone)
    if result.fired or result.skipped or result.errors:
        log.info(
            "fired %s (%s), coalesced %s, skipped %d, %s",
            counted(result.fired, "schedule date"),
            counted(result.tasks, "task"),
            counted(result.coalesced, "missed day"),
            result.skipped,
            counted(result.errors, "unreadable rule"),
        )
    summary: dict[str, Any] = {
        "fired": result.fired,
        "tasks": result.tasks,
        "coalesced": result.coalesced,
        "skipped": result.skipped,
    }
    if result.errors:
        summary["errors"] = result.errors
    return summary
