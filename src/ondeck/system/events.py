"""The record of every change: one `events` row, written in the same transaction as the change.

Actors: `cli`, `api`, `api:<device token>`, `dashboard`, `jobs`, `mcp:<client>`,
`hook:<session>`. Subjects name what changed: `task:12`, `schedule:3`, `backup:7`,
`worker:jobs@host:pid`, `token:laptop`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from functools import cached_property
from typing import Any

from sqlalchemy import (
    Connection,
    String,
    Text,
    bindparam,
    cast,
    exists,
    func,
    insert,
    literal,
    select,
    union_all,
)

from ondeck.core.clock import aware
from ondeck.core.models import Event
from ondeck.core.sides import EVERY_SIDE, SideView
from ondeck.db import gate
from ondeck.db.dialect import is_postgres
from ondeck.db.engine import on_driver
from ondeck.db.tables import events, notes, schedules, sessions, tasks
from ondeck.db.types import Instant, Json, ScrubbedText

MAX_LIMIT = 500


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


class Recorded:
    """A one-row UPDATE … RETURNING together with the event it writes: built once (a module
    constant) and run many times, so SQLAlchemy reuses its compiled form instead of building
    and compiling the statement on every call, which costs more than the database's work.

    On PostgreSQL the change and its event are ONE statement (the event's INSERT is a CTE over
    the returned row): one round trip, and atomic even on a connection that commits every
    statement. On SQLite (in-process, no round trips to save) they are two statements in the
    caller's transaction.

    The event's subject is `subject` + the row's id. `after` names details the changed row
    gives (`{"token": "lease_token"}`); `before` names details that are the row's values
    before the change (`{"owner": "lease_owner"}`), read through the statement's parameter
    `key`, the changed row's id. Either kind takes its key's place in the details given to
    `run`.
    """

    def __init__(
        self,
        change: Any,
        *,
        kind: str,
        subject: str,
        after: dict[str, str] | None = None,
        before: dict[str, str] | None = None,
        key: str = "id",
    ) -> None:
        self.kind, self.subject, self.key = kind, subject, key
        self.after, self.before = after or {}, before or {}
        self.table = change.table
        self.change = change

    @cached_property
    def _postgres(self) -> _Precompiled:
        # Built on first use: a module of these constants costs every command that imports
        # it (the session hook among them) nothing until it runs one on PostgreSQL.
        changed, recorded = self.ctes("changed")
        return _Precompiled(select(*self.columns(changed)).add_cte(recorded))

    def run(
        self,
        conn: Connection,
        now: datetime,
        params: dict[str, Any],
        *,
        actor: str,
        details: dict[str, Any],
    ) -> Mapping[str, Any] | None:
        """The changed row (None when the UPDATE matched nothing, and nothing is recorded)."""
        if is_postgres(conn):
            event = _event_params(now, actor, {"changed": details})
            rows = self._postgres.run(conn, {**params, **event})
            return rows[0] if rows else None
        prior: dict[str, Any] = {}
        if self.before:
            # SQLite's writers are serialised (BEGIN IMMEDIATE): what is read here is exactly
            # what the UPDATE changes.
            table = self.table
            columns = [table.c[column] for column in self.before.values()]
            found = conn.execute(select(*columns).where(table.c.id == params[self.key])).first()
            prior = dict(zip(self.before, found or (None,) * len(columns), strict=True))
        row = conn.execute(self.change, params).first()
        if row is None:
            return None
        values: Mapping[Any, Any] = row._mapping
        shown = {**details, **prior, **{k: values[c] for k, c in self.after.items()}}
        subject = f"{self.subject}{values['id']}"
        record(conn, now, actor=actor, kind=self.kind, subject=subject, details=shown)
        return values

    def ctes(self, name: str, *, after: Any = None) -> tuple[Any, Any]:
        """PostgreSQL: the change as CTE `name` (run only if CTE `after` has a row, when
        given) and its event's INSERT as CTE `name_event`, with details `:name_details`."""
        change = self.change
        if after is not None:
            change = change.where(exists(select(after.c.id)))
        if self.before:
            # A sub-select in RETURNING runs on the statement's snapshot, which does not see
            # the statement's own change: the row as it was.
            prior = self.table.alias(f"{name}_prior")
            change = change.returning(
                *(
                    select(prior.c[column])
                    .where(prior.c.id == bindparam(self.key))
                    .scalar_subquery()
                    .label(f"prior_{detail}")
                    for detail, column in self.before.items()
                )
            )
        changed = change.cte(name)
        from_row = {**self.after, **{detail: f"prior_{detail}" for detail in self.before}}
        payload: Any = bindparam(f"{name}_details", type_=Json())
        if from_row:
            pairs = [part for key, col in from_row.items() for part in (key, changed.c[col])]
            payload = payload.op("||")(func.jsonb_build_object(*pairs))
        recorded = insert(events).from_select(
            ["at", "actor", "kind", "subject", "details"],
            select(
                bindparam("event_at", type_=Instant()),
                bindparam("event_actor", type_=String()),
                literal(self.kind),
                literal(self.subject) + cast(changed.c.id, Text),
                payload,
            ),
        )
        return changed, recorded.cte(f"{name}_event")

    def columns(self, changed: Any) -> list[Any]:
        """The changed row's columns of the table (not the `prior_…` ones)."""
        return [changed.c[column.name] for column in self.table.c]


