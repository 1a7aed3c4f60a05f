"""A lease as it stands: the one judgement of a RUNNING task's lease that every place
showing one uses (the context's Markdown, JSON and hook; `task show` and `task list`; the
dashboard's Today, Backlog and task pages; the API and MCP task objects).

    running      the lease has not ended: the holder is presumed at work;
    expired      it ended, the grace has not passed: the holder is silent (it may still
                 renew); the jobs loop's reaper releases it when the grace is over;
    release_due  the grace is over but the task is still RUNNING: only the next jobs tick
                 releases it (the holder can still renew until then).

Whether the release will happen is the jobs loop's to say: when its heartbeat is silent,
nothing releases the lease, and every sentence here says so instead of promising a time
that has passed. The grace is the live loop's own when its heartbeat recorded one (it is
its reaper that acts), else the reader's setting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from enum import StrEnum
from typing import Any

from ondeck.core.clock import aware, iso, local
from ondeck.core.humanize import relative, span
from ondeck.core.models import Task
from ondeck.system.heartbeat import JobsHealth


class LeaseState(StrEnum):
    RUNNING = "running"
    EXPIRED = "expired"
    RELEASE_DUE = "release_due"


def release_due(lease_until: datetime, now: datetime, grace: timedelta) -> bool:
    """The reaper's predicate (reaper.reap_stale_leases: `lease_until < now - grace`)."""
    return lease_until < aware(now) - grace


@dataclass(frozen=True, kw_only=True, slots=True)
class Lease:
    task: Task
    now: datetime
    state: LeaseState
    expired_for: timedelta | None  # None while the lease runs
    grace: timedelta
    releases_at: datetime  # lease end + grace: when the reaper may give it back
    jobs: JobsHealth | None  # None: the loop's health was not read (the lease still runs)

    @property
    def expired(self) -> bool:
        return self.state is not LeaseState.RUNNING

    @property
    def nothing_releases(self) -> bool:
        """Past its end with a silent jobs loop: no reaper will come."""
        return self.expired and self.jobs is not None and not self.jobs.alive

    def describe(self, zone: tzinfo) -> str:
        """The lease in one line: how it stands and what will happen to it."""
        t = self.task
        assert t.lease_until is not None  # RUNNING has a lease end: a CHECK guarantees it
        if self.state is LeaseState.RUNNING:
            return f"lease until {_hm(t.lease_until, zone)} ({relative(t.lease_until, self.now)})"
        head = f"EXPIRED {span(self.expired_for or timedelta(0))} ago, holder silent"
        at = f"{_hm(self.releases_at, zone)} ({relative(self.releases_at, self.now)})"
        if self.state is LeaseState.EXPIRED:
            if self.nothing_releases:
                assert self.jobs is not None
                return (
                    f"{head}; due for release at {at}, but {self.jobs.silence(zone)}: "
                    "nothing will release it until the loop runs"
                )
            return f"{head}; the jobs loop releases it at {at} unless the holder renews"
        past = f"{head}; past the {span(self.grace)} grace since {at}"
        if self.nothing_releases:
            assert self.jobs is not None
            return (
                f"{past}, but {self.jobs.silence(zone)}: "
                "nothing will release it until the loop runs"
            )
        return f"{past}: due for release at the next jobs tick"

    def brief(self, zone: tzinfo) -> str:
        """The same judgement in a few words, for a table cell."""
        t = self.task
        assert t.lease_until is not None
        if self.state is LeaseState.RUNNING:
            return f"until {_hm(t.lease_until, zone)}"
        head = f"EXPIRED {span(self.expired_for or timedelta(0))} ago"
        if self.nothing_releases:
            return f"{head}; nothing releases it (jobs loop not running)"
        if self.state is LeaseState.RELEASE_DUE:
            return f"{head}; released at the next jobs tick"
        when = relative(self.releases_at, self.now)
        return f"{head}; released {_hm(self.releases_at, zone)} ({when})"

    def to_json(self, zone: tzinfo) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "lease_until": iso(self.task.lease_until, zone),
            "expired_seconds": int(self.expired_for.total_seconds()) if self.expired_for else None,
            "releases_at": iso(self.releases_at, zone),
            # Only a lease past its end waits for the loop; a running one does not ask.
            "jobs_ticking": self.jobs.alive if self.expired and self.jobs else None,
            "summary": self.describe(zone),
            "brief": self.brief(zone),
        }


def lease_of(
    task: Task,
    now: datetime,
    grace: timedelta,
    jobs: JobsHealth | Callable[[], JobsHealth] | None,
) -> Lease:
    """The lease of a RUNNING task as of `now`. `jobs` is the loop's health, or a function
    that reads it: it is called only for a lease past its end (a running one needs none)."""
    assert task.lease_until is not None  # RUNNING has a lease end: a CHECK guarantees it
    now = aware(now)
    expired = task.is_expired(now)
    health = (jobs() if expired else None) if callable(jobs) else jobs
    if health is not None and health.lease_grace is not None:
        grace = health.lease_grace  # the live loop's reaper is the one that acts
    if not expired:
        state = LeaseState.RUNNING
    elif release_due(task.lease_until, now, grace):
        state = LeaseState.RELEASE_DUE
    else:
        state = LeaseState.EXPIRED
    return Lease(
        task=task,
        now=now,
        state=state,
        expired_for=now - task.lease_until if expired else None,
        grace=grace,
        releases_at=task.lease_until + grace,
        jobs=health,
    )


def lease_json(
    task: Task,
    now: datetime,
    zone: tzinfo,
    grace: timedelta,
    jobs: JobsHealth | Callable[[], JobsHealth] | None,
) -> dict[str, Any] | None:
    """The `lease` object of a task in the API and MCP: null unless RUNNING."""
    if task.lease_until is None:
        return None
    return lease_of(task, now, grace, jobs).to_json(zone)


def task_json(
    task: Task,
    now: datetime,
    zone: tzinfo,
    grace: timedelta,
    jobs: JobsHealth | Callable[[], JobsHealth] | None,
) -> dict[str, Any]:
    """A task as the API, MCP and `--json` show it: `Task.to_json` and its `lease`."""
    return {**task.to_json(now, zone), "lease": lease_json(task, now, zone, grace, jobs)}


def _hm(instant: datetime, zone: tzinfo) -> str:
    return local(instant, zone).strftime("%Y-%m-%d %H:%M")
