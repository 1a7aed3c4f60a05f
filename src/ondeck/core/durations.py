"""Durations written the way people say them: `90s`, `15m`, `6h`, `2d`."""

from __future__ import annotations

import math
import re
from datetime import timedelta

from ondeck.core.errors import InvalidInput

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# ASCII digits only: `\d` and str.isdigit() also take "²" or "١", which int() refuses or
# which nobody means as a lease length.
_PART = re.compile(r"([0-9]+)\s*([smhd])")
_WHOLE = re.compile(r"(?:[0-9]+\s*[smhd]\s*)+")
# Longer than any duration anyone writes; keeps a pasted megabyte out of the regex.
_MAX_TEXT = 64


class TooLong(InvalidInput):
    """The duration is longer than allowed."""


def parse_duration(
    text: str | int | float | timedelta,
    *,
    name: str = "duration",
    maximum: timedelta | None = None,
) -> timedelta:
    """`90s`, `15m`, `6h`, `2d`, or a combination such as `1h30m`; a bare number is seconds.

    Never negative. With `maximum`, a longer one is refused (`TooLong`) saying the limit;
    without it, one too long for a timedelta is refused too (not an OverflowError).
    """
    if isinstance(text, timedelta):
        duration = text
    elif isinstance(text, (int, float)) and not isinstance(text, bool):
        if not math.isfinite(text):
            raise InvalidInput(f"{name} {text} is not a number of seconds")
        if text < 0:
            raise InvalidInput(f"{name} must not be negative, got {text}")
        duration = _seconds(text, name, maximum)
    else:
        duration = _seconds(_parse_text(text, name), name, maximum)
    if duration < timedelta(0):
        raise InvalidInput(f"{name} must not be negative, got {format_duration(duration)}")
    if maximum is not None and duration > maximum:
        raise TooLong(_too_long(name, format_duration(duration), maximum))
    return duration


def _parse_text(text: object, name: str) -> int:
    raw = str(text).strip().lower()
    if len(raw) <= _MAX_TEXT:
        if raw.isascii() and raw.isdigit():
            return int(raw)
        if raw and _WHOLE.fullmatch(raw):
            return sum(int(n) * _UNITS[u] for n, u in _PART.findall(raw))
    raise InvalidInput(
        f"{name} {str(text)[:40]!r} is not a duration: use a number and a unit "
        "s, m, h or d, such as 90s, 15m, 6h, 2d"
    )


def _seconds(seconds: float, name: str, maximum: timedelta | None) -> timedelta:
    try:
        return timedelta(seconds=seconds)
    except OverflowError:  # more days than a timedelta holds: over any limit
        raise TooLong(_too_long(name, "", maximum)) from None


def _too_long(name: str, shown: str, maximum: timedelta | None) -> str:
    what = f"{name} {shown}" if shown else name
    if maximum is None:
        return f"{what} is too long"
    return f"{what} is too long: at most {format_duration(maximum)}"


def format_duration(delta: timedelta) -> str:
    """The short form back: 21600 s → `6h`, 5400 s → `1h30m`."""
    seconds = int(delta.total_seconds())
    if seconds == 0:
        return "0s"
    sign, seconds = ("-", -seconds) if seconds < 0 else ("", seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        n, seconds = divmod(seconds, size)
        if n:
            parts.append(f"{n}{unit}")
    return sign + "".join(parts)