class Chain:
    """Recorded changes run in order, each only if the one before it changed a row: on
    PostgreSQL ONE statement (a worker's "done, and the next one please" in one round trip),
    on SQLite one after the other in the caller's transaction. `run` gives each step's row or
    None; the parameters are shared, each step's event details are its own."""

    def __init__(self, *steps: Recorded) -> None:
        self.steps = steps

    @cached_property
    def _postgres(self) -> _Precompiled:
        ctes: list[Any] = []
        selects = []
        changed = None
        for n, step in enumerate(self.steps):
            changed, recorded = step.ctes(f"step{n}", after=changed)
            ctes += [changed, recorded]
            selects.append(select(literal(n).label("step"), *step.columns(changed)))
        return _Precompiled(union_all(*selects).add_cte(*ctes))

    def run(
        self,
        conn: Connection,
        now: datetime,
        params: dict[str, Any],
        *,
        actor: str,
        details: list[dict[str, Any]],
    ) -> list[Mapping[str, Any] | None]:
        found: list[Mapping[str, Any] | None] = [None] * len(self.steps)
        if is_postgres(conn):
            event = _event_params(now, actor, {f"step{n}": d for n, d in enumerate(details)})
            for row in self._postgres.run(conn, {**params, **event}):
                found[row["step"]] = row
            return found
        for n, step in enumerate(self.steps):
            found[n] = step.run(conn, now, params, actor=actor, details=details[n])
            if found[n] is None:
                break
        return found


def _event_params(now: datetime, actor: str, details: dict[str, Any]) -> dict[str, Any]:
    # Bound as the driver takes them, past the column types: through the gate here.
    return {
        "event_at": aware(now),
        "event_actor": gate.text(actor[:200], 200),
        # As the driver takes it: the SQL casts it to JSONB (see _Precompiled).
        **{
            f"{name}_details": json.dumps(gate.json_value(value)) for name, value in details.items()
        },
    }


class _Precompiled:
    """A PostgreSQL statement compiled once and run on the driver's own connection.

    For a worker's hot loop, SQLAlchemy's per-call work (processing each parameter and each
    value through its type, and a result object described column by column) costs more of
    the client's time than the driver does; these statements need none of it. Their
    parameters are plain values the driver adapts (str, int, aware datetimes) and JSON text
    the SQL casts to JSONB; their instants come back aware, in the session's time zone,
    which ondeck's PostgreSQL connections set to UTC (`db.engine`), as `Instant` gives them.
    They run on the connection's own driver connection, so inside its transaction (or
    autocommit); a driver error is handed back as SQLAlchemy's, as `conn.execute` would
    (a lost connection invalidated), so `translate_errors` and the pool see no difference.
    """

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self.names = [column.key for column in statement.selected_columns]
        self.compiled: Any = None  # on first use: only then is the PostgreSQL dialect loaded
        self.scrubbed: dict[str, ScrubbedText] = {}

    def run(self, conn: Connection, params: dict[str, Any]) -> list[dict[str, Any]]:
        if self.compiled is None:
            self.compiled = self.statement.compile(dialect=conn.dialect)
            # The parameters bound to scrubbed columns (db/gate.py): their types are passed
            # over here, the gate is not.
            self.scrubbed = {
                name: bind.type
                for name, bind in self.compiled.binds.items()
                if isinstance(bind.type, ScrubbedText)
            }
        sql, values = self.compiled.string, {**self.compiled.params, **params}
        for name, column_type in self.scrubbed.items():
            if isinstance(values.get(name), str):
                values[name] = gate.text(values[name], column_type.length)
        _, rows = on_driver(conn, sql, values)
        return [dict(zip(self.names, row, strict=True)) for row in rows]


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
    view: SideView = EVERY_SIDE,
) -> list[Event]:
    """Newest first; `before_id` pages back through history (keyset, so deep pages stay fast).
    `view`: a reader held to one side sees the events of that side's tasks, schedules, notes
    and sessions only (an event's details name its subject's title); the store's own events
    (backups, tokens, workers) are the owner's."""
    query = select(events).order_by(events.c.id.desc()).limit(max(1, min(limit, MAX_LIMIT)))
    if view.sides_on:
        query = query.where(events.c.subject.in_(subjects_of(view)))
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


def subjects_of(view: SideView) -> Any:
    """The event subjects (`task:12`, …) of the items `view` sees, as one subquery."""

    def named(prefix: str, table: Any, side: Any) -> Any:
        subject = literal(prefix, String) + cast(table.c.id, String)
        return select(subject).where(side)

    def sided(column: Any) -> Any:
        if view.inbox:
            return column.is_(None)
        return column == view.side if view.side else literal(False)

    return union_all(
        named("task:", tasks, sided(tasks.c.side)),
        named("schedule:", schedules, sided(schedules.c.side)),
        named("note:", notes, sided(notes.c.side)),
        named(
            "session:",
            sessions,
            sessions.c.unclassified.is_(True)
            if view.inbox
            else sessions.c.unclassified.is_(False) & sided(sessions.c.side),
        ),
    )
