"""Durations written the way people say them: `90s`, `15m`, `6h`, `2d`."""

from __future__ import annotations

import re
from datetime import timedelta

from ondeck.core.errors import InvalidInput

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# ASCII digits only: `\d` and str.isdigit() also take "²" or "١", which int() refuses or
# which nobody means as a lease length.
_PART = re.compile(r"([0-9]{1,9})\s*([smhd])")
_WHOLE = re.compile(r"(?:[0-9]{1,9}\s*[smhd]\s*)+")


def parse_duration(text: str | int | float | timedelta, *, name: str = "duration") -> timedelta:
    """`90s`, `15m`, `6h`, `2d`, or a combination such as `1h30m`; a bare number is seconds."""
    if isinstance(text, timedelta):
        return text
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if text < 0:
            raise InvalidInput(f"{name} must not be negative, got {text}")
        return timedelta(seconds=text)
    raw = str(text).strip().lower()
    if raw.isascii() and raw.isdigit() and len(raw) <= 9:
        return timedelta(seconds=int(raw))
    if not raw or not _WHOLE.fullmatch(raw):
        raise InvalidInput(
            f"{name} {str(text)[:40]!r} is not a duration: use a number and a unit "
            "s, m, h or d, such as 90s, 15m, 6h, 2d"
        )
    seconds = sum(int(n) * _UNITS[u] for n, u in _PART.findall(raw))
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """The short form back: 21600 s → `6h`, 5400 s → `1h30m`."""
    seconds = int(delta.total_seconds())
    if seconds == 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        n, seconds = divmod(seconds, size)
        if n:
            parts.append(f"{n}{unit}")
    return "".join(parts)
