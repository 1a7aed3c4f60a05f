"""What a new session is told: the one service behind `ondeck context`, the session hook, the
API, the dashboard's Today page and the MCP tool.

The trap: the jobs loop moves `next_due` forward the moment it processes a reminder, so
"what is due" alone loses the reminder that fired today. Reminders are read from the record
of the fire (`fires`), by fire date and by the instant it was processed, plus the ones due
and not processed yet.

Every statement is plain SQL (context/reads.py, run through db/plain.py): the server,
CLI and API run it on their SQLAlchemy connection, in their transaction; the session hook
on the bare driver, without importing SQLAlchemy. One text, one meaning, on both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from ondeck.context import reads as q
from ondeck.core.clock import aware, iso, start_of_day, today
from ondeck.core.humanize import counted
from ondeck.core.models import BackupStatus, Task
from ondeck.core.sides import EVERY_SIDE, SideView
from ondeck.db.plain import Db, as_db, date_in, expand, instant_in
from ondeck.memory.brief import Brief, BriefRequest, begin_brief, build_brief
from ondeck.system.heartbeat import CLOCK_SKEW_TOLERANCE, JobsHealth, jobs_health
from ondeck.work.lease_state import Lease, LeaseState, lease_of

if TYPE_CHECKING:
    from os import PathLike

    from sqlalchemy import Connection

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
class ContextWarning:
    code: str
    message: str


@dataclass(kw_only=True)
class Context:
    date: date
    timezone: str
    generated_at: datetime
    project: str | None
    # The side whose tasks and reminders are listed (None: one pool, or none at all);
    # `side_closed`: sides are configured and the reader has none (unclassified), so
    # nothing is listed (core/sides.py).
    side: str | None = None
    side_closed: bool = False
    warnings: list[ContextWarning] = field(default_factory=list)
    jobs: JobsHealth | None = None
    reminders: list[Reminder] = field(default_factory=list)
    running: list[Running] = field(default_factory=list)
    due: list[Due] = field(default_factory=list)
    backlog: list[Task] = field(default_factory=list)
    # How many of each list were left out to stay within the budget.
    omitted: dict[str, int] = field(default_factory=dict)
    budget: int = DEFAULT_BUDGET
    # What the session should know that is not a task (memory/brief.py), when asked.
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


def _fired_reminders(db: Db, on: dict[str, Any], project: str | None, view: SideView) -> list[Any]:
    """(schedule, fire) for every reminder in scope that fired today, once each, in order of
    that fire. A schedule removed since is kept (and said to be removed): the reminder
    did fire today, and hiding it would be the lie this list exists to prevent."""
    found = q.FIRES.read(db, q.FIRED, on)
    if not found:
        return []
    # A schedule that fired twice today (e.g. "now", then its own date) is shown once, with
    # its first fire of the day (the first recorded, when one tick fired several dates).
    first: dict[int, Any] = {}
    for fire in sorted(found, key=lambda f: (f["fired_at"], f["id"])):
        first.setdefault(fire["schedule_id"], fire)
    shown = {row["id"]: row for row in q.REMINDERS.read(db, q.fired_schedules(project, view), on)}
    kept = sorted(
        (fire for fire in first.values() if fire["schedule_id"] in shown),
        key=lambda f: (f["fired_at"], f["schedule_id"]),
    )
    return [(shown[fire["schedule_id"]], fire) for fire in kept]


def _reminder(row: dict[str, Any], fire_date: date | None, fired_at: datetime | None) -> Reminder:
    return Reminder(
        schedule_id=row["id"],
        title=row["title"],
        body=row["body"],
        rule=row["rule"],
        rule_text=_describe_rule(row["rule"]),
        project=row["project"],
        fire_date=fire_date,
        fired_at=fired_at,
        removed_at=row["deleted_at"],
    )


def _warnings(
    db: Db,
    now: datetime,
    zone: tzinfo,
    day: date,
    jobs: JobsHealth,
    *,
    tz: str,
    lease_grace: timedelta,
    view: SideView,
) -> list[ContextWarning]:
    found: list[ContextWarning] = []
    if not jobs.alive:
        found.append(
            ContextWarning(
                code="jobs_not_running",
                message=f"{jobs.silence(zone)}: schedules will not fire and "
                "expired leases will not be released",
            )
        )
    skew = jobs.skew(zone)
    if skew is not None:
        found.append(ContextWarning(code="clock_skew", message=skew))
    differences = jobs.differences(tz, lease_grace)
    if differences:
        found.append(
            ContextWarning(
                code="jobs_settings_differ",
                message=f"the jobs process {jobs.latest.name if jobs.latest else ''} runs "
                f"with other settings: {'; '.join(differences)}",
            )
        )
    found += _lease_warnings(db, now, lease_grace, jobs, view)
    found += _backup_warnings(db, now, zone)
    found += _schedule_warnings(db, day, zone)
    return found


def _lease_warnings(
    db: Db, now: datetime, lease_grace: timedelta, jobs: JobsHealth, view: SideView
) -> list[ContextWarning]:
    at = {"now": instant_in(db, now), "side": view.side}
    first_six, count = q.stale(view)
    expired = q.TASKS.read(db, first_six, at)
    if not expired:
        return []
    total = len(expired)
    if total == 6:  # a full page: there may be more
        total = int(q.AS_IS.read(db, count, at)[0]["n"])
    leases = [lease_of(Task.from_values(r), now, lease_grace, jobs) for r in expired[:5]]
    named = ", ".join(f"task {x.task.id} ({x.task.lease_owner})" for x in leases)
    more = f" and {total - 5} more" if total > 5 else ""
    if not jobs.alive:
        fate = "the jobs loop is not running, so nothing will release them"
    elif any(x.state is LeaseState.RELEASE_DUE for x in leases):
        fate = "those past the grace are released at the next jobs tick"
    else:
        fate = "the jobs loop releases each when its grace is over"
    return [
        ContextWarning(
            code="stale_leases",
            message=f"{counted(total, 'lease')} past their end, holder silent: "
            f"{named}{more}; {fate}",
        )
    ]


def _backup_warnings(db: Db, now: datetime, zone: tzinfo) -> list[ContextWarning]:
    found: list[ContextWarning] = []
    last = q.BACKUPS.read(db, q.LAST_BACKUP, {"running": BackupStatus.RUNNING.value})
    last_backup = last[0] if last else None
    # A backup dated after now (a clock ahead wrote it) proves nothing about the last two
    # days: only those at or before now count, and the one from the future is named.
    edge = instant_in(db, now + CLOCK_SKEW_TOLERANCE)
    [ok] = q.BACKUPS.read(db, q.LAST_OK, {"edge": edge, "ok": BackupStatus.OK.value})
    last_ok, ahead = ok["last_ok"], ok["ahead"]
    if last_backup is not None and last_backup["status"] in (
        BackupStatus.FAILED,
        BackupStatus.ABANDONED,
    ):
        error = _clip((last_backup["error"] or last_backup["status"]).splitlines()[0], 200)
        started = iso(last_backup["started_at"], zone)
        found.append(
            ContextWarning(
                code="backup_failed",
                message=f"the last backup ({started}) failed: {error}",
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
            ContextWarning(
                code="backup_stale",
                message=f"no successful backup in 2 days ({since}){future}",
            )
        )
    return found


def _schedule_warnings(db: Db, day: date, zone: tzinfo) -> list[ContextWarning]:
    """Overdue schedules, and due ones whose stored rule no longer parses: the tick skips
    those every time, so they would stay due and silent for ever. One read of the due
    schedules by rule (ix_schedules_due): a handful of distinct rules to parse, and a rule
    that breaks is caught the day it should fire."""
    found: list[ContextWarning] = []
    on = {"day": date_in(db, day)}
    by_rule = q.BY_RULE.read(db, q.DUE_BY_RULE, on)
    overdue = sum(int(r["late"]) for r in by_rule)
    if overdue:
        since = min(r["first"] for r in by_rule if r["late"])
        found.append(
            ContextWarning(
                code="schedules_overdue",
                message=f"{counted(overdue, 'schedule')} due since {since.isoformat()} "
                "not processed: the jobs loop is behind",
            )
        )
    broken = {r["rule"]: problem for r in by_rule if (problem := _rule_problem(r["rule"]))}
    if broken:
        rules, values = expand("rule", broken)
        first_five, count = q.unreadable(rules)
        named = q.AS_IS.read(db, first_five, {**on, **values})
        total = int(q.AS_IS.read(db, count, {**on, **values})[0]["n"])
        listed = "; ".join(
            f"schedule {r['id']} {r['rule']!r} ({_clip(broken[r['rule']], 120)})" for r in named
        )
        more = f"; and {total - 5} more" if total > 5 else ""
        found.append(
            ContextWarning(
                code="unreadable_rules",
                message=f"{counted(total, 'due schedule')} with a stored rule that no longer "
                f"parses and will never fire until it is edited: {listed}{more}",
            )
        )
    # Fires for dates after today: a jobs clock ahead fired them early and moved their
    # schedules past the dates this clock has yet to reach (ix_fires_fire_date).
    [early] = q.EARLY.read(db, q.FIRED_EARLY, on)
    if early["n"]:
        found.append(
            ContextWarning(
                code="fired_early",
                message=f"{counted(early['n'], 'schedule')} fired for dates after today "
                f"({day.isoformat()} in {zone}), the latest {early['latest'].isoformat()}: a jobs "
                "clock ahead fired them early, and they fire again only after those dates",
            )
        )
    return found


def build_context(
    conn: Db | Connection,
    now: datetime,
    project: str | None = None,
    budget: int = DEFAULT_BUDGET,
    *,
    zone: tzinfo,
    lease_grace: timedelta = timedelta(hours=6),
    session_grace: timedelta = timedelta(hours=12),
    tick_seconds: float = 60.0,
    extra_warnings: Sequence[tuple[str, str]] = (),
    brief: BriefRequest | None = None,
    view: SideView = EVERY_SIDE,
) -> Context:
    """The lists within `budget` items; fitting them to a size in characters is the
    rendering's (`context_render.fit_markdown`). `conn`: a SQLAlchemy connection (its
    transaction) or a bare driver's (db/plain.py): the same statements run on either.
    `view`: the side whose tasks and reminders are listed (core/sides.py)."""
    db = as_db(conn)
    now = aware(now)
    day = today(now, zone)
    # The brief's handoff first: its drift is read in git while the statements below run.
    started = begin_brief(db, brief, day) if brief is not None else None
    jobs = jobs_health(db, now, tick_seconds=tick_seconds)
    ctx = Context(
        date=day,
        timezone=str(zone),
        generated_at=now,
        project=project,
        side=view.side if view.sides_on else None,
        side_closed=view.closed,
        budget=budget,
        jobs=jobs,
        warnings=[
            *_warnings(db, now, zone, day, jobs, tz=str(zone), lease_grace=lease_grace, view=view),
            *(ContextWarning(code=code, message=message) for code, message in extra_warnings),
        ],
    )
    # The lists share the budget in order (reminders, running, due, backlog): each reads at
    # most the room left, and is counted in full only when it filled that room. The counts
    # are read together at the end, in one round trip.
    room = max(budget, 0)
    totals: dict[str, Any] = {}  # per part: how many there are, or the count to ask for
    values = {
        "project": project,
        "side": view.side,
        "day": date_in(db, day),
        "day_start": instant_in(db, start_of_day(day, zone)),
        "day_end": instant_in(db, start_of_day(day + timedelta(days=1), zone)),
    }

    def page(name: str, statements: tuple[str, str], columns: Any) -> list[dict[str, Any]]:
        nonlocal room
        query, count = statements
        rows = columns.read(db, f"{query} LIMIT {room}", values) if room > 0 else []
        totals[name] = count if len(rows) == room else len(rows)
        room -= len(rows)
        return list(rows)

    fired = _fired_reminders(db, values, project, view)
    totals["fired"] = len(fired)
    ctx.reminders = [_reminder(r, f["fire_date"], f["fired_at"]) for r, f in fired[:room]]
    room -= len(ctx.reminders)
    pending_rows = page("pending", q.pending(project, view), q.REMINDERS)
    ctx.reminders += [_reminder(r, None, None) for r in pending_rows]
    running_rows = page("running", q.running(project, view), q.TASKS)
    due_rows = page("due", q.due(project, view), q.TASKS)
    backlog_rows = page("backlog", q.backlog(project, view), q.TASKS)
    ctx.running = [lease_of(Task.from_values(r), now, lease_grace, jobs) for r in running_rows]
    ctx.due = [_due(Task.from_values(r), day) for r in due_rows]
    ctx.backlog = [Task.from_values(r) for r in backlog_rows]

    asked = [name for name, total in totals.items() if not isinstance(total, int)]
    if asked:
        counts = ", ".join(f"{totals[name]} AS {name}" for name in asked)
        [counted] = q.AS_IS.read(db, f"SELECT {counts}", values)
        totals.update((name, counted[name]) for name in asked)
    totals["reminders"] = totals.pop("fired") + totals.pop("pending")
    for name in ("reminders", "running", "due", "backlog"):
        left_out = int(totals[name]) - len(getattr(ctx, name))
        if left_out > 0:
            ctx.omitted[name] = left_out
    if brief is not None:
        ctx.brief = build_brief(db, now, brief, day, started, session_grace=session_grace)
    return ctx


class ContextSettings(Protocol):
    """What the context reads of the settings: `Settings` has it, and so has the session
    hook's `HookConfig` (host/quick_settings.py), which its database path uses without
    pydantic."""

    @property
    def zone(self) -> tzinfo: ...
    @property
    def lease_grace(self) -> timedelta: ...
    @property
    def session_grace(self) -> timedelta: ...
    @property
    def tick_seconds(self) -> float: ...
    @property
    def spool_dir(self) -> str | PathLike[str]: ...
    @property
    def sides(self) -> Any: ...


def context_for(
    conn: Db | Connection,
    now: datetime,
    settings: ContextSettings,
    project: str | None = None,
    budget: int = DEFAULT_BUDGET,
    *,
    brief: BriefRequest | None = None,
    view: SideView | None = None,
) -> Context:
    """`build_context` with the configured zone, lease grace and tick, and the session
    records' warnings (unclassified sessions, a stuck spool): what entry points call
    (through `entrypoints/gateway.py`, which also fits it to its size in characters).

    `view`: whose tasks and reminders; None takes the brief's side (the session's), and
    with sides configured and neither given, none at all (fail closed)."""
    from ondeck.sessions.alerts import context_warnings

    db = as_db(conn)
    if view is None:
        view = side_view_of(settings, brief)
    return build_context(
        db,
        now,
        project,
        budget,
        zone=settings.zone,
        lease_grace=settings.lease_grace,
        session_grace=settings.session_grace,
        tick_seconds=settings.tick_seconds,
        extra_warnings=context_warnings(db, now, settings),
        brief=brief,
        view=view,
    )


def side_view_of(settings: ContextSettings, brief: BriefRequest | None) -> SideView:
    """The side a session's context lists: its own, as classified; none when it is
    unclassified (its items wait in no side) or says no side while sides are configured."""
    if not settings.sides:
        return EVERY_SIDE
    if brief is None or brief.unclassified or not brief.side:
        return SideView(sides_on=True)
    return SideView(sides_on=True, side=brief.side)


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
