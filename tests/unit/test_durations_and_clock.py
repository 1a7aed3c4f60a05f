from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import time_machine

from ondeck.core import clock
from ondeck.core.durations import TooLong, format_duration, parse_duration
from ondeck.core.errors import InvalidInput

SEOUL = ZoneInfo("Asia/Seoul")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("15m", 900),
        ("6h", 21600),
        ("2d", 172800),
        ("1h30m", 5400),
        ("45", 45),
        (" 6H ", 21600),
    ],
)
def test_durations_people_write(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "6 weeks", "h", "-5m", "1.5h", "6x", "1" * 100 + "s"])
def test_bad_durations_say_what_is_accepted(text: str) -> None:
    with pytest.raises(InvalidInput, match="s, m, h or d"):
        parse_duration(text)


@pytest.mark.parametrize(
    "value",
    ["8d", "9999999999s", "99999999d", "999999999d999999999d", "9" * 60, 10**30, 5.5e300],
)
def test_a_duration_past_the_maximum_says_the_maximum(value: str | int | float) -> None:
    """Also those longer than a timedelta holds: never an OverflowError."""
    with pytest.raises(TooLong, match="too long: at most 7d"):
        parse_duration(value, maximum=timedelta(days=7))


@pytest.mark.parametrize("value", ["999999999d999999999d", "9" * 60, 10**30, 5.5e300])
def test_a_duration_longer_than_a_timedelta_is_too_long_without_a_maximum_too(
    value: str | int | float,
) -> None:
    with pytest.raises(TooLong, match="too long"):
        parse_duration(value)


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -1, -0.5, timedelta(seconds=-1)])
def test_numbers_that_are_no_duration_are_refused(value: float | timedelta) -> None:
    with pytest.raises(InvalidInput):
        parse_duration(value)


def test_the_maximum_itself_is_accepted() -> None:
    assert parse_duration("7d", maximum=timedelta(days=7)) == timedelta(days=7)
    assert parse_duration(604800, maximum=timedelta(days=7)) == timedelta(days=7)


def test_durations_format_back() -> None:
    assert format_duration(timedelta(hours=6)) == "6h"
    assert format_duration(timedelta(seconds=5400)) == "1h30m"
    assert format_duration(timedelta(0)) == "0s"


def test_midnight_in_seoul_is_the_next_day_there_while_still_yesterday_in_utc() -> None:
    instant = datetime(2026, 5, 31, 15, 30, tzinfo=UTC)  # 00:30 KST on June 1st
    assert clock.today(instant, SEOUL) == date(2026, 6, 1)
    assert clock.today(instant, UTC) == date(2026, 5, 31)
    assert clock.start_of_day(date(2026, 6, 1), SEOUL) == datetime(2026, 5, 31, 15, 0, tzinfo=UTC)


def test_now_is_aware_utc_and_follows_the_real_clock() -> None:
    with time_machine.travel(datetime(2026, 1, 2, 3, 4, tzinfo=UTC), tick=False):
        assert clock.now() == datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
        assert clock.now().tzinfo is UTC


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        clock.today(datetime(2026, 1, 1), UTC)


def test_instants_are_shown_in_the_zone_with_the_offset() -> None:
    instant = datetime(2026, 5, 31, 15, 30, tzinfo=UTC)
    assert clock.iso(instant, SEOUL) == "2026-06-01T00:30:00+09:00"
    assert clock.iso(None, SEOUL) is None


def test_nothing_else_reads_the_clock() -> None:
    """One module owns now and today: a grep over the package proves it."""
    import pathlib

    import ondeck

    root = pathlib.Path(ondeck.__file__).parent
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.name != "clock.py"
        and any(
            needle in path.read_text()
            for needle in ("datetime.now(", "date.today(", "datetime.utcnow(", "time.time()")
        )
    ]
    assert offenders == []
