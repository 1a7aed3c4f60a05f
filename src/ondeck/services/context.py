"""What a new session is told: the one service behind `ondeck context`, the session hook, the
API, the dashboard's Today page and the MCP tool.

Trap one of the field report lives here. The jobs loop moves `next_due` forward the moment it
processes a reminder, so "what is due" alone loses the reminder that fired today. Reminders
are read from the record of the fire (`fires`), by fire date and by the instant it was
processed, plus the ones due and not processed yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Row, Select, and_, desc, func, or_, select, text

from ondeck.core.clock import aware, iso, start_of_day, today
from ondeck.core.humanize import span
from ondeck.core.models import BackupStatus, ScheduleKind, Task, TaskStatus
from ondeck.db.tables import backups, fires, schedules, tasks, workers
from ondeck.services.brief import Brief, BriefRequest, build_brief
from ondeck.services.task_statements import READY_ORDER, status_is, task_from_row

if TYPE_CHECKING:
    from ondeck.core.config import Settings

DEFAULT_BUDGET = 20
DEFAULT_CHARS = 4000
BACKUP_STALE_AFTER = timedelta(days=2)
JOBS_SILENT_TICKS = 3


@dataclass(frozen=True, kw_only=True, slots=True)
class Reminder:
    schedule_id: int
    title: str
    body: str
    rule: str
    rule_text: str
    project: str | None
    fire_date: date | None
    fired_at: datetime | None  # None: due but not processed yet ("pending")


@dataclass(frozen=True, kw_only=True, slots=True)
class Running:
    task: Task
    expired: bool
    expired_for: timedelta | None
    releases_at: datetime  # when the reaper gives it back if the holder stays silent


@dataclass(frozen=True, kw_only=True, slots=True)
class Due:
    task: Task
    overdue_days: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Warning:
    code: str
    message: str


@dataclass(kw_only=True)
class Context:
    date: date
    timezone: str
    generated_at: datetime
    project: str | None
    warnings: list[Warning] = field(default_factory=list)
    reminders: list[Reminder] = field(default_factory=list)
    running: list[Running] = field(default_factory=list)
    due: list[Due] = field(default_factory=list)
    backlog: list[Task] = field(default_factory=list)
    # How many of each list were left out to stay within the budget.
    omitted: dict[str, int] = field(default_factory=dict)
    budget: int = DEFAULT_BUDGET
    # What the session should know that is not a task (services/brief.py), when asked.
    brief: Brief | None = None


@lru_cache(maxsize=1024)
def _describe_rule(rule: str) -> str:
    from ondeck.core.rules import RuleError, parse

    try:
        return parse(rule).describe()
    except RuleError:
        return rule


def _scope(column: Any, project: str | None) -> Any:
    """With a project: that project's items and the unscoped ones; without: everything."""
    if project is None:
        return True
    return or_(column == project, column.is_(None))


# Exactly the predicate of ix_schedules_due: SQLite renders `schedules.c.enabled` as
# `enabled = 1`, which its planner does not match to the index (the jobs tick does the same).
_SCHEDULE_LIVE_ENABLED = text("enabled AND deleted_at IS NULL")


def _task_count(project: str | None, *where: Any) -> Any:
    """A scalar subquery: how many tasks match `where` within the project scope."""

    def count(*more: Any) -> Any:
        return select(func.count()).select_from(tasks).where(*where, *more).scalar_subquery()

    if project is None:
        return count()
    # The project's tasks and the unscoped ones counted apart and added (they are disjoint):
    # each count then reads one index alone (ix_tasks_ready_project for READY tasks), where
    # PostgreSQL reads the table to count an OR of the two.
    return count(tasks.c.project == project) + count(tasks.c.project.is_(None))


_SHOWN = (
    schedules.c.id,
    schedules.c.title,
    schedules.c.body,
    schedules.c.rule,
    schedules.c.project,
)


