"""The session context's statements, as plain SQL (db/plain.py): the same text runs on the
server's SQLAlchemy connection and on the session hook's bare driver, so the hook never
imports SQLAlchemy and no rule of the context has a second copy.

Each statement says which index answers it; they were written out from the Core statements
they replace, predicate for predicate, so the planners choose as before (tests of the
context and bench/context.py hold them to it). Rules shared with Core statements elsewhere
are taken from their one home: db/predicates.py, and `READY_ORDER`/`status_is` as
task_statements has them (tests/unit/test_predicates.py compares the two forms).
"""

from __future__ import annotations

from ondeck.core.models import ScheduleKind, TaskStatus
from ondeck.core.sides import SideView
from ondeck.db.plain import Columns
from ondeck.db.predicates import SCHEDULES_LIVE, status_is

TASKS = Columns(
    instants=("lease_until", "created_at", "updated_at", "done_at"),
    dates=("due_on",),
)
REMINDERS = Columns(instants=("deleted_at",))
FIRES = Columns(instants=("fired_at",), dates=("fire_date",))
BACKUPS = Columns(instants=("started_at", "finished_at", "last_ok", "ahead"))
BY_RULE = Columns(dates=("first",))
EARLY = Columns(dates=("latest",))
AS_IS = Columns()  # counts, ids and rules: the drivers give them alike

RUNNING = status_is("tasks", TaskStatus.RUNNING.value)
READY = status_is("tasks", TaskStatus.READY.value)
# = task_statements.READY_ORDER: ix_tasks_ready's own order.
READY_ORDER = "tasks.due_on, tasks.priority, tasks.id"
REMIND = f"schedules.kind = '{ScheduleKind.REMIND.value}'"


def scope(column: str, project: str | None) -> str:
    """With a project: that project's items and the unscoped ones; without: everything."""
    if project is None:
        return "1 = 1"
    return f"({column} = :project OR {column} IS NULL)"


def task_count(project: str | None, where: str) -> str:
    """A scalar subquery: how many tasks match `where` within the project scope."""

    def count(more: str) -> str:
        return f"(SELECT count(*) FROM tasks WHERE {where}{more})"

    if project is None:
        return count("")
    # The project's tasks and the unscoped ones counted apart and added (they are disjoint):
    # each count then reads one index alone (ix_tasks_ready_project for READY tasks), where
    # PostgreSQL reads the table to count an OR of the two.
    return f"({count(' AND tasks.project = :project')} + {count(' AND tasks.project IS NULL')})"


# --- reminders: today's fires and the pending ones ----------------------------------------

# Today's fires: by fire date, or processed today (late, for an earlier date).
# ix_fires_fire_date and ix_fires_fired_at.
TODAY_FIRES = (
    "(fires.fire_date = :day OR (fires.fired_at >= :day_start AND fires.fired_at < :day_end))"
)
# Plain on purpose (no join, no ORDER BY): either one made SQLite walk every fire ever
# recorded in ix_fires_fired_at order instead of asking the two indexes for today's.
FIRED = (
    "SELECT fires.id, fires.schedule_id, fires.fire_date, fires.fired_at"
    f" FROM fires WHERE {TODAY_FIRES}"
)
_SHOWN = (
    "schedules.id, schedules.title, schedules.body, schedules.rule, schedules.project,"
    " schedules.deleted_at"
)


def fired_schedules(project: str | None, view: SideView) -> str:
    """The reminders of the side `view` sees (:side) that fired today: a fire is of its
    schedule's side."""
    return (
        f"SELECT {_SHOWN} FROM schedules WHERE schedules.id IN"
        f" (SELECT fires.schedule_id FROM fires WHERE {TODAY_FIRES})"
        f" AND {REMIND} AND {scope('schedules.project', project)}"
        f" AND {view.where('schedules.side')}"
    )


def _pending_where(project: str | None, view: SideView) -> str:
    return (
        f"{REMIND} AND {scope('schedules.project', project)} AND {SCHEDULES_LIVE}"
        f" AND {view.where('schedules.side')}"
        " AND schedules.next_due <= :day AND schedules.id NOT IN"
        f" (SELECT fires.schedule_id FROM fires WHERE {TODAY_FIRES})"
    )


