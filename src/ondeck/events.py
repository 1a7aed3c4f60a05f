"""The record of every change: one `events` row, written in the same transaction as the change.

Actors: `cli`, `api`, `dashboard`, `jobs`, `mcp:<client>`, `hook:<session>`. Subjects name
what changed: `task:12`, `schedule:3`, `backup:7`, `worker:jobs@host:pid`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from sqlalchemy import Connection, insert, select

from ondeck.clock import aware, iso
from ondeck.db.tables import events

MAX_LIMIT = 500


@dataclass(frozen=True, kw_only=True, slots=True)
class Event:
    id: int
    at: datetime
    actor: str
    kind: str
    subject: str
    details: dict[str, Any]

    def to_json(self, zone: tzinfo) -> dict[str, Any]:
        """The event as the API and `--json` show it: `at` in the configured zone."""
        return {
            "id": self.id,
            "at": iso(self.at, zone),
            "actor": self.actor,
            "kind": self.kind,
            "subject": self.subject,
            "details": self.details,
        }


def record(
    conn: Connection,
    now: datetime,
    *,
    actor: str,
    kind: str,
    subject: str,
    details: dict[str, Any] | None = None,
) -> int:
    result = conn.execute(
        insert(events)
        .values(at=aware(now), actor=actor[:200], kind=kind, subject=subject, details=details or {})
        .returning(events.c.id)
    )
    return int(result.scalar_one())


def record_many(conn: Connection, now: datetime, rows: list[dict[str, Any]]) -> None:
    """Many events in one statement (the jobs tick's bulk fires); each row gives `actor`,
    `kind`, `subject` and optionally `details`, all at `now`."""
    if not rows:
        return
    at = aware(now)
    conn.execute(
        insert(events),
        [
            {
                "at": at,
                "actor": row["actor"][:200],
                "kind": row["kind"],
                "subject": row["subject"],
                "details": row.get("details") or {},
            }
            for row in rows
        ],
    )


def list_events(
    conn: Connection,
    *,
    subject: str | None = None,
    kind: str | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> list[Event]:
    """Newest first; `before_id` pages back through history (keyset, so deep pages stay fast)."""
    query = select(events).order_by(events.c.id.desc()).limit(max(1, min(limit, MAX_LIMIT)))
    if subject:
        query = query.where(events.c.subject == subject)
    if kind:
        # `task.` matches every task event; `task.claimed` only that one.
        if kind.endswith("."):
            query = query.where(events.c.kind.startswith(kind, autoescape=True))
        else:
            query = query.where(events.c.kind == kind)
    if before_id is not None:
        query = query.where(events.c.id < before_id)
    return [Event(**row._mapping) for row in conn.execute(query)]
