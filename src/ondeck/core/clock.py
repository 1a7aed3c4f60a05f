"""The only place that reads the clock.

Instants are aware UTC datetimes. A date (due date, fire date) is a calendar date in the
configured zone: `today(now, zone)`. Services take `now` as an argument; only entry points
and the jobs loop call `now()`, so tests move time freely.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, tzinfo


def now() -> datetime:
    return datetime.now(UTC)


def today(now: datetime, zone: tzinfo) -> date:
    """The calendar date in `zone` at the instant `now` (midnight in Seoul is 15:00 UTC)."""
    return aware(now).astimezone(zone).date()


def aware(instant: datetime) -> datetime:
    """Refuse naive datetimes: a wall-clock time without a zone is a lie waiting to happen."""
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"naive datetime {instant!r}: instants must carry a zone")
    return instant.astimezone(UTC)


def local(instant: datetime, zone: tzinfo) -> datetime:
    """An instant shown in the configured zone, with its offset."""
    return aware(instant).astimezone(zone)


def start_of_day(day: date, zone: tzinfo) -> datetime:
    """The UTC instant at which `day` begins in `zone`."""
    return datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(UTC)


def iso(instant: datetime | None, zone: tzinfo) -> str | None:
    """ISO-8601 in the configured zone with its offset: how every entry point shows an instant."""
    return None if instant is None else local(instant, zone).isoformat()