def pending(project: str | None, view: SideView) -> tuple[str, str]:
    """(query, count) of the reminders due and not processed yet, in order."""
    where = _pending_where(project, view)
    order = "schedules.next_due, schedules.id"
    query = f"SELECT {_SHOWN} FROM schedules WHERE {where} ORDER BY {order}"
    return query, f"(SELECT count(*) FROM schedules WHERE {where})"


# --- today's tasks: running, due, backlog --------------------------------------------------


def _tasks(where: str, project: str | None, order: str) -> str:
    in_scope = scope("tasks.project", project)
    return f"SELECT * FROM tasks WHERE {where} AND {in_scope} ORDER BY {order}"


def _in_side(where: str, view: SideView) -> str:
    """`where` within the side `view` sees (:side); unchanged without sides, so one pool
    reads its indexes as before."""
    return where if not view.sides_on else f"{where} AND {view.where('tasks.side')}"


def running(project: str | None, view: SideView) -> tuple[str, str]:
    where = _in_side(RUNNING, view)
    return (
        _tasks(where, project, "tasks.lease_until, tasks.id"),
        task_count(project, where),
    )


def due(project: str | None, view: SideView) -> tuple[str, str]:
    where = _in_side(f"{READY} AND tasks.due_on <= :day", view)
    return _tasks(where, project, READY_ORDER), task_count(project, where)


def backlog(project: str | None, view: SideView) -> tuple[str, str]:
    where = _in_side(f"{READY} AND tasks.due_on IS NULL", view)
    return _tasks(where, project, "tasks.priority, tasks.id"), task_count(project, where)


# --- warnings -------------------------------------------------------------------------------

STALE_WHERE = f"{RUNNING} AND tasks.lease_until <= :now"
# ix_tasks_running (lease_until) where RUNNING.
STALE = f"SELECT * FROM tasks WHERE {STALE_WHERE} ORDER BY tasks.lease_until LIMIT 6"
STALE_COUNT = f"SELECT {task_count(None, STALE_WHERE)} AS n"


def stale(view: SideView) -> tuple[str, str]:
    """(the first six, how many) leases past their end, of the side `view` sees: the
    warning names tasks and holders, which another side's session is not shown."""
    if not view.sides_on:
        return STALE, STALE_COUNT
    where = _in_side(STALE_WHERE, view)
    return (
        f"SELECT * FROM tasks WHERE {where} ORDER BY tasks.lease_until LIMIT 6",
        f"SELECT {task_count(None, where)} AS n",
    )


LAST_BACKUP = (
    "SELECT * FROM backups WHERE backups.status != :running ORDER BY backups.id DESC LIMIT 1"
)
# A backup dated after now (a clock ahead wrote it) proves nothing: the two apart.
LAST_OK = (
    "SELECT max(CASE WHEN backups.finished_at <= :edge THEN backups.finished_at END) AS last_ok,"
    " max(CASE WHEN backups.finished_at > :edge THEN backups.finished_at END) AS ahead"
    " FROM backups WHERE backups.status = :ok"
)

_DUE_SCHEDULES = f"{SCHEDULES_LIVE} AND schedules.next_due <= :day"
# ix_schedules_due: the due schedules by rule, with how many are late and since when.
DUE_BY_RULE = (
    "SELECT schedules.rule AS rule,"
    " count(CASE WHEN schedules.next_due < :day THEN 1 END) AS late,"
    " min(CASE WHEN schedules.next_due < :day THEN schedules.next_due END) AS first"
    f" FROM schedules WHERE {_DUE_SCHEDULES} GROUP BY schedules.rule"
)


def unreadable(rules: str) -> tuple[str, str]:
    """(the first five, how many) due schedules whose rule is one of `rules` (an IN list)."""
    where = f"{_DUE_SCHEDULES} AND schedules.rule IN {rules}"
    return (
        f"SELECT schedules.id, schedules.rule FROM schedules WHERE {where}"
        " ORDER BY schedules.id LIMIT 5",
        f"SELECT count(*) AS n FROM schedules WHERE {where}",
    )


# Fires for dates after today (ix_fires_fire_date).
FIRED_EARLY = (
    "SELECT count(DISTINCT fires.schedule_id) AS n, max(fires.fire_date) AS latest"
    " FROM fires WHERE fires.fire_date > :day"
)
