"""The few input rules that tasks and schedules share: sizes, patterns, ranges, dates.

Each check returns the cleaned value or raises `InvalidInput` with one line naming the field,
what was wrong and what is accepted. Entry points may check earlier (pydantic models, so the
OpenAPI document is accurate) but the services always call these.

Dates: every date anyone gives (due dates, start dates, filters; CLI, API, dashboard, MCP)
lies in DATE_MIN..DATE_MAX. The upper end leaves more than a thousand years below
9999-12-31 (`date.max`), so the arithmetic done on a date never leaves what a date holds: a
rule's longest step (every:3650, ten years) from a start date, the next date after a fire,
the day after a date (a calendar event's end), a date's midnight in any zone. The lower end
catches typed-in years such as 0026 and keeps a midnight east of UTC above `datetime.min`.
"""

from __future__ import annotations

import re
from datetime import date, datetime

from ondeck.core.errors import InvalidInput

TITLE_MAX = 500
BODY_MAX = 20_000
EXPORT_FILE_MAX = 512 * 1024 * 1024  # a memory export `ondeck import` reads
OWNER_MAX = 200
NOTE_MAX = 2_000
TASKS_LISTED_MAX = 10_000  # `task list --limit` and the API's GET /tasks, alike
PROJECT_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"
PRIORITY_MIN, PRIORITY_MAX, PRIORITY_DEFAULT = 0, 9, 2
# Ids and tokens are BIGINT: a larger number would fail in the driver, not as bad input.
BIGINT_MAX = 2**63 - 1

DATE_MIN = date(1900, 1, 1)
DATE_MAX = date(8999, 12, 31)
DATE_RANGE = f"from {DATE_MIN.isoformat()} to {DATE_MAX.isoformat()}"

_PROJECT = re.compile(PROJECT_PATTERN)
# ASCII digits only: `\d` also takes "２０２６", which no one means in a date.
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
# Control characters (NUL above all: PostgreSQL refuses it in text) never belong in a line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _encodable(value: str, name: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{name} is not valid text (lone surrogate characters)") from None
    return value


def check_line(value: str, name: str, *, limit: int) -> str:
    """A one-line text such as a title or an owner: trimmed, not empty, no control characters."""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be text")
    value = _encodable(value.strip(), name)
    if not value:
        raise InvalidInput(f"{name} must not be empty")
    if len(value) > limit:
        raise InvalidInput(f"{name} is {len(value)} characters long; at most {limit} are allowed")
    if _CONTROL.search(value):
        raise InvalidInput(f"{name} must be one line without control characters")
    return value


def check_text(value: str | None, name: str, *, limit: int) -> str:
    """A free text such as a body or a note: may be empty or span lines, but no NUL."""
    value = _encodable(value or "", name)
    if len(value) > limit:
        raise InvalidInput(f"{name} is {len(value)} characters long; at most {limit} are allowed")
    if "\x00" in value:
        raise InvalidInput(f"{name} must not contain NUL characters")
    return value


def check_title(value: str) -> str:
    return check_line(value, "title", limit=TITLE_MAX)


def check_body(value: str | None) -> str:
    return check_text(value, "body", limit=BODY_MAX)


def check_project(value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _PROJECT.fullmatch(value):
        raise InvalidInput(
            f"project {str(value)[:80]!r} is not valid: use 1 to 64 letters, digits, '.', '_', '-'"
        )
    from ondeck.core.scrubber import scrub

    if scrub(value).redactions:
        # Stored, it would be a `[redacted:…]` marker no project name can be (and the error
        # does not repeat it).
        raise InvalidInput("project name looks like a secret (a token or key): use another name")
    return value


def check_priority(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"priority {value!r} is not a whole number from 0 to 9")
    if not PRIORITY_MIN <= value <= PRIORITY_MAX:
        raise InvalidInput(f"priority {value} is out of range: use 0 (most urgent) to 9")
    return value


def parse_priority(text: str) -> int:
    """A priority typed into a form: empty means the default; only ASCII digits count
    (`str.isdigit` also takes "²", which `int` then refuses)."""
    text = text.strip()
    if not text:
        return PRIORITY_DEFAULT
    if not (text.isascii() and text.isdigit()):
        raise InvalidInput(f"priority {text[:20]!r} is not a whole number from 0 to 9")
    return check_priority(int(text[:3]))


def check_id(value: int, name: str = "task id") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= BIGINT_MAX:
        raise InvalidInput(f"{name} {str(value)[:40]} is not valid: use a positive whole number")
    return value


def check_token(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= BIGINT_MAX:
        raise InvalidInput(
            f"lease token {str(value)[:40]} is not valid: use the number the claim gave"
        )
    return value


def parse_date(text: str, name: str = "date") -> date:
    """A calendar date written `YYYY-MM-DD`, within DATE_MIN..DATE_MAX: the one way every
    entry point reads a date (CLI options, API fields and queries, forms, MCP arguments)."""
    raw = str(text).strip()
    found = _DATE.fullmatch(raw)
    if not found:
        raise InvalidInput(f"{name} {raw[:40]!r} is not a date: use YYYY-MM-DD, such as 2026-06-15")
    year, month, day = (int(part) for part in found.groups())
    if not 1 <= month <= 12:
        raise InvalidInput(f"{name} {raw!r} is not a date: there is no month {month:02d}")
    length = _month_length(year, month)
    if not 1 <= day <= length:
        raise InvalidInput(
            f"{name} {raw!r} is not a date: {_no_such_day(year, month, day, length)}"
        )
    if year == 0:  # 0000-01-01 matches the pattern, but no date has year 0
        raise InvalidInput(_out_of_range(name, raw))
    return check_date(date(year, month, day), name)


def check_date(value: date, name: str = "date") -> date:
    """A date object within DATE_MIN..DATE_MAX (a datetime is not a date here)."""
    if not isinstance(value, date) or isinstance(value, datetime):
        raise InvalidInput(f"{name} {str(value)[:40]!r} is not a calendar date")
    if not DATE_MIN <= value <= DATE_MAX:
        raise InvalidInput(_out_of_range(name, value.isoformat()))
    return value


def _out_of_range(name: str, shown: str) -> str:
    return f"{name} {shown} is out of range: use a date {DATE_RANGE}"


def _month_length(year: int, month: int) -> int:
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return _MONTH_DAYS[month - 1]


def _no_such_day(year: int, month: int, day: int, length: int) -> str:
    if month == 2 and day == 29:
        return f"{year} has no 29 February (it is not a leap year)"
    if day == 0:
        return "there is no day 00"
    return f"{_MONTHS[month - 1]} {year} has {length} days"
