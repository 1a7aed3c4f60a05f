"""The schedules as an iCalendar feed (`GET /calendar.ics`), for any calendar app.

Each enabled schedule is one all-day recurring VEVENT whose RRULE comes from the rules
module (`Rule.rrule_value`), so a calendar shows the same dates ondeck fires on. DTSTART is
the schedule's first occurrence (RFC 5545 leaves a DTSTART that is not an occurrence
undefined, and python-dateutil would not count it). All-day dates are the configured zone's
dates; the calendar names that zone in `X-WR-TIMEZONE`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta, tzinfo

from icalendar import Calendar, Event, vRecur

from ondeck import __version__
from ondeck.core.clock import aware
from ondeck.core.errors import InvalidInput
from ondeck.core.models import Schedule
from ondeck.core.rules import parse

PRODID = f"-//ondeck//ondeck {__version__}//EN"


def uid(schedule_id: int) -> str:
    return f"schedule-{schedule_id}@ondeck"


def build_calendar(items: Iterable[Schedule], now: datetime, zone: tzinfo) -> bytes:
    cal = Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("x-wr-calname", "ondeck schedules")
    cal.add("x-wr-timezone", str(zone))
    stamp = aware(now)
    for schedule in items:
        if not schedule.enabled or schedule.deleted_at is not None:
            continue
        try:
            rule = parse(schedule.rule)
            first = rule.next_on_or_after(schedule.start_on, schedule.start_on)
            end = first + timedelta(days=1)
        except (InvalidInput, OverflowError):
            # An unreadable stored rule, or one stored before dates were bounded whose
            # first date is the last a date holds: no dates a calendar could show.
            continue
        event = Event()
        event.add("uid", uid(schedule.id))
        event.add("dtstamp", stamp)
        event.add("summary", schedule.title)
        description = f"{schedule.rule_text} ({schedule.rule}), {schedule.kind}"
        if schedule.project:
            description += f", project {schedule.project}"
        if schedule.body.strip():
            description += f"\n\n{schedule.body.strip()}"
        event.add("description", description)
        event.add("dtstart", first)
        event.add("dtend", end)
        event.add("rrule", vRecur.from_ical(rule.rrule_value()))
        event.add("transp", "TRANSPARENT")
        event.add("last-modified", aware(schedule.updated_at))
        if schedule.project:
            event.add("categories", [schedule.project])
        cal.add_component(event)
    return bytes(cal.to_ical())
