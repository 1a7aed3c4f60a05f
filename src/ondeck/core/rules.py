"""Recurrence rules: which days a scheduled task comes due, written the way people say it.

Grammar (case-insensitive; spaces allowed around `:` and `,` and at either end)::

    daily              every day
    weekly:DAYS        DAYS from MON TUE WED THU FRI SAT SUN, e.g. weekly:MON,THU
                       (full English names such as monday are accepted too)
    monthly:DAYS       DAYS from 1 to 28, and/or `last`, e.g. monthly:1,15,last
    every:N            every N days (1 to 3650), counted from the schedule's start date

Repeated days merge, so a rule holds at most 7 weekdays or 29 month entries (1-28 and last).
`str(rule)` is the canonical spelling: upper-case weekdays Monday first, month days ascending
with `last` at the end, no spaces (`weekly: thu, mon` -> `weekly:MON,THU`).

Days 29, 30 and 31 are refused on purpose: not every month has them, and RFC 5545 (and so
python-dateutil and most calendar apps) silently skip the months without them, while other
tools clamp or roll over. `monthly:last` is the one explicit way to say "the last day of the
month" (RRULE `BYMONTHDAY=-1`).

Nothing here reads a clock: every function takes its dates. `start` is the schedule's first
possible day: nothing occurs before it, and `every:N` counts from it (start, start+N, ...).
An answer that would fall after 9999-12-31 (`date.max`) raises RuleError("date out of range").
Computation is arithmetic on day ordinals, never a day-by-day walk.

Every error is a RuleError whose `str` is one line saying what was wrong and what is accepted.
A RuleError is an `InvalidInput` (code `invalid_rule`: exit 2, HTTP 422), whether it comes
from parsing or from the arithmetic, so no caller converts it: `parse` is the one way to read
a rule, and what it raises is already the error every entry point shows.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache

from ondeck.core.errors import InvalidInput

__all__ = ["Daily", "Every", "Monthly", "Rule", "RuleError", "Weekly", "parse"]

MAX_LENGTH = 200
MAX_EVERY = 3650
WEEKDAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")

_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_WEEKDAY_KEYS = {w: i for i, w in enumerate(WEEKDAYS)} | {
    n.upper(): i for i, n in enumerate(_DAY_NAMES)
}
_RRULE_DAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MAX_ORD = date.max.toordinal()

_FORMS = (
    "daily, weekly:DAYS (MON to SUN, such as weekly:MON,THU), "
    "monthly:DAYS (1 to 28 or last, such as monthly:1,15) "
    "or every:N (N days from the start date, 1 to 3650)"
)
_ONE_TO_28 = "use a day from 1 to 28, or last for the last day of every month"


class RuleError(InvalidInput, ValueError):
    """A rule that cannot be used; the message, one line, says why and what is accepted."""

    code = "invalid_rule"

    def __init__(self, message: str) -> None:
        # One line, always (InvalidInput joins the lines): terminals, logs and JSON.
        super().__init__(message)


class Rule:
    """Base of Daily, Weekly, Monthly and Every: frozen, hashable, equal by value."""

    __slots__ = ()

    def describe(self) -> str:
        """Plain English, such as "every Monday and Thursday"."""
        raise NotImplementedError

    def rrule_value(self) -> str:
        """The RFC 5545 RRULE value, such as `FREQ=WEEKLY;BYDAY=MO,TH`."""
        raise NotImplementedError

    # Subclasses answer on day ordinals; the public methods handle start and the range.
    def _next(self, o: int, s: int) -> int:
        """First occurrence >= o, given o >= s; may exceed date.max's ordinal."""
        raise NotImplementedError

    def _last(self, o: int, s: int) -> int | None:
        """Last occurrence <= o, given o >= s; may fall before s (the caller checks)."""
        raise NotImplementedError

    def next_on_or_after(self, day: date, start: date) -> date:
        """The first occurrence on or after both `day` and `start`."""
        return self._first_from(day.toordinal(), start.toordinal())

    def next_after(self, day: date, start: date) -> date:
        """The first occurrence strictly after `day` (and on or after `start`)."""
        return self._first_from(day.toordinal() + 1, start.toordinal())

    def last_on_or_before(self, day: date, start: date) -> date | None:
        """The latest occurrence on or before `day`, or None if there is none since `start`."""
        o, s = day.toordinal(), start.toordinal()
        if o < s:
            return None
        found = self._last(o, s)
        return None if found is None or found < s else date.fromordinal(found)

    def occurrences(self, start: date, from_day: date, count: int) -> list[date]:
        """The next `count` occurrences on or after `from_day` (and `start`).

        Fewer come back only when date.max is reached first.
        """
        if count < 0:
            raise ValueError(f"count must not be negative, got {count}")
        s = start.toordinal()
        o = max(from_day.toordinal(), s)
        found: list[date] = []
        while len(found) < count and o <= _MAX_ORD:
            o = self._next(o, s)
            if o > _MAX_ORD:
                break
            found.append(date.fromordinal(o))
            o += 1
        return found

    def to_rrule(self, start: date) -> str:
        """DTSTART and RRULE lines for RFC 5545 consumers, yielding the same dates from start."""
        # Formatted by hand: strftime("%Y") does not zero-pad years before 1000 on every libc.
        dtstart = f"{start.year:04d}{start.month:02d}{start.day:02d}"
        return f"DTSTART;VALUE=DATE:{dtstart}\nRRULE:{self.rrule_value()}"

    def _first_from(self, o: int, s: int) -> date:
        o = max(o, s)
        if o <= _MAX_ORD:
            o = self._next(o, s)
        if o > _MAX_ORD:
            raise RuleError(f"date out of range: the next {self} day would fall after {date.max}")
        return date.fromordinal(o)


