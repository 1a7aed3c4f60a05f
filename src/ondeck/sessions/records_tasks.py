"""The tasks a session touched, in the two senses the store shows:

- `tasks_acted_on` (a session's page, `session show`, the API): every task the session
  claimed, renewed, completed or released, or whose lease was reaped from it, each action
  with its time, from the session's first event on; a task counts when the session held it
  as lease owner or its hooks acted on it.
- `tasks_held` (the brief's lines on a project's recent sessions): for several sessions at
  once, the tasks each held as lease owner between its own first and last events; ids only.

Both read the task events (TASK_KINDS) through ix_events_kind (kind, id), a range from the
session's first event on. `tasks_held` is plain SQL (db/plain.py): the session hook builds
the brief without SQLAlchemy, so this module imports it only inside `tasks_acted_on`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any

from ondeck.core.clock import iso
from ondeck.core.session_terms import hook_actor, session_owner
from ondeck.db.plain import Columns, Db, expand

if TYPE_CHECKING:
    from sqlalchemy import Connection

TASK_KINDS = ("task.claimed", "task.renewed", "task.completed", "task.released", "task.reaped")
ACTED_MAX = 1000  # events read for one session's page
HELD_MAX = 2000  # events read for all the brief's sessions together


@dataclass(frozen=True, kw_only=True, slots=True)
class TaskActedOn:
    task_id: int
    title: str | None  # None: the task is gone
    status: str | None
    actions: list[tuple[str, datetime]]  # (event kind, when), in order

    def to_json(self, zone: tzinfo) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "title": self.title,
            "status": self.status,
            "actions": [{"kind": k, "at": iso(at, zone)} for k, at in self.actions],
        }


def tasks_acted_on(
    conn: Connection, external_id: str, first_event: int | None
) -> list[TaskActedOn]:
    """The tasks the session `external_id` acted on, read from the task events since its
    first (`first_event`: None when it has none, and so no tasks)."""
    from sqlalchemy import or_, select

    from ondeck.db.tables import events, tasks

    if first_event is None:
        return []
    owner = events.c.details["owner"].as_string()
    rows = conn.execute(
        select(events.c.kind, events.c.subject, events.c.at)
        .where(
            events.c.kind.in_(TASK_KINDS),
            events.c.id >= first_event,
            or_(owner == session_owner(external_id), events.c.actor == hook_actor(external_id)),
        )
        .order_by(events.c.id)
        .limit(ACTED_MAX)
    ).all()
    by_task: dict[int, list[tuple[str, datetime]]] = {}
    for kind, subject, at in rows:
        task_id = int(subject.removeprefix("task:"))
        by_task.setdefault(task_id, []).append((kind, at))
    if not by_task:
        return []
    found = {
        row.id: row
        for row in conn.execute(
            select(tasks.c.id, tasks.c.title, tasks.c.status).where(tasks.c.id.in_(by_task))
        )
    }
    return [
        TaskActedOn(
            task_id=task_id,
            title=found[task_id].title if task_id in found else None,
            status=found[task_id].status if task_id in found else None,
            actions=actions,
        )
        for task_id, actions in by_task.items()
    ]


_AS_IS = Columns()  # ids and text: the drivers give them alike


def tasks_held(
    db: Db, sessions: Sequence[dict[str, Any]], shown: int
) -> dict[int, tuple[list[int], int]]:
    """For each session (rows with `id` and `external_id`) that held any: the first `shown`
    tasks it held, in the order it first took them, and how many in all. One bounded range
    of ix_events_kind answers for all the sessions."""
    if not sessions:
        return {}
    subjects, values = expand("subject", [f"session:{r['id']}" for r in sessions])
    spans = {
        r["subject"]: (r["low"], r["high"])
        for r in _AS_IS.read(
            db,
            "SELECT events.subject, min(events.id) AS low, max(events.id) AS high FROM events"
            f" WHERE events.subject IN {subjects} GROUP BY events.subject",
            values,
        )
    }
    if not spans:
        return {}
    owners = {session_owner(r["external_id"]): r["id"] for r in sessions}
    kinds, kind_values = expand("kind", TASK_KINDS)
    named, owner_values = expand("owner", owners)
    found = _AS_IS.read(
        db,
        "SELECT events.id, events.subject, JSON_TEXT(events.details, 'owner') AS owner"
        f" FROM events WHERE events.kind IN {kinds} AND events.id BETWEEN :low AND :high"
        f" AND JSON_TEXT(events.details, 'owner') IN {named} ORDER BY events.id"
        f" LIMIT {HELD_MAX}",
        {
            **kind_values,
            **owner_values,
            "low": min(low for low, _ in spans.values()),
            "high": max(high for _, high in spans.values()),
        },
    )
    by_session: dict[int, list[int]] = {}
    for event in found:
        event_id, subject = event["id"], event["subject"]
        session_id = owners[event["owner"]]
        low, high = spans.get(f"session:{session_id}", (0, -1))
        if not low <= event_id <= high:
            continue
        task_id = int(subject.removeprefix("task:"))
        seen = by_session.setdefault(session_id, [])
        if task_id not in seen:
            seen.append(task_id)
    return {sid: (seen[:shown], len(seen)) for sid, seen in by_session.items()}
