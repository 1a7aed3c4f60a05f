"""Tasks and leases: the backlog's rules, in one place.

A task is READY, RUNNING (a holder has a lease with an end), DONE or CANCELLED. Every change
writes its event in the same transaction.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date, datetime, tzinfo
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, Row, select

from ondeck import events
from ondeck.clock import aware, iso
from ondeck.db.dialect import insert_for
from ondeck.db.tables import tasks


class Status(StrEnum):
    READY = "READY"
    RUNNING = "RUNNING"
    DONE = "DONE"
    CANCELLED = "CANCELLED"


@dataclass(frozen=True, kw_only=True, slots=True)
class Task:
    id: int
    title: str
    body: str
    status: Status
    priority: int
    due_on: date | None
    project: str | None
    source: str | None
    lease_owner: str | None
    lease_until: datetime | None
    lease_token: int
    created_at: datetime
    updated_at: datetime
    done_at: datetime | None

    def is_expired(self, now: datetime) -> bool:
        """RUNNING past its lease end: the holder went silent; the reaper will release it."""
        return (
            self.status is Status.RUNNING
            and self.lease_until is not None
            and self.lease_until <= aware(now)
        )

    def to_json(self, now: datetime, zone: tzinfo) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        data["due_on"] = self.due_on.isoformat() if self.due_on else None
        for key in ("lease_until", "created_at", "updated_at", "done_at"):
            data[key] = iso(data[key], zone)
        data["expired"] = self.is_expired(now)
        return data


def task_from_row(row: Row[Any]) -> Task:
    values = dict(row._mapping)
    values["status"] = Status(values["status"])
    return Task(**values)


def get_task_row(conn: Connection, task_id: int) -> Task | None:
    row = conn.execute(select(tasks).where(tasks.c.id == task_id)).first()
    return task_from_row(row) if row else None


def insert_from_schedule(
    conn: Connection,
    now: datetime,
    *,
    source: str,
    title: str,
    body: str,
    priority: int,
    project: str | None,
    due_on: date,
    actor: str = "jobs",
    schedule_id: int | None = None,
) -> int | None:
    """The one way a schedule makes a task: `source` is UNIQUE, so a second run makes nothing.

    Returns the new task's id, or None when a task with that source already exists.
    """
    stmt = (
        insert_for(conn, tasks)
        .values(
            title=title,
            body=body,
            status=Status.READY.value,
            priority=priority,
            due_on=due_on,
            project=project,
            source=source,
            created_at=now,
            updated_at=now,
        )
        .on_conflict_do_nothing(index_elements=[tasks.c.source])
        .returning(tasks.c.id)
    )
    task_id = conn.execute(stmt).scalar()
    if task_id is not None:
        events.record(
            conn,
            now,
            actor=actor,
            kind="task.created",
            subject=f"task:{task_id}",
            details={"source": source, "schedule_id": schedule_id, "due_on": due_on.isoformat()},
        )
    return task_id
