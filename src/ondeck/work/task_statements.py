"""The backlog's statements over `tasks`, built once at import, and the orders lists read in.

A holder's steps (claim, claim the next, renew, complete, done-and-next) are module
constants: SQLAlchemy reuses their compiled form instead of building and compiling a
statement at every call, which costs more than the database's own work (and on PostgreSQL
`events.Recorded` runs them precompiled on the driver). `backlog` decides what to run and
why a step was refused; this module only holds what is run.

The orders are named so every reader of a list pages it the same way as the service does
(the dashboard's pages among them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Row, bindparam, func, literal_column, select, update

from ondeck.core.models import Task, TaskStatus
from ondeck.db.tables import tasks
from ondeck.system import events

# `backlog.list_tasks`: by due date (undated last), then priority, then age.
TASK_ORDER = (tasks.c.due_on.asc().nulls_last(), tasks.c.priority.asc(), tasks.c.id.asc())

# ix_tasks_ready's own order: a READY list in it is read straight from the index (claim-next,
# the context's due list). Undated tasks come first on SQLite and last on PostgreSQL, so a
# reader that shows both kinds reads them apart (see `next_ready`) or uses TASK_ORDER.
READY_ORDER = (tasks.c.due_on, tasks.c.priority, tasks.c.id)


def task_from_row(row: Row[Any] | Mapping[str, Any]) -> Task:
    """The task in a row of `tasks` (columns a statement returns besides those are left out)."""
    return Task.from_values(row._mapping if isinstance(row, Row) else row)


def status_is(status: TaskStatus) -> Any:
    """`tasks.status = 'READY'` with the value in the SQL text rather than bound: the planner
    then knows the rows of the partial indexes ix_tasks_ready/ix_tasks_running all qualify
    and reads or counts from the index alone. With a bound value SQLite re-checked each row
    in the table (15 ms to count the undated backlog at 100,000 tasks, 1 ms like this), and a
    PostgreSQL generic plan (a prepared holder's step) cannot use a partial index at all."""
    return tasks.c.status == literal_column(f"'{status.value}'")


def next_ready(*, in_project: bool, in_side: bool = False) -> Any:
    """The next READY task: dated ones by due date, then undated ones; each by priority, age.

    Two picks, the undated one only if no dated task is left, rather than one ORDER BY due
    date NULLS LAST: each seeks straight to its first row in ix_tasks_ready. SQLite keeps
    NULLs first in an index, so the single ordering walked past every undated READY task at
    every claim (about 25 ms with 100,000 of them).
    """

    def pick(dated: bool) -> Any:
        query = select(tasks.c.id).where(
            status_is(TaskStatus.READY),
            tasks.c.due_on.is_not(None) if dated else tasks.c.due_on.is_(None),
        )
        if in_project:
            query = query.where(tasks.c.project == bindparam("in_project"))
        if in_side:
            query = query.where(tasks.c.side == bindparam("in_side"))
        # Both in the index's own order (due_on is all NULL in the second, but PostgreSQL only
        # takes equalities as fixing a column, so it would sort by priority, id otherwise).
        # SKIP LOCKED: a row another claimer holds is passed over rather than waited for
        # (SQLite renders no FOR UPDATE and needs none). LIMIT 1 is written into the SQL:
        # with a bound limit PostgreSQL's generic plan looks dearer than planning anew, and
        # it would plan the statement at every claim.
        return (
            query.order_by(*READY_ORDER)
            .limit(literal_column("1"))
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )

    return func.coalesce(pick(dated=True), pick(dated=False))


def claim(which: Any) -> events.Recorded:
    """Take the READY task `which` names: RUNNING, held by :owner until :until, a new token."""
    change = (
        update(tasks)
        .where(tasks.c.id == which, status_is(TaskStatus.READY))
        .values(
            updated_at=bindparam("now"),
            status=TaskStatus.RUNNING.value,
            lease_owner=bindparam("owner"),
            lease_until=bindparam("until"),
            # Only ever grows: the new holder's token is greater than any a former one has.
            lease_token=tasks.c.lease_token + 1,
        )
        .returning(*tasks.c)
    )
    return events.Recorded(
        change, kind="task.claimed", subject="task:", after={"token": "lease_token"}
    )


def held() -> Any:
    """An UPDATE of task :task_id only while :token names its current lease."""
    return update(tasks).where(
        tasks.c.id == bindparam("task_id"),
        status_is(TaskStatus.RUNNING),
        tasks.c.lease_token == bindparam("token"),
    )


CLAIM = claim(bindparam("task_id"))
CLAIM_NEXT = claim(next_ready(in_project=False))
CLAIM_NEXT_IN = claim(next_ready(in_project=True))
RENEW = events.Recorded(
    held().values(updated_at=bindparam("now"), lease_until=bindparam("until")).returning(*tasks.c),
    kind="task.renewed",
    subject="task:",
    after={"owner": "lease_owner"},
)
COMPLETE = events.Recorded(
    held()
    .values(
        updated_at=bindparam("now"),
        status=TaskStatus.DONE.value,
        lease_owner=None,
        lease_until=None,
        done_at=bindparam("now"),
    )
    .returning(*tasks.c),
    kind="task.completed",
    subject="task:",
    before={"owner": "lease_owner"},
    key="task_id",
)
DONE_THEN_NEXT = events.Chain(COMPLETE, CLAIM_NEXT)
DONE_THEN_NEXT_IN = events.Chain(COMPLETE, CLAIM_NEXT_IN)
# The same within one side (:in_side), for a claimer that sees one side (core/sides.py).
CLAIM_NEXT_SIDE = claim(next_ready(in_project=False, in_side=True))
CLAIM_NEXT_SIDE_IN = claim(next_ready(in_project=True, in_side=True))
DONE_THEN_NEXT_SIDE = events.Chain(COMPLETE, CLAIM_NEXT_SIDE)
DONE_THEN_NEXT_SIDE_IN = events.Chain(COMPLETE, CLAIM_NEXT_SIDE_IN)
# (in a project, in a side) → the claim of the next READY task, and done-then-next.
NEXT = {
    (False, False): (CLAIM_NEXT, DONE_THEN_NEXT),
    (True, False): (CLAIM_NEXT_IN, DONE_THEN_NEXT_IN),
    (False, True): (CLAIM_NEXT_SIDE, DONE_THEN_NEXT_SIDE),
    (True, True): (CLAIM_NEXT_SIDE_IN, DONE_THEN_NEXT_SIDE_IN),
}
