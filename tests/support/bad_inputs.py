"""Values every date input and every duration input must refuse, with what the refusal says.

Shared by the walks over the CLI's options, the API's fields and query parameters, the
dashboard's forms and the MCP tools' arguments, so each entry point is held to the same list.
"""

from __future__ import annotations

from ondeck.core.validation import DATE_MAX, DATE_MIN, DATE_RANGE

OUT_OF_RANGE = f"out of range: use a date {DATE_RANGE}"

# (value, a fragment the one-line refusal contains)
BAD_DATES = [
    ("9999-12-31", OUT_OF_RANGE),  # the rule arithmetic ran out of calendar
    ("9000-01-01", OUT_OF_RANGE),  # the day after DATE_MAX
    ("1899-12-31", OUT_OF_RANGE),  # the day before DATE_MIN
    ("0001-01-01", OUT_OF_RANGE),
    ("0000-01-01", OUT_OF_RANGE),  # no date has year 0
    ("2026-02-29", "2026 has no 29 February"),
    ("2100-02-29", "2100 has no 29 February"),  # divisible by 100, not by 400
    ("2026-04-31", "April 2026 has 30 days"),
    ("2026-13-01", "there is no month 13"),
    ("2026-01-00", "there is no day 00"),
    ("２０２６-06-15", "use YYYY-MM-DD"),  # full-width digits
]

# Dates at the very edges of the range: accepted everywhere, and every computation on them
# (a rule's next date, the calendar event's end) stays within what a date holds.
EDGE_DATES = [DATE_MIN.isoformat(), DATE_MAX.isoformat()]

# A note's expiry is the one date that may not lie in the past (an expired note would never
# be shown): its lower edge is refused with this reason, its upper edge taken.
NOT_IN_THE_PAST = ("expires",)
PAST_REFUSAL = "before today"


def edge_refusal(name: str, value: str) -> str | None:
    """The refusal expected for an edge date given to the input `name`, or None."""
    past = any(word in name for word in NOT_IN_THE_PAST) and value == DATE_MIN.isoformat()
    return PAST_REFUSAL if past else None


# Lease lengths: refused with the maximum (7d), never an OverflowError or a 500.
BAD_DURATIONS = [
    ("8d", "at most 7d"),
    ("99999999d", "at most 7d"),  # a setting's value, as a lease length
    ("999999999d999999999d", "at most 7d"),  # more days than a timedelta holds
    ("9" * 9 + "d" + "9" * 9 + "h", "at most 7d"),
    ("0m", "more than 0"),
    ("soon", "not a duration"),
]
