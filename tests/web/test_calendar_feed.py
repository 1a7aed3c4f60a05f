"""`GET /calendar.ics`: every enabled schedule as an all-day recurring VEVENT whose dates,
read back with icalendar and python-dateutil, are the rules module's dates."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import time_machine
from dateutil.rrule import rrulestr
from fastapi.testclient import TestClient
from icalendar import Calendar
from sqlalchemy import Engine

from ondeck.core.rules import parse
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings, load_settings
from ondeck.work import schedules

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
RULES = ["daily", "weekly:MON,THU", "monthly:1,15,last", "monthly:last", "every:3", "every:10"]


def _make(engine: Engine, settings: Settings) -> dict[int, schedules.Schedule]:
    made = {}
    with engine.begin() as conn:
        for n, rule in enumerate(RULES):
            start = date(2026, 1, 7) + timedelta(days=n * 11)
            s = schedules.create_schedule(
                conn,
                NOW,
                settings.zone,
                title=f"S {rule}",
                rule=rule,
                start_on=start,
                project="ops" if n % 2 else None,
                body="line one\nline two",
            )
            made[s.id] = s
        paused = schedules.create_schedule(conn, NOW, settings.zone, title="paused", rule="daily")
        schedules.pause_schedule(conn, NOW, paused.id)
        gone = schedules.create_schedule(conn, NOW, settings.zone, title="gone", rule="daily")
        schedules.delete_schedule(conn, NOW, gone.id)
    return made


def _next_dates(event, after: date, count: int) -> list[date]:  # type: ignore[no-untyped-def]
    start = event.decoded("dtstart")
    text = f"DTSTART:{start.strftime('%Y%m%d')}\nRRULE:{event['rrule'].to_ical().decode()}"
    found = []
    for moment in rrulestr(text).xafter(
        datetime.combine(after, datetime.min.time()), count, inc=True
    ):
        found.append(moment.date())
    return found


def test_the_feed_has_one_recurring_all_day_event_per_enabled_schedule(
    dash, engine: Engine, settings: Settings
) -> None:  # type: ignore[no-untyped-def]
    made = _make(engine, settings)
    response = dash.get("/calendar.ics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/calendar")
    cal = Calendar.from_ical(response.content)
    assert str(cal["x-wr-timezone"]) == "UTC"
    found = {str(e["uid"]): e for e in cal.walk("VEVENT")}
    assert set(found) == {f"schedule-{i}@ondeck" for i in made}  # paused and deleted left out
    today = NOW.date()
    for schedule_id, schedule in made.items():
        event = found[f"schedule-{schedule_id}@ondeck"]
        assert str(event["summary"]) == schedule.title
        start = event.decoded("dtstart")
        assert type(start) is date  # all-day
        assert event.decoded("dtend") == start + timedelta(days=1)
        rule = parse(schedule.rule)
        assert _next_dates(event, today, 8) == rule.occurrences(schedule.start_on, today, 8)
        assert _next_dates(event, schedule.start_on, 3) == rule.occurrences(
            schedule.start_on, schedule.start_on, 3
        )


def test_the_feed_names_the_configured_zone(engine: Engine, db_url: str) -> None:
    seoul = load_settings(database_url=db_url, tz="Asia/Seoul")
    with time_machine.travel(NOW, tick=False), TestClient(create_app(seoul, engine)) as client:
        cal = Calendar.from_ical(client.get("/calendar.ics").content)
    assert str(cal["x-wr-timezone"]) == "Asia/Seoul"


def test_with_a_token_the_feed_needs_it_in_the_query(engine: Engine, db_url: str) -> None:
    locked = load_settings(
        database_url=db_url, tz="UTC", token="feed-token-0123456789abcdef0123456789abcdef"
    )
    with time_machine.travel(NOW, tick=False), TestClient(create_app(locked, engine)) as client:
        assert client.get("/calendar.ics").status_code == 401
        assert client.get("/calendar.ics?token=wrong").status_code == 401
        ok = client.get("/calendar.ics?token=feed-token-0123456789abcdef0123456789abcdef")
    assert ok.status_code == 200 and b"BEGIN:VCALENDAR" in ok.content


def test_an_empty_feed_is_still_a_calendar(dash) -> None:  # type: ignore[no-untyped-def]
    cal = Calendar.from_ical(dash.get("/calendar.ics").content)
    assert cal.walk("VEVENT") == []
