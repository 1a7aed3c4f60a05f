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
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import (
    Connection,
    Row,
    Select,
    and_,
    case,
    desc,
    func,
    or_,
    select,
)

from ondeck.core.clock import aware, iso, start_of_day, today
from ondeck.core.models import BackupStatus, ScheduleKind, Task, TaskStatus
from ondeck.db.tables import SCHEDULES_LIVE, backups, fires, schedules, tasks
from ondeck.services.brief import Brief, BriefRequest, begin_brief, build_brief
from ondeck.services.lease_state import Lease, LeaseState, lease_of
from ondeck.services.task_statements import READY_ORDER, status_is, task_from_row
from ondeck.services.workers import CLOCK_SKEW_TOLERANCE, JobsHealth, jobs_health
from ondeck.services.workers import JOBS_SILENT_TICKS as JOBS_SILENT_TICKS  # its old home

if TYPE_CHECKING:
    from os import PathLike

DEFAULT_BUDGET = 20
BACKUP_STALE_AFTER = timedelta(days=2)


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
    removed_at: datetime | None = None  # fired today, its schedule removed since


# A running task with its lease state (lease_state.py says how a lease stands).
Running = Lease


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
    jobs: JobsHealth | None = None
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
def _rule_problem(rule: str) -> str | None:
    """Why a stored rule no longer parses, or None when it does."""
    from ondeck.core.rules import RuleError, parse

    try:
        parse(rule)
    except RuleError as exc:
        return str(exc)
    return None


@lru_cache(maxsize=1024)
def _describe_rule(rule: str) -> str:
    from ondeck.core.rules import RuleError, parse

    try:
        return parse(rule).describe()
    except RuleError:
        return f"unreadable rule {rule!r}"


def _scope(column: Any, project: str | None) -> Any:
    """With a project: that project's items and the unscoped ones; without: everything."""
    if project is None:
        return True
    return or_(column == project, column.is_(None))


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
    schedules.c.deleted_at,
)


def _reminders_in(project: str | None) -> tuple[Any, ...]:
    return (schedules.c.kind == ScheduleKind.REMIND.value, _scope(schedules.c.project, project))


def _fires_of(day: date, zone: tzinfo) -> Any:
    """Today's fires: by fire date, or processed today (late, for an earlier date)."""
    day_start, day_end = start_of_day(day, zone), start_of_day(day + timedelta(days=1), zone)
    return or_(
        fires.c.fire_date == day,
        and_(fires.c.fired_at >= day_start, fires.c.fired_at < day_end),
    )


def _fired_reminders(conn: Connection, today_fires: Any, project: str | None) -> list[Any]:
    """(schedule, fire) for every reminder in scope that fired today, once each, in order of
    that fire. A schedule removed since is kept (and said to be removed): the reminder
    did fire today, and hiding it would be the lie this list exists to prevent."""
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
                *_reminders_in(project),
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
        *_reminders_in(project),
        SCHEDULES_LIVE,
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
        removed_at=row.deleted_at,
    )


def _warnings(
    conn: Connection,
    now: datetime,
    zone: tzinfo,
    day: date,
    jobs: JobsHealth,
    *,
    tz: str,
    lease_grace: timedelta,
) -> list[Warning]:
    found: list[Warning] = []
    if not jobs.alive:
        found.append(
            Warning(
                code="jobs_not_running",
                message=f"{jobs.silence(zone)}: schedules will not fire and "
                "expired leases will not be released",
            )
        )
    skew = jobs.skew(zone)
    if skew is not None:
        found.append(Warning(code="clock_skew", message=skew))
    differences = jobs.differences(tz, lease_grace)
    if differences:
        found.append(
            Warning(
                code="jobs_settings_differ",
                message=f"the jobs process {jobs.latest.name if jobs.latest else ''} runs "
                f"with other settings: {'; '.join(differences)}",
            )
        )
    found += _lease_warnings(conn, now, lease_grace, jobs)
    found += _backup_warnings(conn, now, zone)
    found += _schedule_warnings(conn, day, zone)
    return found


def _lease_warnings(
    conn: Connection, now: datetime, lease_grace: timedelta, jobs: JobsHealth
) -> list[Warning]:
    stale = (status_is(TaskStatus.RUNNING), tasks.c.lease_until <= now)
    expired = conn.execute(select(tasks).where(*stale).order_by(tasks.c.lease_until).limit(6)).all()
    if not expired:
        return []
    total = len(expired)
    if total == 6:  # a full page: there may be more
        total = int(conn.execute(select(_task_count(None, *stale))).scalar_one())
    leases = [lease_of(task_from_row(r), now, lease_grace, jobs) for r in expired[:5]]
    named = ", ".join(f"task {x.task.id} ({x.task.lease_owner})" for x in leases)
    more = f" and {total - 5} more" if total > 5 else ""
    if not jobs.alive:
        fate = "the jobs loop is not running, so nothing will release them"
    elif any(x.state is LeaseState.RELEASE_DUE for x in leases):
        fate = "those past the grace are released at the next jobs tick"
    else:
        fate = "the jobs loop releases each when its grace is over"
    return [
        Warning(
            code="stale_leases",
            message=f"{total} lease(s) past their end, holder silent: {named}{more}; {fate}",
        )
    ]