@dataclass(frozen=True, slots=True)
class Daily(Rule):
    """Every day from the start date."""

    def __str__(self) -> str:
        return "daily"

    def describe(self) -> str:
        return "every day"

    def rrule_value(self) -> str:
        return "FREQ=DAILY"

    def _next(self, o: int, s: int) -> int:
        return o

    def _last(self, o: int, s: int) -> int | None:
        return o


@dataclass(frozen=True, slots=True)
class Weekly(Rule):
    """On the given weekdays, 0 = Monday ... 6 = Sunday."""

    days: frozenset[int]
    # Days forward to the next chosen weekday and back to the previous one, by weekday.
    _ahead: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _behind: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        days = frozenset(self.days)
        if not days or not all(type(d) is int and 0 <= d <= 6 for d in days):
            raise RuleError(f"weekly needs weekdays 0 (Monday) to 6 (Sunday), got {self.days!r}")
        object.__setattr__(self, "days", days)
        object.__setattr__(self, "_ahead", tuple(min((d - w) % 7 for d in days) for w in range(7)))
        object.__setattr__(self, "_behind", tuple(min((w - d) % 7 for d in days) for w in range(7)))

    def __str__(self) -> str:
        return "weekly:" + ",".join(WEEKDAYS[d] for d in sorted(self.days))

    def describe(self) -> str:
        if len(self.days) == 7:
            return "every day"
        return "every " + _and([_DAY_NAMES[d] for d in sorted(self.days)])

    def rrule_value(self) -> str:
        return "FREQ=WEEKLY;BYDAY=" + ",".join(_RRULE_DAYS[d] for d in sorted(self.days))

    # Ordinal 1 (0001-01-01) is a Monday, so the weekday of ordinal o is (o - 1) % 7.
    def _next(self, o: int, s: int) -> int:
        return o + self._ahead[(o - 1) % 7]

    def _last(self, o: int, s: int) -> int | None:
        return o - self._behind[(o - 1) % 7]


