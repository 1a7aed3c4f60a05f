"""The session context as the tests read it: built from the database at an instant, fitted
to its budget as the entry points fit it, and the reminders that feed it."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Engine

from ondeck.context.build import Context, build_context
from ondeck.context.render import DEFAULT_CHARS, fit_markdown
from ondeck.work import schedules

UTCZ = ZoneInfo("UTC")
MONDAY_9 = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


def built(engine: Engine, now: datetime = MONDAY_9, zone: tzinfo = UTCZ, **kw: Any) -> Context:
    """The context as `build_context` gives it, every list whole."""
    with engine.connect() as conn:
        return build_context(conn, now, zone=zone, **kw)


def told(
    engine: Engine,
    now: datetime = MONDAY_9,
    zone: tzinfo = UTCZ,
    char_budget: int = DEFAULT_CHARS,
    **kw: Any,
) -> Context:
    """The context as a session is told it (the entry points): built, then fitted."""
    ctx = built(engine, now, zone, **kw)
    fit_markdown(ctx, zone, char_budget)
    return ctx


def remind(engine: Engine, at: datetime, zone: tzinfo = UTCZ, **values: Any) -> int:
    """A reminder schedule made at `at`: "Weekly check" every Monday unless told otherwise."""
    values = {"title": "Weekly check", "rule": "weekly:MON", "kind": "remind", **values}
    with engine.begin() as conn:
        made: int = schedules.create_schedule(conn, at, zone, actor="cli", **values).id
        return made
