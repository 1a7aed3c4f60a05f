"""Jobs heartbeats: one `workers` row per jobs process, updated at the end of every tick,
and the one judgement of what they say (`jobs_health`, `beat_state`).

The heartbeat is what lets the context and the dashboard say "the scheduler is not
running" instead of silently showing a schedule that never fires. Each row records the
settings of the process that wrote it: its zone (the dates it fires), its tick interval
(how long a silence means it is dead) and its lease grace (when its reaper releases).

Every reader asks this module whether the loop is alive: the context's warnings, the
dashboard's Today, Schedules and System pages, `schedule now`, the lease states and the
API's health. A heartbeat dated after `now` is no proof of life: it was written by a clock
ahead of this one (or this one is behind), and it is reported as clock skew with both
instants rather than hiding a loop that stopped.

The health is read with plain SQL (db/plain.py), for the session hook's context; the
writers import SQLAlchemy where they run (the jobs process has it loaded anyway).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from enum import StrEnum
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ondeck.core.clock import aware, iso, local
from ondeck.core.humanize import span
from ondeck.db.plain import Columns, Db, as_db, instant_in

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ondeck.host.settings import Settings

# A loop silent for this many of its own intervals is not running (one late tick is load).
JOBS_SILENT_TICKS = 3
# Machines sharing a database keep their clocks within a second of each other (NTP); a
# heartbeat further ahead than this was written by a clock that is wrong, or this one is.
CLOCK_SKEW_TOLERANCE = timedelta(minutes=1)


class Beat(StrEnum):
    """What one heartbeat row says, as of a reader's `now`."""

    TICKING = "ticking"  # ticked within JOBS_SILENT_TICKS of its interval
    SILENT = "silent"  # has not ticked for longer: not running
    STOPPED = "stopped"  # stopped on a signal (or `jobs --once` finished)
    AHEAD = "ahead"  # dated after now: a clock ahead; proves nothing about now
    NEVER = "never"  # started, never finished a tick


@dataclass(frozen=True, kw_only=True, slots=True)
class Worker:
    name: str
    started_at: datetime
    last_tick_at: datetime | None
    tick_ms: float | None
    ticks: int
    summary: dict[str, Any] | None
    stopped_at: datetime | None
    tz: str | None = None  # None: written before these were recorded (revision 0002)
    tick_seconds: float | None = None
    lease_grace_seconds: float | None = None

    @property
    def lease_grace(self) -> timedelta | None:
        if self.lease_grace_seconds is None:
            return None
        return timedelta(seconds=self.lease_grace_seconds)

    def silent_after(self, fallback_tick_seconds: float) -> timedelta:
        """How long without a tick means this process is not running: its own interval
        when it recorded one, else the reader's."""
        return silent_after(self.tick_seconds or fallback_tick_seconds, self.tick_ms)


def silent_after(tick_seconds: float, tick_ms: float | None = None) -> timedelta:
    """JOBS_SILENT_TICKS of the loop's period: its pause between ticks plus the time its
    last tick took (a loop whose ticks take longer than its interval is slow, not dead)."""
    period = tick_seconds + max(tick_ms or 0.0, 0.0) / 1000
    return timedelta(seconds=JOBS_SILENT_TICKS * period)


def beat_state(worker: Worker, now: datetime, fallback_tick_seconds: float) -> Beat:
    """One row's state: the System page's column, by the same rule as `jobs_health`."""
    last = worker.last_tick_at
    if last is None:
        return Beat.STOPPED if worker.stopped_at is not None else Beat.NEVER
    if last > aware(now) + CLOCK_SKEW_TOLERANCE:
        return Beat.AHEAD
    if worker.stopped_at is not None and worker.stopped_at >= last:
        return Beat.STOPPED
    if aware(now) - last > worker.silent_after(fallback_tick_seconds):
        return Beat.SILENT
    return Beat.TICKING


