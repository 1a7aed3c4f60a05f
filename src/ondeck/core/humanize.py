"""Short relative times and counts for people: "2 h", "in 3 h", "2 days ago", "1 commit"."""

from __future__ import annotations

from datetime import datetime, timedelta


def span(delta: timedelta) -> str:
    seconds = abs(int(delta.total_seconds()))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    if seconds < 48 * 3600:
        return f"{round(seconds / 3600)} h"
    return f"{round(seconds / 86400)} days"


def relative(instant: datetime, now: datetime) -> str:
    delta = instant - now
    if abs(delta) < timedelta(seconds=5):
        return "now"
    return f"in {span(delta)}" if delta > timedelta(0) else f"{span(delta)} ago"


def counted(number: int, word: str, plural: str | None = None) -> str:
    """ "1 commit", "2 commits", "0 days": never "commit(s)". `plural` for a word that
    does not take an s (or a phrase whose s is not at its end)."""
    return f"{number} {word if number == 1 else plural or word + 's'}"
