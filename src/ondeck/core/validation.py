"""The few input rules that tasks and schedules share: sizes, patterns, ranges, dates.

Each check returns the cleaned value or raises `InvalidInput` with one line naming the field,
what was wrong and what is accepted. Entry points may check earlier (pydantic models, so the
OpenAPI document is accurate) but the services always call these.
"""

from __future__ import annotations

import re
from datetime import date

from ondeck.core.errors import InvalidInput

TITLE_MAX = 500
BODY_MAX = 20_000
OWNER_MAX = 200
NOTE_MAX = 2_000
PROJECT_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"
PRIORITY_MIN, PRIORITY_MAX, PRIORITY_DEFAULT = 0, 9, 2
# Ids and tokens are BIGINT: a larger number would fail in the driver, not as bad input.
BIGINT_MAX = 2**63 - 1

_PROJECT = re.compile(PROJECT_PATTERN)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
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
    """A calendar date written `YYYY-MM-DD` (the CLI's form for due dates)."""
    raw = str(text).strip()
    if _DATE.fullmatch(raw):
        try:
            return date.fromisoformat(raw)
        except ValueError:
            pass
    raise InvalidInput(f"{name} {raw[:40]!r} is not a date: use YYYY-MM-DD, such as 2026-06-15")