@dataclass(frozen=True, slots=True)
class Monthly(Rule):
    """On the given days of every month (1 to 28), and/or on its last day."""

    days: frozenset[int] = frozenset()
    last: bool = False
    _sorted: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        days = frozenset(self.days)
        for d in days:
            if type(d) is not int or not 1 <= d <= 31:
                raise RuleError(f"monthly needs days from 1 to 28, got {d!r}")
            if d > 28:
                raise RuleError(_not_every_month(d))
        if type(self.last) is not bool or not (days or self.last):
            raise RuleError(f"monthly needs at least one day: {_ONE_TO_28}")
        object.__setattr__(self, "days", days)
        object.__setattr__(self, "_sorted", tuple(sorted(days)))

    def __str__(self) -> str:
        return "monthly:" + ",".join([*map(str, self._sorted), *(["last"] if self.last else [])])

    def describe(self) -> str:
        parts = [_ordinal(d) for d in self._sorted]
        if self.last:
            parts.append("last day")
        return f"on the {_and(parts)} of every month"

    def rrule_value(self) -> str:
        values = [*map(str, self._sorted), *(["-1"] if self.last else [])]
        return "FREQ=MONTHLY;BYMONTHDAY=" + ",".join(values)

    # Listed days are <= 28 and the last day is >= 28, so this month or the next one
    # always holds the answer, in both directions.
    def _next(self, o: int, s: int) -> int:
        d = date.fromordinal(o)
        month_end = o - d.day + _month_length(d.year, d.month)
        i = bisect_left(self._sorted, d.day)
        if i < len(self._sorted):
            return o - d.day + self._sorted[i]
        if self.last:
            return month_end
        return month_end + self._sorted[0]

    def _last(self, o: int, s: int) -> int | None:
        d = date.fromordinal(o)
        if self.last and d.day == _month_length(d.year, d.month):
            return o
        i = bisect_right(self._sorted, d.day)
        if i:
            return o - d.day + self._sorted[i - 1]
        previous_end = o - d.day
        if previous_end < 1:
            return None
        if self.last:
            return previous_end
        return previous_end - date.fromordinal(previous_end).day + self._sorted[-1]


@dataclass(frozen=True, slots=True)
class Every(Rule):
    """Every n days, counted from the start date: start, start + n, start + 2n, ..."""

    n: int

    def __post_init__(self) -> None:
        if type(self.n) is not int or not 1 <= self.n <= MAX_EVERY:
            raise RuleError(
                f"every needs a whole number of days from 1 to {MAX_EVERY}, got {self.n!r}"
            )

    def __str__(self) -> str:
        return f"every:{self.n}"

    def describe(self) -> str:
        return "every day" if self.n == 1 else f"every {self.n} days"

    def rrule_value(self) -> str:
        return f"FREQ=DAILY;INTERVAL={self.n}"

    def _next(self, o: int, s: int) -> int:
        return s - (s - o) // self.n * self.n  # s + ceil((o - s) / n) * n

    def _last(self, o: int, s: int) -> int | None:
        return s + (o - s) // self.n * self.n


# --- parsing ----------------------------------------------------------------------------

# Words people try that have a rule; only for a friendlier error.
_HINTS = {
    "WEEKDAYS": "weekly:MON,TUE,WED,THU,FRI",
    "WEEKENDS": "weekly:SAT,SUN",
    "BIWEEKLY": "every:14",
    "FORTNIGHTLY": "every:14",
    "EVERYDAY": "daily",
    "EVERY DAY": "daily",
}
_NEEDS_LIST = {
    "WEEKLY": "weekly needs its days after a colon, such as weekly:MON,THU",
    "MONTHLY": "monthly needs its days after a colon, such as monthly:1,15 or monthly:last",
    "EVERY": "every needs a number of days after a colon, such as every:3",
}


