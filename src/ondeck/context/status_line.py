"""What is on deck in one short line, for Claude Code's status line (the ondeck mod).

    ondeck · 2 due · 1 reminder · lease #7 (42 min left) · ⚠ jobs loop silent

Counts are of the session context's lists (what the session was told: its side and
project), the omitted ones included; the lease is the one this session holds, if any (a
session claims tasks as `claude:<its id>`, core/session_terms.py); the warning is the jobs
loop's silence, which leaves reminders unfired and expired leases held.
"""

from __future__ import annotations

from datetime import timedelta

from ondeck.context.build import Context
from ondeck.core.humanize import span
from ondeck.core.session_terms import session_owner

# Claude Code draws the line under the prompt; past this it would wrap on a narrow terminal.
LINE_MAX = 120


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def status_line(ctx: Context, session: str | None) -> str:
    """The line for the session whose Claude Code id is `session` (None: no lease shown)."""
    parts = ["ondeck"]
    due = len(ctx.due) + ctx.omitted.get("due", 0)
    reminders = len(ctx.reminders) + ctx.omitted.get("reminders", 0)
    parts.append(_count(due, "due", "due") if due else "nothing due")
    if reminders:
        parts.append(_count(reminders, "reminder", "reminders"))
    owner = session_owner(session) if session else None
    for held in ctx.running:
        task = held.task
        if owner is None or task.lease_owner != owner or task.lease_until is None:
            continue
        left = task.lease_until - ctx.generated_at
        if left > timedelta(0):
            parts.append(f"lease #{task.id} ({span(left)} left)")
        else:
            parts.append(f"lease #{task.id} EXPIRED {span(left)} ago")
        break
    if ctx.jobs is not None and not ctx.jobs.alive:
        parts.append("⚠ jobs loop silent")
    line = " · ".join(parts)
    return line if len(line) <= LINE_MAX else line[: LINE_MAX - 1] + "…"