@dataclass(frozen=True, kw_only=True, slots=True)
class JobsHealth:
    """Is the jobs loop alive as of `now`, from the latest heartbeats."""

    now: datetime
    latest: Worker | None  # the latest heartbeat dated at or before now (with tolerance)
    ahead: Worker | None  # the latest heartbeat dated after now: clock skew
    tick_seconds: float  # the reader's interval, for heartbeats that recorded none

    @property
    def last_tick(self) -> datetime | None:
        return self.latest.last_tick_at if self.latest else None

    @property
    def interval(self) -> float:
        """The tick interval of the loop that last ticked (its own, recorded), else ours."""
        if self.latest is not None and self.latest.tick_seconds:
            return self.latest.tick_seconds
        return self.tick_seconds

    @property
    def silent_after(self) -> timedelta:
        return silent_after(self.interval, self.latest.tick_ms if self.latest else None)

    @property
    def alive(self) -> bool:
        last = self.last_tick
        return last is not None and aware(self.now) - last <= self.silent_after

    @property
    def lease_grace(self) -> timedelta | None:
        """The grace the live loop's reaper releases leases after, when it recorded one."""
        return self.latest.lease_grace if self.alive and self.latest else None

    def within(self) -> str:
        """When a live loop gets to something due: "within a minute", "within 5 min"."""
        if self.interval <= 60:
            return "within a minute"
        return f"within {span(timedelta(seconds=self.interval))}"

    def silence(self, zone: tzinfo) -> str:
        """Why the loop counts as not running, in words (only meaningful when not alive)."""
        return f"the jobs loop {self._has_not_ticked(zone)}"

    def waiting(self, zone: tzinfo) -> str:
        """What something due waits for while the loop is not running."""
        return f"waiting for the jobs loop, which {self._has_not_ticked(zone)}"

    def _has_not_ticked(self, zone: tzinfo) -> str:
        last = self.last_tick
        if last is not None:
            return f"has not ticked since {_at(last, zone)} ({span(self.now - last)} ago)"
        if self.ahead is not None:
            return "has not ticked before now: its only heartbeat is dated in the future"
        return "has never ticked"

    def skew(self, zone: tzinfo) -> str | None:
        """The clock skew a heartbeat from the future shows, with both instants."""
        if self.ahead is None or self.ahead.last_tick_at is None:
            return None
        at = self.ahead.last_tick_at
        return (
            f"jobs process {self.ahead.name} wrote a heartbeat dated {_at(at, zone)}, "
            f"{span(at - self.now)} after this clock's now ({_at(self.now, zone)}): one of the "
            "two clocks is wrong; a tick from the future fires dates early and is no sign "
            "that the loop runs now"
        )

    def differences(self, tz: str, lease_grace: timedelta) -> list[str]:
        """Settings of the live loop that differ from the reader's: dates and release times
        shown here would not be the ones the loop acts on."""
        if self.latest is None or not self.alive:
            return []
        return list(differences(self.latest, self.now, tz, lease_grace).values())

    def to_json(self, zone: tzinfo) -> dict[str, Any]:
        last = self.last_tick
        ahead = self.ahead.last_tick_at if self.ahead else None
        return {
            "ticking": self.alive,
            "last_tick_at": iso(last, zone),
            "last_worker": self.latest.name if self.latest else None,
            "tick_seconds": self.interval,
            "silent_after_seconds": self.silent_after.total_seconds(),
            "timezone": self.latest.tz if self.latest else None,
            "ahead_tick_at": iso(ahead, zone),
            "ahead_worker": self.ahead.name if self.ahead else None,
        }


def differences(worker: Worker, now: datetime, tz: str, lease_grace: timedelta) -> dict[str, str]:
    """Where a jobs process's recorded settings differ from the reader's, by setting
    (`tz`, `lease_grace`), each in words. Unrecorded settings (before 0002) are not judged."""
    found: dict[str, str] = {}
    if worker.tz and _other_dates(worker.tz, tz, now):
        found["tz"] = f"it fires dates in {worker.tz}, this process shows them in {tz}"
    grace = worker.lease_grace
    if grace is not None and grace != lease_grace:
        found["lease_grace"] = (
            f"its reaper releases leases {span(grace)} after they end, "
            f"this process assumes {span(lease_grace)}"
        )
    return found


def _other_dates(theirs: str, ours: str, now: datetime) -> bool:
    """Whether two zone names give other dates at `now`: `UTC` and `Etc/UTC`, or Seoul and
    Tokyo, are the same clock; a name this machine does not know counts as different."""
    if theirs == ours:
        return False
    try:
        return (
            aware(now).astimezone(ZoneInfo(theirs)).utcoffset()
            != aware(now).astimezone(ZoneInfo(ours)).utcoffset()
        )
    except (ZoneInfoNotFoundError, ValueError):
        return True


def _at(instant: datetime, zone: tzinfo) -> str:
    """An instant in a sentence: ISO-8601 in the zone, to the second."""
    return local(instant, zone).isoformat(timespec="seconds")


_WORKER = Columns(instants=("started_at", "last_tick_at", "stopped_at"), jsons=("summary",))
# Plain SQL (db/plain.py): the session hook reads the loop's health without SQLAlchemy.
_NEWEST = (
    "SELECT * FROM (SELECT {ahead} AS ahead, name, started_at, last_tick_at, tick_ms, ticks,"
    " summary, stopped_at, tz, tick_seconds, lease_grace_seconds FROM workers"
    " WHERE last_tick_at {op} :edge ORDER BY last_tick_at DESC LIMIT 1) AS {name}"
)
# Both heartbeats in one statement (one round trip, each an ix_workers_last_tick_at seek).
_HEARTBEATS = (
    _NEWEST.format(ahead=0, op="<=", name="latest")
    + " UNION ALL "
    + _NEWEST.format(ahead=1, op=">", name="later")
)