def _live_reminders(project: str | None) -> tuple[Any, ...]:
    return (
        schedules.c.kind == ScheduleKind.REMIND.value,
        schedules.c.deleted_at.is_(None),
        _scope(schedules.c.project, project),
    )


def _fires_of(day: date, zone: tzinfo) -> Any:
    """Today's fires: by fire date, or processed today (late, for an earlier date)."""
    day_start, day_end = start_of_day(day, zone), start_of_day(day + timedelta(days=1), zone)
    return or_(
        fires.c.fire_date == day,
        and_(fires.c.fired_at >= day_start, fires.c.fired_at < day_end),
    )


def _fired_reminders(conn: Connection, today_fires: Any, project: str | None) -> list[Any]:
    """(schedule, fire) for every live reminder in scope that fired today, once each, in
    order of that fire."""
    # Plain on purpose (no join, no ORDER BY): either one made SQLite walk every fire ever
    # recorded in ix_fires_fired_at order instead of asking ix_fires_fire_date and
    # ix_fires_fired_at for today's.
    found = conn.execute(
        select(fires.c.id, fires.c.schedule_id, fires.c.fire_date, fires.c.fired_at).where(
            today_fires
        )
    ).all()
    if not found:
        return []
    # A schedule that fired twice today (e.g. "now", then its own date) is shown once, with
    # its first fire of the day (the first recorded, when one tick fired several dates).
    first: dict[int, Any] = {}
    for fire in sorted(found, key=lambda f: (f.fired_at, f.id)):
        first.setdefault(fire.schedule_id, fire)
    shown = {
        row.id: row
        for row in conn.execute(
            select(*_SHOWN).where(
                schedules.c.id.in_(select(fires.c.schedule_id).where(today_fires)),
                *_live_reminders(project),
            )
        )
    }
    kept = sorted(
        (fire for fire in first.values() if fire.schedule_id in shown),
        key=lambda f: (f.fired_at, f.schedule_id),
    )
    return [(shown[fire.schedule_id], fire) for fire in kept]


def _pending_reminders(today_fires: Any, day: date, project: str | None) -> tuple[Any, Any]:
    """(query, count) of the reminders due and not processed yet, in order."""
    where = (
        *_live_reminders(project),
        _SCHEDULE_LIVE_ENABLED,
        schedules.c.next_due <= day,
        schedules.c.id.not_in(select(fires.c.schedule_id).where(today_fires)),
    )
    query = select(*_SHOWN).where(*where).order_by(schedules.c.next_due, schedules.c.id)
    return query, select(func.count()).select_from(schedules).where(*where).scalar_subquery()


def _reminder(row: Any, fire_date: date | None, fired_at: datetime | None) -> Reminder:
    return Reminder(
        schedule_id=row.id,
        title=row.title,
        body=row.body,
        rule=row.rule,
        rule_text=_describe_rule(row.rule),
        project=row.project,
        fire_date=fire_date,
        fired_at=fired_at,
    )


