"""The session context as Markdown (for an agent's context window), JSON, and hook JSON.

Light on purpose (the context's records are needed only as types): the session hook
reads the database without loading more than the context needs. Its JSON for Claude Code
(`hook_output`) is sessions/capture/events.py's, which the hook imports anyway.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta, tzinfo
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ondeck.core.clock import iso, local
from ondeck.core.humanize import counted
from ondeck.sessions.capture.events import hook_output

if TYPE_CHECKING:
    from ondeck.context.build import Context, Due, Reminder, Running
    from ondeck.core.models import Task

# The Markdown's size budget in characters (Claude Code cuts a hook's context at 10,000).
DEFAULT_CHARS = 4000
# Which lists lose items first when the Markdown is too long: the least urgent.
FIT_ORDER = ("backlog", "due", "running", "reminders")


class Format(StrEnum):
    """The context's renderings: Markdown for an agent, JSON for programs, and the JSON
    Claude Code's SessionStart hook reads."""

    markdown = "markdown"
    json = "json"
    hook = "hook"


def _hm(instant: Any, zone: tzinfo) -> str:
    return local(instant, zone).strftime("%Y-%m-%d %H:%M")


def _task_tail(task: Task) -> str:
    bits = [f"P{task.priority}"]
    if task.project:
        bits.append(task.project)
    return " · ".join(bits)


def _reminder_line(r: Reminder, zone: tzinfo) -> str:
    when = f"fired {_hm(r.fired_at, zone)}" if r.fired_at else "pending (due, not processed yet)"
    if r.removed_at is not None:
        when += f"; schedule removed {_hm(r.removed_at, zone)}"
    body = f": {r.body.strip().splitlines()[0][:200]}" if r.body.strip() else ""
    return f"- [schedule {r.schedule_id}] {r.title} ({r.rule_text}; {when}){body}"


def _running_line(r: Running, zone: tzinfo) -> str:
    t = r.task
    return (
        f"- [task {t.id}] {t.title} (held by {t.lease_owner}, {r.describe(zone)}; {_task_tail(t)})"
    )


def _due_line(d: Due) -> str:
    t = d.task
    when = "due today" if d.overdue_days == 0 else f"{counted(d.overdue_days, 'day')} overdue"
    return f"- [task {t.id}] {t.title} ({when}, {t.due_on}; {_task_tail(t)})"


_HEADINGS = {
    "reminders": "## Reminders",
    "running": "## Running",
    "due": "## Due",
    "backlog": "## Backlog (top, no due date)",
}


def _item_lines(ctx: Context, zone: tzinfo) -> dict[str, list[str]]:
    """One Markdown line per item, by list: the costly part of rendering (dates, spans)."""
    return {
        "reminders": [_reminder_line(r, zone) for r in ctx.reminders],
        "running": [_running_line(r, zone) for r in ctx.running],
        "due": [_due_line(d) for d in ctx.due],
        "backlog": [f"- [task {t.id}] {t.title} ({_task_tail(t)})" for t in ctx.backlog],
    }


def _lines(ctx: Context, items: dict[str, list[str]]) -> list[str]:
    """The whole document's lines around the item lines of `_item_lines`."""
    scope = f", side {ctx.side}" if ctx.side else ""
    scope += f", project {ctx.project}" if ctx.project else ""
    lines = [f"# On deck {ctx.date.isoformat()} ({ctx.timezone}{scope})"]
    if ctx.warnings:
        lines += ["", "## Warnings"]
        lines += [f"- {w.code}: {w.message}" for w in ctx.warnings]
    for name, heading in _HEADINGS.items():
        if items[name]:
            lines += ["", heading, *items[name]]
    if ctx.side_closed:
        lines += ["", CLOSED]
    elif not any(items.values()):
        lines += ["", "Nothing on deck."]
    if ctx.omitted:
        left = ", ".join(f"{n} {name} ({_shows_all(name, ctx)})" for name, n in ctx.omitted.items())
        lines += ["", f"Left out to fit the budget: {left}."]
    return lines


# Sides are configured and this reader has none: its tasks and reminders are no side's.
CLOSED = (
    "No tasks or reminders shown: this place belongs to no side, and every task and "
    "reminder belongs to one (the dashboard's inbox holds those without a side)."
)


def _shows_all(name: str, ctx: Context) -> str:
    """The command that lists a part in full (a reminder is a schedule, not a task)."""
    if name == "reminders":
        return "ondeck schedule list --kind remind"
    if name == "running":
        return "ondeck task list --status RUNNING"
    if name == "due":
        tomorrow = (ctx.date + timedelta(days=1)).isoformat()
        return f"ondeck task list --status READY --due-before {tomorrow}"
    return "ondeck task list --status READY"