def jobs_health(conn: Db | Connection, now: datetime, *, tick_seconds: float) -> JobsHealth:
    """The loop's health from the latest heartbeat at or before `now` (plus the clock skew
    tolerance) and the latest one after it."""
    db = as_db(conn)
    now = aware(now)
    found: dict[bool, Worker] = {}
    for row in _WORKER.read(db, _HEARTBEATS, {"edge": instant_in(db, now + CLOCK_SKEW_TOLERANCE)}):
        ahead = bool(row.pop("ahead"))
        found[ahead] = Worker(**row)
    return JobsHealth(
        now=now, latest=found.get(False), ahead=found.get(True), tick_seconds=tick_seconds
    )


def health_reader(
    conn: Db | Connection, now: datetime, *, tick_seconds: float
) -> Callable[[], JobsHealth]:
    """`jobs_health` read on first call only: for callers that need it only when a lease
    turns out to be past its end (most lists hold none)."""
    found: list[JobsHealth] = []

    def read() -> JobsHealth:
        if not found:
            found.append(jobs_health(conn, now, tick_seconds=tick_seconds))
        return found[0]

    return read


def worker_name() -> str:
    return f"jobs@{socket.gethostname()}:{os.getpid()}"


def settings_of(settings: Settings) -> dict[str, Any]:
    """What a jobs process records of its settings with each `beat`."""
    return {
        "tz": settings.tz,
        "tick_seconds": settings.tick_seconds,
        "lease_grace": settings.lease_grace,
    }


# How long the rows of jobs processes that ended are kept: `jobs --once` from cron adds one
# row a run (1,440 a day at every minute), which the System page and the health check would
# otherwise read past forever. One that stopped is kept a day; one silent for a week is dead.
STOPPED_KEPT = timedelta(days=1)
SILENT_KEPT = timedelta(days=7)


def beat(
    conn: Connection,
    now: datetime,
    *,
    name: str,
    started_at: datetime,
    tick_ms: float,
    summary: dict[str, Any],
    tz: str | None = None,
    tick_seconds: float | None = None,
    lease_grace: timedelta | None = None,
) -> None:
    """Record a tick. `tz`, `tick_seconds` and `lease_grace` are the writing process's
    settings; a caller that leaves them out records them as unknown (NULL)."""
    from sqlalchemy import delete, or_

    from ondeck.db.dialect import insert_for
    from ondeck.db.tables import workers

    grace = lease_grace.total_seconds() if lease_grace is not None else None
    settings = {"tz": tz, "tick_seconds": tick_seconds, "lease_grace_seconds": grace}
    stmt = insert_for(conn, workers).values(
        name=name,
        started_at=started_at,
        last_tick_at=now,
        tick_ms=tick_ms,
        ticks=1,
        summary=summary,
        **settings,
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[workers.c.name],
        set_={
            "last_tick_at": now,
            "tick_ms": tick_ms,
            "summary": summary,
            "ticks": workers.c.ticks + 1,
            "stopped_at": None,
            **settings,
        },
    )
    conn.execute(stmt)
    # Only a ticking process forgets the others: while none ticks, the last heartbeat stays
    # to say since when the loop has been silent.
    conn.execute(
        delete(workers).where(
            workers.c.name != name,
            or_(
                workers.c.stopped_at < now - STOPPED_KEPT,
                workers.c.last_tick_at < now - SILENT_KEPT,
            ),
        )
    )


def stopped(conn: Connection, now: datetime, name: str) -> None:
    from sqlalchemy import update

    from ondeck.db.tables import workers

    conn.execute(update(workers).where(workers.c.name == name).values(stopped_at=now))


def last_tick_at(conn: Connection) -> datetime | None:
    """The most recent tick of any jobs process (ix_workers_last_tick_at). It may be dated
    in the future: whether the loop is alive is `jobs_health`'s to say."""
    from sqlalchemy import select

    from ondeck.db.tables import workers

    return conn.execute(
        select(workers.c.last_tick_at)
        .where(workers.c.last_tick_at.is_not(None))
        .order_by(workers.c.last_tick_at.desc())
        .limit(1)
    ).scalar()


def list_workers(conn: Connection, limit: int = 20) -> list[Worker]:
    from sqlalchemy import select

    from ondeck.db.tables import workers

    query = (
        select(workers)
        .order_by(workers.c.last_tick_at.desc().nulls_last(), workers.c.name)
        .limit(limit)
    )
    return [Worker(**row._mapping) for row in conn.execute(query)]
