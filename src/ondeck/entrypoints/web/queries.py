"""Read-only queries the dashboard needs and the services do not offer: pages of a list
with their totals. Each pages through a service's list in that service's own order
(`task_statements.TASK_ORDER`, `schedules.SCHEDULE_ORDER`: the order is written once) and names the
index it reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, func, select

from ondeck.core.models import Schedule, Task, TaskStatus
from ondeck.core.sides import EVERY_SIDE, SideView
from ondeck.core.validation import check_project
from ondeck.db.tables import SCHEDULES_LIVE, schedules, tasks
from ondeck.work.schedules import SCHEDULE_ORDER, schedule_from_row
from ondeck.work.task_statements import TASK_ORDER, task_from_row

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    total: int
    page: int
    size: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def has_next(self) -> bool:
        return self.page < self.pages

    @property
    def has_prev(self) -> bool:
        return self.page > 1

    @property
    def first(self) -> int:
        return (self.page - 1) * self.size + 1 if self.items else 0

    @property
    def last(self) -> int:
        return (self.page - 1) * self.size + len(self.items)


def _offset(page: int, size: int) -> int:
    return (max(page, 1) - 1) * size


def page_tasks(
    conn: Connection,
    *,
    statuses: Iterable[TaskStatus] | None,
    project: str | None,
    page: int,
    size: int,
    view: SideView = EVERY_SIDE,
) -> Page[Task]:
    """Tasks in `backlog.list_tasks` order.

    READY alone reads the partial index ix_tasks_ready; a project reads
    ix_tasks_project_status; the totals are counts over the same indexes.
    """
    where: list[Any] = []
    if statuses is not None:
        where.append(tasks.c.status.in_([TaskStatus(s).value for s in statuses]))
    if project is not None:
        where.append(tasks.c.project == check_project(project))
    if view.sides_on:
        where.append(tasks.c.side == view.side if view.side else tasks.c.side.is_(None))
    total = int(conn.execute(select(func.count()).select_from(tasks).where(*where)).scalar_one())
    rows = conn.execute(
        select(tasks).where(*where).order_by(*TASK_ORDER).limit(size).offset(_offset(page, size))
    )
    return Page(items=[task_from_row(r) for r in rows], total=total, page=page, size=size)


def task_projects(conn: Connection, limit: int = 200) -> list[str]:
    """Projects that have tasks, for the filter (ix_tasks_project_status, leading column)."""
    rows = conn.execute(
        select(tasks.c.project)
        .where(tasks.c.project.is_not(None))
        .group_by(tasks.c.project)
        .order_by(tasks.c.project)
        .limit(limit)
    )
    return [r.project for r in rows]


def page_schedules(
    conn: Connection,
    *,
    kind: str | None,
    page: int,
    size: int,
    view: SideView = EVERY_SIDE,
) -> Page[Schedule]:
    """Live schedules of the side `view` sees, in `schedules.list_schedules` order."""
    where: list[Any] = [schedules.c.deleted_at.is_(None)]
    if view.sides_on:
        where.append(schedules.c.side == view.side if view.side else schedules.c.side.is_(None))
    if kind is not None:
        where.append(schedules.c.kind == kind)
    total = int(
        conn.execute(select(func.count()).select_from(schedules).where(*where)).scalar_one()
    )
    rows = conn.execute(
        select(schedules)
        .where(*where)
        .order_by(*SCHEDULE_ORDER)
        .limit(size)
        .offset(_offset(page, size))
    )
    return Page(items=[schedule_from_row(r) for r in rows], total=total, page=page, size=size)


def enabled_schedules(conn: Connection, view: SideView = EVERY_SIDE) -> list[Schedule]:
    """Every enabled live schedule of the side `view` sees, for the calendar feed (no
    page: a calendar wants all)."""
    from ondeck.work.schedules import side_filter

    query = side_filter(select(schedules).where(SCHEDULES_LIVE).order_by(schedules.c.id), view)
    return [schedule_from_row(r) for r in conn.execute(query)]
