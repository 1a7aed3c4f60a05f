"""Checking a rule for people: canonical form, words, the next dates, or the reason it is refused.

Shared by `ondeck rule check`, `GET /api/v1/rules/check` and the dashboard's live preview.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from ondeck.core.errors import InvalidInput
from ondeck.core.rules import parse
from ondeck.core.validation import check_date

MAX_COUNT = 100


@dataclass(frozen=True, kw_only=True, slots=True)
class RuleCheck:
    rule: str
    description: str
    start: date
    next: list[date]
    rrule: str

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "description": self.description,
            "start": self.start.isoformat(),
            "next": [d.isoformat() for d in self.next],
            "rrule": self.rrule,
        }


def check_rule(text: str, *, today: date, start: date | None = None, count: int = 5) -> RuleCheck:
    """The next `count` dates from today (and not before `start`, default today).

    Refuses (`InvalidInput`; `RuleError`, code invalid_rule, for the rule) and never fails
    otherwise: fewer dates come back only when date.max is reached first.
    """
    if not 1 <= count <= MAX_COUNT:
        raise InvalidInput(f"count {count} is out of range: use 1 to {MAX_COUNT}")
    rule = parse(text)
    start = today if start is None else check_date(start, "start")
    upcoming = rule.occurrences(start, max(today, start), count)
    return RuleCheck(
        rule=str(rule),
        description=rule.describe(),
        start=start,
        next=upcoming,
        rrule=rule.to_rrule(start),
    )