def to_markdown(ctx: Context, zone: tzinfo) -> str:
    lines = _lines(ctx, _item_lines(ctx, zone))
    if ctx.brief is not None:
        # The brief takes what is left of the hook's 9,000 characters (brief_render).
        from ondeck.memory import brief_render as b

        room = b.HOOK_OUTPUT_MAX - b.HOOK_WRAPPER - b.HOOK_NOTES_ROOM - b.total(lines)
        lines += b.brief_lines(ctx.brief, room)
    return "\n".join(lines) + "\n"


def fit_markdown(
    ctx: Context,
    zone: tzinfo,
    limit: int = DEFAULT_CHARS,
    order: tuple[str, ...] = FIT_ORDER,
    measure: Callable[[str], int] | None = None,
) -> None:
    """Drop items from the end of the lists, taken in `order`, one at a time, until
    `to_markdown(ctx, zone)` is at most `limit` characters; count each in `ctx.omitted`.

    Each item's line is rendered once: a step only reassembles the lines (the headings and
    the "left out" line change as items go), so the result is the one re-rendering the whole
    document after every drop gives, without its cost."""
    items = _item_lines(ctx, zone)
    while True:
        lines = _lines(ctx, items)
        # The joined length, final newline included; or what `measure` says a line and its
        # line break cost (the hook's JSON: brief_render.cost).
        size = sum(map(len, lines)) + len(lines) if measure is None else sum(map(measure, lines))
        if size <= limit:
            return
        name = next((name for name in order if items[name]), None)
        if name is None:
            return
        items[name].pop()
        getattr(ctx, name).pop()
        ctx.omitted[name] = ctx.omitted.get(name, 0) + 1


def fit_context(ctx: Context, zone: tzinfo, limit: int = DEFAULT_CHARS) -> None:
    """Fit the context to `limit` characters of Markdown; with a brief, also keep the hook's
    whole output under its 9,000 characters, leaving the brief its minimum room and counting
    what the hook's JSON spends (memory/brief_render)."""
    fit_markdown(ctx, zone, limit)
    if ctx.brief is not None:
        from ondeck.memory import brief_render as b

        room = b.HOOK_OUTPUT_MAX - b.HOOK_WRAPPER - b.HOOK_NOTES_ROOM - b.BRIEF_MIN
        fit_markdown(ctx, zone, room, measure=b.cost)


def to_json(ctx: Context, zone: tzinfo) -> dict[str, Any]:
    now = ctx.generated_at

    def reminder(r: Reminder) -> dict[str, Any]:
        return {
            "schedule_id": r.schedule_id,
            "title": r.title,
            "body": r.body,
            "rule": r.rule,
            "rule_text": r.rule_text,
            "project": r.project,
            "status": "fired" if r.fired_at else "pending",
            "fire_date": r.fire_date.isoformat() if r.fire_date else None,
            "fired_at": iso(r.fired_at, zone) if r.fired_at else "pending",
            "removed_at": iso(r.removed_at, zone),
        }

    def running(r: Running) -> dict[str, Any]:
        return {
            **r.task.to_json(now, zone),
            "expired_seconds": int(r.expired_for.total_seconds()) if r.expired_for else None,
            "releases_at": iso(r.releases_at, zone),
            "lease": r.to_json(zone),
        }

    return {
        "date": ctx.date.isoformat(),
        "timezone": ctx.timezone,
        "generated_at": iso(now, zone),
        "project": ctx.project,
        "side": ctx.side,
        "side_closed": ctx.side_closed,
        "warnings": [{"code": w.code, "message": w.message} for w in ctx.warnings],
        "jobs": ctx.jobs.to_json(zone) if ctx.jobs else None,
        "reminders": [reminder(r) for r in ctx.reminders],
        "tasks": {
            "running": [running(r) for r in ctx.running],
            "due": [{**d.task.to_json(now, zone), "overdue_days": d.overdue_days} for d in ctx.due],
            "backlog": [t.to_json(now, zone) for t in ctx.backlog],
        },
        "omitted": dict(ctx.omitted),
        "budget": ctx.budget,
        **({"brief": _brief_json(ctx, zone)} if ctx.brief is not None else {}),
    }


def render(ctx: Context, zone: tzinfo, fmt: Format | str) -> str:
    """The context in one of its formats: the only place a format is chosen."""
    match Format(fmt):
        case Format.markdown:
            return to_markdown(ctx, zone)
        case Format.json:
            return json.dumps(to_json(ctx, zone), indent=2, ensure_ascii=False) + "\n"
        case Format.hook:
            return json.dumps(hook_output(to_markdown(ctx, zone)), ensure_ascii=False) + "\n"


def _brief_json(ctx: Context, zone: tzinfo) -> dict[str, Any]:
    from ondeck.memory import brief_render

    return brief_render.to_json(ctx.brief, zone) or {}