def parse(text: str) -> Rule:
    """The rule `text` spells, or RuleError (and nothing else) saying what is wrong.

    Refused: non-text, more than 200 characters, empty text, unknown words, unknown
    weekdays, days 0 or past 28 (29-31 with the reason), every:0 or past 3650, anything not
    a whole number where one is needed, empty or trailing list entries, and cron schedules
    (with the rule that says the same days, when there is one).

    Cached: the jobs tick and every listing read the same few stored rules again and again
    (rules are frozen, so one instance serves every caller).
    """
    if not isinstance(text, str):
        raise RuleError(f"a rule must be text, not {type(text).__name__}")
    return _parse(text)


@lru_cache(maxsize=4096)
def _parse(text: str) -> Rule:
    if len(text) > MAX_LENGTH:
        raise RuleError(
            f"the rule is too long ({len(text)} characters, at most {MAX_LENGTH}): use {_FORMS}"
        )
    whole = text.strip()
    if not whole:
        raise RuleError(f"the rule is empty: use {_FORMS}")
    head, colon, tail = whole.partition(":")
    kind = _key(head)
    if kind == "DAILY":
        if colon:
            raise RuleError(f"daily takes nothing after a colon: write daily, not {_q(whole)}")
        return Daily()
    if kind in _NEEDS_LIST:
        if not colon or not tail.strip():
            raise RuleError(_NEEDS_LIST[kind])
        if kind == "WEEKLY":
            return Weekly(frozenset(_weekday(item) for item in _items(tail, whole)))
        if kind == "MONTHLY":
            items = [(item, _key(item) == "LAST") for item in _items(tail, whole)]
            days = frozenset(_month_day(item) for item, last in items if not last)
            return Monthly(days, any(last for _, last in items))
        return Every(_every(tail.strip()))
    _reject_cron(whole)
    hint = _HINTS.get(_key(whole))
    if hint:
        raise RuleError(f"unknown rule {_q(whole)}: write {hint}")
    raise RuleError(f"unknown rule {_q(head if colon else whole)}: use {_FORMS}")


def _items(tail: str, whole: str) -> list[str]:
    items = [item.strip() for item in tail.split(",")]
    if not items[-1]:
        raise RuleError(f"trailing comma in {_q(whole)}: end the list with a day")
    if not all(items):
        raise RuleError(f"empty entry in {_q(whole)}: separate days with single commas")
    for item in items:
        if any(c.isspace() for c in item):
            raise RuleError(f"{_q(item)} in {_q(whole)}: separate days with commas")
    return items


def _weekday(item: str) -> int:
    day = _WEEKDAY_KEYS.get(_key(item))
    if day is None:
        raise RuleError(f"unknown weekday {_q(item)}: use MON, TUE, WED, THU, FRI, SAT or SUN")
    return day


def _month_day(item: str) -> int:
    if not _is_number(item):
        raise RuleError(f"{_q(item)} is not a day of the month: {_ONE_TO_28}")
    day = int(item)
    if day == 0:
        raise RuleError(f"day 0 does not exist: {_ONE_TO_28}")
    if day > 31:
        raise RuleError(f"no month has a day {_num(item)}: {_ONE_TO_28}")
    if day > 28:
        raise RuleError(_not_every_month(day))
    return day


def _not_every_month(day: int) -> str:
    return (
        f"day {day} is refused: not every month has a day {day}, so those months would "
        "be skipped (RFC 5545 calendars skip them, others clamp or roll over); "
        f"{_ONE_TO_28}"
    )


def _every(item: str) -> int:
    if not _is_number(item):
        raise RuleError(
            f"{_q(item)} is not a whole number of days: use every:N with N from 1 to "
            f"{MAX_EVERY}, such as every:3"
        )
    n = int(item)
    if n == 0:
        raise RuleError(f"every:0 would never repeat: use a number of days from 1 to {MAX_EVERY}")
    if n > MAX_EVERY:
        raise RuleError(
            f"every:{_num(item)} is too far apart: at most every:{MAX_EVERY} (about 10 years)"
        )
    return n


