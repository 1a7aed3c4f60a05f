"""Dates people type: `YYYY-MM-DD` within DATE_MIN..DATE_MAX, and a date that does not exist
says why (`--due 2026-02-29` is not a leap day, not merely "not a date")."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from ondeck.core.clock import start_of_day
from ondeck.core.errors import InvalidInput
from ondeck.core.rules import MAX_EVERY
from ondeck.core.validation import DATE_MAX, DATE_MIN, check_date, parse_date
from support.bad_inputs import BAD_DATES


@pytest.mark.parametrize(("text", "expected"), BAD_DATES)
def test_each_bad_date_says_why(text: str, expected: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_date(text, "due date")
    assert expected in str(caught.value)
    assert str(caught.value).startswith("due date ")


def test_every_day_that_does_not_exist_is_refused_and_every_real_one_read() -> None:
    """All 12 x 31 month/day pairs of a leap year and a common year against the calendar."""
    for year in (2024, 2026, 2000, 2100):
        for month in range(1, 13):
            for day in range(1, 32):
                text = f"{year}-{month:02d}-{day:02d}"
                try:
                    real = date(year, month, day)
                except ValueError:
                    with pytest.raises(InvalidInput, match="is not a date"):
                        parse_date(text)
                else:
                    assert parse_date(text) == real


@pytest.mark.parametrize("text", ["2026-6-15", "20260615", "2026-06-15T00:00", "15.06.2026", ""])
def test_other_spellings_are_refused_with_the_form(text: str) -> None:
    with pytest.raises(InvalidInput, match="use YYYY-MM-DD"):
        parse_date(text)


def test_the_edges_are_dates_and_spaces_around_are_fine() -> None:
    assert parse_date(f" {DATE_MIN.isoformat()} ") == DATE_MIN
    assert parse_date(DATE_MAX.isoformat()) == DATE_MAX


@pytest.mark.parametrize(
    "value",
    [DATE_MIN - timedelta(days=1), DATE_MAX + timedelta(days=1), date.min, date.max],
)
def test_date_objects_outside_the_range_are_refused(value: date) -> None:
    with pytest.raises(InvalidInput, match="out of range: use a date from 1900-01-01 to 8999"):
        check_date(value, "start date")


def test_a_datetime_is_not_a_date_here() -> None:
    with pytest.raises(InvalidInput, match="not a calendar date"):
        check_date(datetime(2026, 6, 15, tzinfo=UTC))


def test_the_range_leaves_room_for_every_computation_on_a_date() -> None:
    """A rule's longest step, the day after, and midnight in the zones farthest from UTC,
    from either edge, all stay within what a date and a datetime hold."""
    from zoneinfo import ZoneInfo

    assert DATE_MAX + timedelta(days=MAX_EVERY + 31 + 1) < date.max
    for zone in (ZoneInfo("Pacific/Kiritimati"), ZoneInfo("Etc/GMT+12"), UTC):
        assert start_of_day(DATE_MIN, zone) > datetime.min.replace(tzinfo=UTC)
        assert start_of_day(DATE_MAX + timedelta(days=MAX_EVERY), zone) < datetime.max.replace(
            tzinfo=UTC
        )
