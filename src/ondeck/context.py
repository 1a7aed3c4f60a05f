"""What a new session is told: the one service behind `ondeck context`, the session hook, the
API, the dashboard's Today page and the MCP tool.

Trap one of the field report lives here. The jobs loop moves `next_due` forward the moment it
processes a reminder, so "what is due" alone loses the reminder that fired today. Reminders
are read from the record of the fire (`fires`), by fire date and by the instant it was
processed, plus the ones due and not processed yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, and_, desc, func, or_, select

from ondeck.backlog import Status, Task, task_from_row
from ondeck.clock import aware, iso, start_of_day, today
from ondeck.db.tables import backups, fires, schedules, tasks, workers
from ondeck.humanize import span

if TYPE_CHECKING:
    from ondeck.config import Settings

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


def _describe_rule(text: str) -> str:
    from ondeck.rules import RuleError, parse

    try:
        return parse(text).describe()
    except RuleError:
        return text


def _scope(column: Any, project: str | None) -> Any:
    """With a project: that project's items and the unscoped ones; without: everything."""
    if project is None:
        return True
    return or_(column == project, column.is_(None))


def _reminders(
    conn: Connection, now: datetime, zone: tzinfo, project: str | None
) -> list[Reminder]:
    day = today(now, zone)
    day_start, day_end = start_of_day(day, zone), start_of_day(day + timedelta(days=1), zone)
    live = and_(schedules.c.kind == "remind", schedules.c.deleted_at.is_(None))
    fired_rows = conn.execute(
        select(schedules, fires.c.fire_date, fires.c.fired_at)
        .join(fires, fires.c.schedule_id == schedules.c.id)
        .where(
            live,
            _scope(schedules.c.project, project),
            or_(
                fires.c.fire_date == day,
                and_(fires.c.fired_at >= day_start, fires.c.fired_at < day_end),
            ),
        )
        .order_by(fires.c.fired_at, schedules.c.id)
    ).all()
    seen: set[int] = set()
    found: list[Reminder] = []
    for row in fired_rows:
        if row.id in seen:  # fired twice today (e.g. "now" then its own date): show once
            continue
        seen.add(row.id)
        found.append(_reminder(row, row.fire_date, row.fired_at))
    pending = conn.execute(
        select(schedules)
        .where(
            live,
            schedules.c.enabled,
            schedules.c.next_due <= day,
            _scope(schedules.c.project, project),
        )
        .order_by(schedules.c.next_due, schedules.c.id)
    ).all()
    found.extend(_reminder(row, None, None) for row in pending if row.id not in seen)
    return found


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


def _count(conn: Connection, *where: Any) -> int:
    return int(conn.execute(select(func.count()).select_from(tasks).where(*where)).scalar_one())


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
    expired = conn.execute(
        select(tasks.c.id, tasks.c.lease_owner)
        .where(tasks.c.status == Status.RUNNING.value, tasks.c.lease_until <= now)
        .order_by(tasks.c.lease_until)
        .limit(6)
    ).all()
    if expired:
        total = _count(conn, tasks.c.status == Status.RUNNING.value, tasks.c.lease_until <= now)
        named = ", ".join(f"task {r.id} ({r.lease_owner})" for r in expired[:5])
        more = f" and {total - 5} more" if total > 5 else ""
        found.append(
            Warning(
                code="stale_leases",
                message=f"{total} lease(s) past their end, holder silent: {named}{more}",
            )
        )
    last_backup = conn.execute(
        select(backups).where(backups.c.status != "running").order_by(desc(backups.c.id)).limit(1)
    ).first()
    last_ok = conn.execute(
        select(func.max(backups.c.finished_at)).where(backups.c.status == "ok")
    ).scalar()
    if last_backup is not None and last_backup.status in ("failed", "abandoned"):
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
            schedules.c.enabled,
            schedules.c.deleted_at.is_(None),
            schedules.c.next_due < day,
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
) -> Context:
    now = aware(now)
    day = today(now, zone)
    ctx = Context(
        date=day,
        timezone=str(zone),
        generated_at=now,
        project=project,
        budget=budget,
        warnings=_warnings(conn, now, zone, tick_seconds, day),
    )
    reminders = _reminders(conn, now, zone, project)
    scope = _scope(tasks.c.project, project)
    room = max(budget, 0)

    def take(items: list[Any], name: str, total: int) -> list[Any]:
        nonlocal room
        kept = items[:room]
        room -= len(kept)
        if total > len(kept):
            ctx.omitted[name] = total - len(kept)
        return kept

    ctx.reminders = take(reminders, "reminders", len(reminders))
    running_where = (tasks.c.status == Status.RUNNING.value, scope)
    running_rows = conn.execute(
        select(tasks).where(*running_where).order_by(tasks.c.lease_until, tasks.c.id).limit(room)
    ).all()
    ctx.running = take(
        [running_state(task_from_row(r), now, lease_grace) for r in running_rows],
        "running",
        _count(conn, *running_where),
    )
    due_where = (tasks.c.status == Status.READY.value, tasks.c.due_on <= day, scope)
    due_rows = conn.execute(
        select(tasks)
        .where(*due_where)
        .order_by(tasks.c.due_on, tasks.c.priority, tasks.c.id)
        .limit(room)
    ).all()
    ctx.due = take(
        [Due(task=(t := task_from_row(r)), overdue_days=(day - t.due_on).days) for r in due_rows],  # type: ignore[operator]
        "due",
        _count(conn, *due_where),
    )
    backlog_where = (tasks.c.status == Status.READY.value, tasks.c.due_on.is_(None), scope)
    backlog_rows = conn.execute(
        select(tasks).where(*backlog_where).order_by(tasks.c.priority, tasks.c.id).limit(room)
    ).all()
    ctx.backlog = take(
        [task_from_row(r) for r in backlog_rows], "backlog", _count(conn, *backlog_where)
    )
    _fit_characters(ctx, zone, char_budget)
    return ctx


def context_for(
    conn: Connection,
    now: datetime,
    settings: Settings,
    project: str | None = None,
    budget: int = DEFAULT_BUDGET,
    *,
    char_budget: int = DEFAULT_CHARS,
) -> Context:
    """`build_context` with the configured zone, lease grace and tick: what entry points call."""
    return build_context(
        conn,
        now,
        project,
        budget,
        zone=settings.zone,
        lease_grace=settings.lease_grace,
        tick_seconds=settings.tick_seconds,
        char_budget=char_budget,
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
    from ondeck.context_render import to_markdown

    order = ("backlog", "due", "running", "reminders")
    while len(to_markdown(ctx, zone)) > limit:
        for name in order:
            items = getattr(ctx, name)
            if items:
                items.pop()
                ctx.omitted[name] = ctx.omitted.get(name, 0) + 1
                break
        else:
            return