# --- cron, refused with the rule that means the same days ------------------------------

_CRON_TIME = re.compile(r"[0-9*/,-]+")
_CRON_DAY = re.compile(r"[0-9A-Za-z*/,?#-]+")
_CRON_ALIASES = {
    "@DAILY": "daily",
    "@MIDNIGHT": "daily",
    "@WEEKLY": "weekly:SUN",
    "@MONTHLY": "monthly:1",
    "@YEARLY": None,
    "@ANNUALLY": None,
    "@HOURLY": None,
    "@REBOOT": None,
}


def _reject_cron(whole: str) -> None:
    fields = whole.split()
    word = _key(whole)
    if word in _CRON_ALIASES:
        equivalent = _CRON_ALIASES[word]
    elif (
        len(fields) == 5
        and all(_CRON_TIME.fullmatch(f) for f in fields[:2])
        and all(_CRON_DAY.fullmatch(f) for f in fields[2:])
    ):
        equivalent = _cron_days(*fields[2:])
    else:
        return
    if equivalent:
        raise RuleError(
            f"{_q(whole)} looks like a cron schedule; rules name days, not times of day: "
            f"write {equivalent}"
        )
    raise RuleError(f"{_q(whole)} looks like a cron schedule with no rule equivalent: use {_FORMS}")


def _cron_days(month_days: str, months: str, weekdays: str) -> str | None:
    """The rule for cron's day fields, or None when cron means something no rule says."""
    if months != "*":
        return None
    any_day, any_weekday = month_days in ("*", "?"), weekdays in ("*", "?")
    try:
        if any_day and any_weekday:
            return str(Daily())
        if any_day:
            # cron counts Sunday as 0 (and 7), Monday as 1.
            return str(Weekly(frozenset((c - 1) % 7 for c in _cron_values(weekdays, _cron_dow))))
        if any_weekday:
            parts = month_days.split(",")
            last = "L" in parts
            rest = ",".join(p for p in parts if p != "L")
            days = frozenset(_cron_values(rest, _cron_dom)) if rest else frozenset()
            return str(Monthly(days, last))
    except ValueError:
        pass
    # Both day fields restricted (cron then means either), or steps, or days 29-31.
    return None


def _cron_values(spec: str, one: Callable[[str], int]) -> list[int]:
    values: list[int] = []
    for part in spec.split(","):
        low, dash, high = part.partition("-")
        first, end = one(low), one(high) if dash else one(low)
        if first > end:
            raise ValueError(part)
        values.extend(range(first, end + 1))
    return values


def _cron_dow(value: str) -> int:
    if value.isdigit() and int(value) <= 7:
        return int(value)
    if value.upper() in WEEKDAYS:
        return (WEEKDAYS.index(value.upper()) + 1) % 7
    raise ValueError(value)


def _cron_dom(value: str) -> int:
    if value.isdigit() and 1 <= int(value) <= 28:
        return int(value)
    raise ValueError(value)


# --- small helpers -----------------------------------------------------------------------


def _key(text: str) -> str:
    """Upper-cased for matching keywords; non-ASCII never matches (no "ſun" -> "SUN")."""
    text = text.strip()
    return text.upper() if text.isascii() else ""


def _is_number(text: str) -> bool:
    # isdigit alone accepts "²" and other digits int() refuses.
    return text.isascii() and text.isdigit()


def _q(text: str) -> str:
    """User text quoted for a message: repr escapes anything that could break the line."""
    return repr(text if len(text) <= 40 else text[:39] + "…")


def _num(digits: str) -> str:
    digits = digits.lstrip("0")
    return digits if len(digits) <= 12 else digits[:12] + "…"


def _month_length(year: int, month: int) -> int:
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return _MONTH_DAYS[month - 1]


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _ordinal(n: int) -> str:
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
