"""The lease holder's steps (claim, renew, complete with the token): one statement each on
PostgreSQL, their events exactly as on SQLite, and safe on a connection that commits every
statement."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
import psycopg.sql
import pytest
from sqlalchemy import Connection, Engine, func, insert, select

from ondeck.core.errors import LeaseLost, NotFound, Unavailable
from ondeck.db.engine import autocommitting, translate_errors
from ondeck.db.tables import events as events_table
from ondeck.db.tables import tasks
from ondeck.system import events
from ondeck.work import backlog, task_statements

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


def only_postgres(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite runs these as several statements inside the caller's transaction")


@contextmanager
def counting(engine: Engine) -> Iterator[list[str]]:
    """Every statement sent to PostgreSQL, counted at the driver (the holder's steps do not
    go through SQLAlchemy's cursor)."""
    statements: list[str] = []
    real = psycopg.Cursor.execute

    def execute(self, query, *args, **kwargs):  # type: ignore[no-untyped-def]
        statements.append(str(query))
        return real(self, query, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(psycopg.Cursor, "execute", execute)
        yield statements


def details(conn: Connection, kind: str) -> list[dict]:
    return [e.details for e in reversed(events.list_events(conn, kind=kind))]


def test_the_holders_steps_record_the_same_events_on_both_stores(engine: Engine) -> None:
    with engine.begin() as conn:
        first = backlog.create_task(conn, NOW, title="a", actor="cli").id
        second = backlog.create_task(conn, NOW, title="b", project="site", actor="cli").id
    with engine.begin() as conn:
        held = backlog.claim_task(conn, NOW, first, owner="claude:s1", actor="cli")
        nxt = backlog.claim_next(conn, NOW, owner="claude:s2", project="site", actor="mcp:x")
        later = NOW + timedelta(minutes=30)
        renewed = backlog.renew_lease(conn, later, first, token=held.lease_token, actor="cli")
        done = backlog.complete_task(
            conn, later, second, token=nxt.lease_token, note="shipped", actor="cli"
        )
    assert (held.status, held.lease_owner, held.lease_token) == ("RUNNING", "claude:s1", 1)
    assert (nxt.id, nxt.lease_token) == (second, 1)
    assert renewed.lease_until == later + timedelta(hours=1)
    assert (done.status, done.lease_owner, done.lease_until, done.done_at) == (
        "DONE",
        None,
        None,
        later,
    )
    with engine.connect() as conn:
        hour = "2026-06-15T10:00:00+00:00"
        assert details(conn, "task.claimed") == [
            {"owner": "claude:s1", "token": 1, "lease_until": hour, "next": False},
            {"owner": "claude:s2", "token": 1, "lease_until": hour, "next": True},
        ]
        assert details(conn, "task.renewed") == [
            {"owner": "claude:s1", "token": 1, "lease_until": "2026-06-15T10:30:00+00:00"}
        ]
        assert details(conn, "task.completed") == [
            {"owner": "claude:s2", "token": 1, "by_hand": False, "note": "shipped"}
        ]
        subjects = [e.subject for e in events.list_events(conn, kind="task.")]
        actors = [e.actor for e in events.list_events(conn, kind="task.claimed")]
    assert subjects[:4] == [f"task:{second}", f"task:{first}", f"task:{second}", f"task:{first}"]
    assert actors == ["mcp:x", "cli"]


def test_on_postgresql_each_holder_step_is_one_statement(engine: Engine) -> None:
    only_postgres(engine)
    with engine.begin() as conn:
        task_id = backlog.create_task(conn, NOW, title="a", actor="cli").id
        backlog.create_task(conn, NOW, title="b", project="p", actor="cli")
    with autocommitting(engine) as conn, counting(engine) as statements:
        held = backlog.claim_task(conn, NOW, task_id, owner="w", actor="cli")
        assert len(statements) == 1
        backlog.renew_lease(conn, NOW, task_id, token=held.lease_token, actor="cli")
        assert len(statements) == 2
        backlog.complete_task(conn, NOW, task_id, token=held.lease_token, actor="cli")
        assert len(statements) == 3
        other = backlog.claim_next(conn, NOW, owner="w", project="p", actor="cli")
        assert len(statements) == 4
        backlog.complete_task(conn, NOW, other.id, token=other.lease_token, actor="cli")
        assert len(statements) == 5
    assert all(s.lstrip().startswith("WITH changed AS") for s in statements)
    # Run straight through the driver: instants still come back aware, in UTC.
    assert other.lease_until == NOW + timedelta(hours=1)
    assert other.lease_until.utcoffset() == timedelta(0)
    assert other.created_at.utcoffset() == timedelta(0)
    with engine.connect() as conn:
        assert details(conn, "task.completed")[0]["owner"] == "w"
        assert conn.execute(select(func.count()).select_from(events_table)).scalar_one() == 7


def test_a_refused_step_on_an_autocommitting_connection_changes_nothing(engine: Engine) -> None:
    only_postgres(engine)
    with engine.begin() as conn:
        task_id = backlog.create_task(conn, NOW, title="a", actor="cli").id
    with autocommitting(engine) as conn:
        held = backlog.claim_task(conn, NOW, task_id, owner="w", actor="cli")
        with engine.connect() as reader:
            before = reader.execute(select(tasks)).all()
            count = reader.execute(select(func.count()).select_from(events_table)).scalar_one()
        with pytest.raises(LeaseLost, match="held by w"):
            backlog.complete_task(conn, NOW, task_id, token=held.lease_token + 1, actor="cli")
        with pytest.raises(LeaseLost):
            backlog.renew_lease(conn, NOW, task_id, token=0, actor="cli")
        with pytest.raises(NotFound):
            backlog.complete_task(conn, NOW, task_id + 1, token=1, actor="cli")
    with engine.connect() as reader:
        assert reader.execute(select(tasks)).all() == before
        assert reader.execute(select(func.count()).select_from(events_table)).scalar_one() == count


def test_autocommitting_refuses_sqlite(engine: Engine) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("the refusal is SQLite's")
    with pytest.raises(ValueError, match="PostgreSQL"), autocommitting(engine):
        pass


def test_the_claim_reads_the_ready_index_even_as_a_generic_plan(engine: Engine) -> None:
    """psycopg prepares a statement run five times on a connection, and PostgreSQL may then
    plan it once for any parameters: the partial index (WHERE status = 'READY') only serves
    such a plan when the status is written into the SQL rather than bound."""
    only_postgres(engine)
    statement = task_statements.CLAIM_NEXT_IN._postgres.statement.compile(dialect=engine.dialect)
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    sql = re.sub(r"%\((\w+)\)s", number, statement.string)
    values = {
        **statement.params,
        "in_project": "p",
        "now": NOW,
        "owner": "w",
        "until": NOW,
        "event_at": NOW,
        "event_actor": "cli",
        "event_details": "{}",
    }
    with engine.connect() as conn:
        conn.exec_driver_sql(f"PREPARE claim_next AS {sql}")
        conn.exec_driver_sql("SET plan_cache_mode = force_generic_plan")
        driver = conn.connection.driver_connection
        args = ", ".join(psycopg.sql.Literal(values[n]).as_string(driver) for n in names)
        plan = conn.exec_driver_sql(f"EXPLAIN EXECUTE claim_next({args})").all()
    text = "\n".join(row[0] for row in plan)
    assert "ix_tasks_ready" in text, text


def test_postgresql_plans_the_claim_once_not_at_every_claim(engine: Engine) -> None:
    """psycopg prepares a statement a connection runs five times; PostgreSQL then keeps one
    generic plan when it costs no more than planning anew, which a bound LIMIT prevents.
    Planning at every claim doubled the server's work per claim."""
    only_postgres(engine)
    rows = [
        {"title": f"t{i}", "project": "p", "priority": i % 10, "created_at": NOW, "updated_at": NOW}
        for i in range(3000)
    ]
    with engine.begin() as conn:
        conn.execute(insert(tasks), rows)
        conn.exec_driver_sql("ANALYZE tasks")
    with autocommitting(engine) as conn:
        for _ in range(15):
            held = backlog.claim_next(conn, NOW, owner="w", project="p", actor="cli")
            backlog.complete_task(conn, NOW, held.id, token=held.lease_token, actor="cli")
        plans = conn.exec_driver_sql(
            "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
        ).all()
    claims = [p for p in plans if "WITH changed AS" in p.statement]
    assert len(claims) == 2, plans  # claim-next in a project, and complete
    for plan in claims:
        assert plan.generic_plans >= 5, plan


def test_done_and_next_completes_then_takes_the_next_with_both_events(engine: Engine) -> None:
    with engine.begin() as conn:
        first = backlog.create_task(conn, NOW, title="a", project="p", actor="cli").id
        second = backlog.create_task(conn, NOW, title="b", project="p", priority=3, actor="cli")
        backlog.create_task(conn, NOW, title="elsewhere", project="q", priority=0, actor="cli")
        held = backlog.claim_task(conn, NOW, first, owner="w", actor="cli")
    later = NOW + timedelta(minutes=5)
    with engine.begin() as conn:
        done, taken = backlog.complete_and_claim_next(
            conn, later, first, token=held.lease_token, note="ok", owner="w", project="p",
            duration="2h", actor="mcp:x",
        )  # fmt: skip
    assert (done.id, done.status, done.done_at, done.lease_owner) == (first, "DONE", later, None)
    assert taken is not None
    assert (taken.id, taken.status, taken.lease_owner) == (second.id, "RUNNING", "w")
    assert taken.lease_until == later + timedelta(hours=2)
    with engine.connect() as conn:
        assert details(conn, "task.completed") == [
            {"owner": "w", "token": 1, "by_hand": False, "note": "ok"}
        ]
        assert details(conn, "task.claimed")[-1] == {
            "owner": "w", "token": 1, "lease_until": "2026-06-15T11:05:00+00:00", "next": True,
        }  # fmt: skip
    with engine.begin() as conn:
        last, none = backlog.complete_and_claim_next(
            conn, later, second.id, token=taken.lease_token, owner="w", project="p", actor="cli"
        )
    assert (last.status, none) == ("DONE", None), "nothing READY left in p: done, no next"


def test_done_and_next_refused_takes_nothing(engine: Engine) -> None:
    with engine.begin() as conn:
        first = backlog.create_task(conn, NOW, title="a", actor="cli").id
        backlog.create_task(conn, NOW, title="b", actor="cli")
        held = backlog.claim_task(conn, NOW, first, owner="w", actor="cli")
    with engine.connect() as reader:
        before = reader.execute(select(tasks).order_by(tasks.c.id)).all()
        count = reader.execute(select(func.count()).select_from(events_table)).scalar_one()
    with pytest.raises(LeaseLost), engine.begin() as conn:
        backlog.complete_and_claim_next(
            conn, NOW, first, token=held.lease_token + 1, owner="w", actor="cli"
        )
    with pytest.raises(NotFound), engine.begin() as conn:
        backlog.complete_and_claim_next(conn, NOW, 999, token=1, owner="w", actor="cli")
    with engine.connect() as reader:
        assert reader.execute(select(tasks).order_by(tasks.c.id)).all() == before
        assert reader.execute(select(func.count()).select_from(events_table)).scalar_one() == count


def test_on_postgresql_done_and_next_is_one_statement(engine: Engine) -> None:
    only_postgres(engine)
    with engine.begin() as conn:
        for title in ("a", "b", "c"):
            backlog.create_task(conn, NOW, title=title, actor="cli")
    seen: list[int] = []
    with autocommitting(engine) as conn:
        task = backlog.claim_next(conn, NOW, owner="w", actor="cli")
        with counting(engine) as statements:
            while task is not None:
                seen.append(task.id)
                _, task = backlog.complete_and_claim_next(
                    conn, NOW, task.id, token=task.lease_token, owner="w", actor="cli"
                )
    assert len(seen) == 3 and len(set(seen)) == 3
    assert len(statements) == 3, "one statement per done-and-next, the last taking nothing"
    with engine.connect() as conn:
        counts = dict(
            conn.execute(
                select(events_table.c.kind, func.count()).group_by(events_table.c.kind)
            ).all()
        )
    assert counts == {"task.created": 3, "task.claimed": 3, "task.completed": 3}


def test_claim_next_walks_the_ready_index_without_sorting(engine: Engine) -> None:
    """Dated tasks first, then undated, each straight from the index: no walk past every
    undated task, no sort of every READY task."""
    statement = task_statements.CLAIM_NEXT.change if engine.dialect.name == "sqlite" else None
    if statement is None:
        statement = task_statements.CLAIM_NEXT._postgres.statement
    compiled = statement.compile(dialect=engine.dialect)
    prefix = "EXPLAIN QUERY PLAN " if engine.dialect.name == "sqlite" else "EXPLAIN "
    values = {
        **compiled.params,
        "now": NOW,
        "owner": "w",
        "until": NOW,
        "event_at": NOW,
        "event_actor": "cli",
        "changed_details": "{}",
    }
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            args: Any = tuple(values[name] for name in compiled.positiontup)
            values = {
                k: v.replace(tzinfo=None) if isinstance(v, datetime) else v
                for k, v in values.items()
            }
            args = tuple(values[name] for name in compiled.positiontup)
        else:
            args = values
        plan = "\n".join(
            str(row[-1]) for row in conn.exec_driver_sql(prefix + compiled.string, args)
        )
    assert "ix_tasks_ready" in plan, plan
    # SQLite: a SEARCH of the index, not a SCAN that walks every undated task (kept first)
    # to find a dated one; PostgreSQL: no sort of the READY tasks.
    assert "SCAN" not in plan and "TEMP B-TREE" not in plan and "Sort" not in plan, plan


def test_claim_next_takes_dated_tasks_first_then_undated(engine: Engine) -> None:
    with engine.begin() as conn:
        made = [
            backlog.create_task(conn, NOW, title=title, priority=prio, due_on=due, actor="cli").id
            for title, prio, due in [
                ("undated urgent", 0, None),
                ("due later", 0, date(2026, 7, 1)),
                ("undated", 5, None),
                ("due soon, low", 9, date(2026, 6, 20)),
                ("due soon, high", 1, date(2026, 6, 20)),
            ]
        ]
    order = []
    with engine.begin() as conn:
        for _ in made:
            order.append(backlog.claim_next(conn, NOW, owner="w", actor="cli").title)
    assert order == ["due soon, high", "due soon, low", "due later", "undated urgent", "undated"]


def test_a_lost_connection_on_a_holder_step_is_unavailable_not_a_crash(engine: Engine) -> None:
    """The holder's steps run on the driver's connection: its errors still come back as
    SQLAlchemy's, the dead connection invalidated, `Unavailable` (503 / exit 5) for callers."""
    only_postgres(engine)
    with engine.begin() as conn:
        backlog.create_task(conn, NOW, title="a", actor="cli")
    with autocommitting(engine) as conn:
        backend = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        with engine.connect() as other:
            other.exec_driver_sql(f"SELECT pg_terminate_backend({backend})")
        with pytest.raises(Unavailable, match="database unavailable"), translate_errors():
            backlog.claim_next(conn, NOW, owner="w", actor="cli")
        assert conn.invalidated
    with engine.begin() as conn:  # the pool hands out a working connection again
        assert backlog.claim_next(conn, NOW, owner="w", actor="cli").title == "a"