def _warnings(
    conn: Connection, now: datetime, zone: tzinfo, tick_seconds: float, day: date
) -> list[Warning]:
    found: list[Warning] = []
    last_tick = conn.execute(select(func.max(workers.c.last_tick_at))).scalar()
    if last_tick is None:
        found.append(Warning(code="jobs_not_running", message="the jobs loop has never ticked"))
    elif now - last_tick > timedelta(seconds=JOBS_SILENT_TICKS * tick_seconds):
        found.append(
            Warning(
                code="jobs_not_running",
                message=f"the jobs loop has not ticked since {iso(last_tick, zone)} "
                f"({span(now - last_tick)} ago): schedules will not fire",
            )
        )
    stale = (status_is(TaskStatus.RUNNING), tasks.c.lease_until <= now)
    expired = conn.execute(
        select(tasks.c.id, tasks.c.lease_owner).where(*stale).order_by(tasks.c.lease_until).limit(6)
    ).all()
    if expired:
        total = len(expired)
        if total == 6:  # a full page: there may be more
            total = int(conn.execute(select(_task_count(None, *stale))).scalar_one())
        named = ", ".join(f"task {r.id} ({r.lease_owner})" for r in expired[:5])
        more = f" and {total - 5} more" if total > 5 else ""
        found.append(
            Warning(
                code="stale_leases",
                message=f"{total} lease(s) past their end, holder silent: {named}{more}",
            )
        )
    last_backup = conn.execute(
        select(backups)
        .where(backups.c.status != BackupStatus.RUNNING.value)
        .order_by(desc(backups.c.id))
        .limit(1)
    ).first()
    last_ok = conn.execute(
        select(func.max(backups.c.finished_at)).where(backups.c.status == BackupStatus.OK.value)
    ).scalar()
    if last_backup is not None and last_backup.status in (
        BackupStatus.FAILED,
        BackupStatus.ABANDONED,
    ):
        error = _clip((last_backup.error or last_backup.status).splitlines()[0], 200)
        found.append(
            Warning(
                code="backup_failed",
                message=f"the last backup ({iso(last_backup.started_at, zone)}) failed: {error}",
            )
        )
    elif last_ok is None or now - last_ok > BACKUP_STALE_AFTER:
        since = f"since {iso(last_ok, zone)}" if last_ok else "ever"
        found.append(
            Warning(code="backup_stale", message=f"no successful backup in 2 days ({since})")
        )
    overdue = conn.execute(
        select(func.count(), func.min(schedules.c.next_due)).where(
            _SCHEDULE_LIVE_ENABLED, schedules.c.next_due < day
        )
    ).one()
    if overdue[0]:
        found.append(
            Warning(
                code="schedules_overdue",
                message=f"{overdue[0]} schedule(s) due since {overdue[1].isoformat()} "
                "not processed: the jobs loop is behind",
            )
        )
    return found


def build_context(
    conn: Connection,
    now: datetime,
    project: str | None = None,
    budget: int = DEFAULT_BUDGET,
    *,
    zone: tzinfo,
    lease_grace: timedelta = timedelta(hours=6),
    tick_seconds: float = 60.0,
    char_budget: int = DEFAULT_CHARS,
    extra_warnings: Sequence[tuple[str, str]] = (),
    brief: BriefRequest | None = None,
) -> Context:
    now = aware(now)
    day = today(now, zone)
    ctx = Context(
        date=day,
        timezone=str(zone),
        generated_at=now,
        project=project,
        budget=budget,
        warnings=[
            *_warnings(conn, now, zone, tick_seconds, day),
            *(Warning(code=code, message=message) for code, message in extra_warnings),
        ],
    )
    # The lists share the budget in order (reminders, running, due, backlog): each reads at
    # most the room left, and is counted in full only when it filled that room. The counts
    # are read together at the end, in one round trip.
    room = max(budget, 0)
    totals: dict[str, Any] = {}  # per part: how many there are, or the count to ask for

    def page(name: str, query: Select[Any], count: Any) -> Sequence[Row[Any]]:
        nonlocal room
        rows = conn.execute(query.limit(room)).all() if room > 0 else []
        totals[name] = count if len(rows) == room else len(rows)
        room -= len(rows)
        return rows

    today_fires = _fires_of(day, zone)
    fired = _fired_reminders(conn, today_fires, project)
    totals["fired"] = len(fired)
    ctx.reminders = [_reminder(r, fire.fire_date, fire.fired_at) for r, fire in fired[:room]]
    room -= len(ctx.reminders)
    pending_rows = page("pending", *_pending_reminders(today_fires, day, project))
    ctx.reminders += [_reminder(r, None, None) for r in pending_rows]

    scope = () if project is None else (_scope(tasks.c.project, project),)
    running_where = (status_is(TaskStatus.RUNNING),)
    running_rows = page(
        "running",
        select(tasks).where(*running_where, *scope).order_by(tasks.c.lease_until, tasks.c.id),
        _task_count(project, *running_where),
    )
    due_where = (status_is(TaskStatus.READY), tasks.c.due_on <= day)
    due_rows = page(
        "due",
        select(tasks).where(*due_where, *scope).order_by(*READY_ORDER),
        _task_count(project, *due_where),
    )
    backlog_where = (status_is(TaskStatus.READY), tasks.c.due_on.is_(None))
    backlog_rows = page(
        "backlog",
        select(tasks).where(*backlog_where, *scope).order_by(tasks.c.priority, tasks.c.id),
        _task_count(project, *backlog_where),
    )
    ctx.running = [running_state(task_from_row(r), now, lease_grace) for r in running_rows]
    ctx.due = [
        Due(task=(t := task_from_row(r)), overdue_days=(day - t.due_on).days)  # type: ignore[operator]
        for r in due_rows
    ]
    ctx.backlog = [task_from_row(r) for r in backlog_rows]

    asked = [name for name, total in totals.items() if not isinstance(total, int)]
    if asked:
        counted = conn.execute(select(*(totals[name] for name in asked))).one()
        totals.update(zip(asked, counted, strict=True))
    totals["reminders"] = totals.pop("fired") + totals.pop("pending")
    for name in ("reminders", "running", "due", "backlog"):
        left_out = int(totals[name]) - len(getattr(ctx, name))
        if left_out > 0:
            ctx.omitted[name] = left_out
    _fit_characters(ctx, zone, char_budget)
    if brief is not None:
        ctx.brief = build_brief(conn, now, brief, day)
        _fit_for_hook(ctx, zone)
    return ctx