def _backup_warnings(conn: Connection, now: datetime, zone: tzinfo) -> list[Warning]:
    found: list[Warning] = []
    last_backup = conn.execute(
        select(backups)
        .where(backups.c.status != BackupStatus.RUNNING.value)
        .order_by(desc(backups.c.id))
        .limit(1)
    ).first()
    # A backup dated after now (a clock ahead wrote it) proves nothing about the last two
    # days: only those at or before now count, and the one from the future is named.
    edge = now + CLOCK_SKEW_TOLERANCE
    finished = backups.c.finished_at
    last_ok, ahead = conn.execute(
        select(
            func.max(case((finished <= edge, finished))),
            func.max(case((finished > edge, finished))),
        ).where(backups.c.status == BackupStatus.OK.value)
    ).one()
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
        future = (
            f"; the one dated {iso(ahead, zone)} is in the future (a clock ahead wrote it) and "
            "is not counted"
            if ahead is not None
            else ""
        )
        found.append(
            Warning(
                code="backup_stale",
                message=f"no successful backup in 2 days ({since}){future}",
            )
        )
    return found


def _schedule_warnings(conn: Connection, day: date, zone: tzinfo) -> list[Warning]:
    """Overdue schedules, and due ones whose stored rule no longer parses: the tick skips
    those every time, so they would stay due and silent for ever. One read of the due
    schedules by rule (ix_schedules_due): a handful of distinct rules to parse, and a rule
    that breaks is caught the day it should fire."""
    found: list[Warning] = []
    due = (SCHEDULES_LIVE, schedules.c.next_due <= day)
    late = schedules.c.next_due < day
    by_rule = conn.execute(
        select(
            schedules.c.rule,
            func.count(case((late, 1))),
            func.min(case((late, schedules.c.next_due))),
        )
        .where(*due)
        .group_by(schedules.c.rule)
    ).all()
    overdue = sum(int(n) for _, n, _ in by_rule)
    if overdue:
        since = min(first for _, n, first in by_rule if n)
        found.append(
            Warning(
                code="schedules_overdue",
                message=f"{overdue} schedule(s) due since {since.isoformat()} "
                "not processed: the jobs loop is behind",
            )
        )
    broken = {rule: problem for rule, _, _ in by_rule if (problem := _rule_problem(rule))}
    if broken:
        where = (*due, schedules.c.rule.in_(broken))
        named = conn.execute(
            select(schedules.c.id, schedules.c.rule).where(*where).order_by(schedules.c.id).limit(5)
        ).all()
        total = int(
            conn.execute(select(func.count()).select_from(schedules).where(*where)).scalar_one()
        )
        listed = "; ".join(
            f"schedule {r.id} {r.rule!r} ({_clip(broken[r.rule], 120)})" for r in named
        )
        more = f"; and {total - 5} more" if total > 5 else ""
        found.append(
            Warning(
                code="unreadable_rules",
                message=f"{total} due schedule(s) have a stored rule that no longer parses and "
                f"will never fire until it is edited: {listed}{more}",
            )
        )
    # Fires for dates after today: a jobs clock ahead fired them early and moved their
    # schedules past the dates this clock has yet to reach (ix_fires_fire_date).
    early = conn.execute(
        select(func.count(func.distinct(fires.c.schedule_id)), func.max(fires.c.fire_date)).where(
            fires.c.fire_date > day
        )
    ).one()
    if early[0]:
        found.append(
            Warning(
                code="fired_early",
                message=f"{early[0]} schedule(s) fired for dates after today "
                f"({day.isoformat()} in {zone}), the latest {early[1].isoformat()}: a jobs "
                "clock ahead fired them early, and they fire again only after those dates",
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
    extra_warnings: Sequence[tuple[str, str]] = (),
    brief: BriefRequest | None = None,
) -> Context:
    """The lists within `budget` items; fitting them to a size in characters is the
    rendering's (`context_render.fit_markdown`)."""
    now = aware(now)
    day = today(now, zone)
    # The brief's handoff first: its drift is read in git while the statements below run.
    started = begin_brief(conn, brief, day) if brief is not None else None
    jobs = jobs_health(conn, now, tick_seconds=tick_seconds)
    ctx = Context(
        date=day,
        timezone=str(zone),
        generated_at=now,
        project=project,
        budget=budget,
        jobs=jobs,
        warnings=[
            *_warnings(conn, now, zone, day, jobs, tz=str(zone), lease_grace=lease_grace),
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
    ctx.running = [lease_of(task_from_row(r), now, lease_grace, jobs) for r in running_rows]
    ctx.due = [_due(task_from_row(r), day) for r in due_rows]
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
    if brief is not None:
        ctx.brief = build_brief(conn, now, brief, day, started)
    return ctx


class ContextSettings(Protocol):
    """What the context reads of the settings: `config.Settings` has it, and so has the
    session hook's `hook_config.HookConfig`, which its database path uses without pydantic."""

    @property
    def zone(self) -> tzinfo: ...
    @property
    def lease_grace(self) -> timedelta: ...
    @property
    def tick_seconds(self) -> float: ...
    @property
    def spool_dir(self) -> str | PathLike[str]: ...


def context_for(
    conn: Connection,
    now: datetime,
    settings: ContextSettings,
    project: str | None = None,
    budget: int = DEFAULT_BUDGET,
    *,
    brief: BriefRequest | None = None,
) -> Context:
    """`build_context` with the configured zone, lease grace and tick, and the session
    records' warnings (unclassified sessions, a stuck spool): what entry points call
    (through `entrypoints/store.py`, which also fits it to its size in characters)."""
    from ondeck.services.sessions import context_warnings

    return build_context(
        conn,
        now,
        project,
        budget,
        zone=settings.zone,
        lease_grace=settings.lease_grace,
        tick_seconds=settings.tick_seconds,
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


def running_state(
    task: Task, now: datetime, grace: timedelta, jobs: JobsHealth | None = None
) -> Running:
    """A RUNNING task with its lease state: `lease_state.lease_of`, the one judgement."""
    return lease_of(task, now, grace, jobs)


def _due(task: Task, day: date) -> Due:
    assert task.due_on is not None  # read by `due_on <= day`
    return Due(task=task, overdue_days=(day - task.due_on).days)