def context_for(
    conn: Connection,
    now: datetime,
    settings: Settings,
    project: str | None = None,
    budget: int = DEFAULT_BUDGET,
    *,
    char_budget: int = DEFAULT_CHARS,
    brief: BriefRequest | None = None,
) -> Context:
    """`build_context` with the configured zone, lease grace and tick, and the session
    records' warnings (unclassified sessions, a stuck spool): what entry points call."""
    from ondeck.services.sessions import context_warnings

    return build_context(
        conn,
        now,
        project,
        budget,
        zone=settings.zone,
        lease_grace=settings.lease_grace,
        tick_seconds=settings.tick_seconds,
        char_budget=char_budget,
        extra_warnings=context_warnings(conn, now, settings),
        brief=brief,
    )


def _clip(text: str, limit: int) -> str:
    """At most `limit` characters, keeping both ends: a tool's error starts with what failed
    and ends with why (a long file path in between must not cut off the reason)."""
    if len(text) <= limit:
        return text
    half = (limit - 1) // 2
    return f"{text[:half]}…{text[-half:]}"


def running_state(task: Task, now: datetime, grace: timedelta) -> Running:
    """A RUNNING task with its lease state: expired for how long, released when."""
    assert task.lease_until is not None  # RUNNING has a lease end: a CHECK guarantees it
    expired = task.lease_until <= now
    return Running(
        task=task,
        expired=expired,
        expired_for=now - task.lease_until if expired else None,
        releases_at=task.lease_until + grace,
    )


def _fit_characters(ctx: Context, zone: tzinfo, limit: int) -> None:
    """Drop items from the least urgent end until the Markdown fits the character budget."""
    from ondeck.services.context_render import fit_markdown

    fit_markdown(ctx, zone, limit, ("backlog", "due", "running", "reminders"))


def _fit_for_hook(ctx: Context, zone: tzinfo) -> None:
    """With a brief, the hook's whole output must stay under 9,000 characters: leave the
    brief its minimum room, counting what the hook's JSON spends (services/brief_render)."""
    from ondeck.services import brief_render as b
    from ondeck.services.context_render import fit_markdown

    limit = b.HOOK_OUTPUT_MAX - b.HOOK_WRAPPER - b.HOOK_NOTES_ROOM - b.BRIEF_MIN
    fit_markdown(ctx, zone, limit, ("backlog", "due", "running", "reminders"), measure=b.cost)
