"""The jobs loop: one tick every `ONDECK_TICK_SECONDS`, nothing else.

A tick runs its steps in order, each a function returning a summary (how much it did):

    1. fire       due schedules become tasks, reminders and backups      (firing.py)
    2. reap       leases whose holder went silent past the grace period  (reaper.py)
    3. maintain   abandoned backup runs                                  (maintenance.py)
       sessions   the hooks' spool drained, silent sessions marked lost  (sessions.py)
    4. heartbeat  this process's row in `workers`, with the tick summary (workers.py)

A failing step is logged with its traceback and the tick goes on to the next step. A
database that cannot be reached is retried with growing pauses, never a crash loop.
SIGTERM and SIGINT let the current tick finish, then the loop exits.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from ondeck.core import clock
from ondeck.core.config import Settings
from ondeck.core.errors import Unavailable
from ondeck.db.engine import is_unavailable
from ondeck.services import workers

log = logging.getLogger("ondeck.jobs")

Step = Callable[[Engine, datetime, Settings], dict[str, Any]]
MAX_BACKOFF_SECONDS = 60.0


def default_steps() -> list[tuple[str, Step]]:
    """The steps of a tick, in order. Modules register here as they land."""
    steps: list[tuple[str, Step]] = []
    try:
        from ondeck.services.firing import fire_step

        steps.append(("fire", fire_step))
    except ImportError:
        pass
    try:
        from ondeck.services.reaper import reap_step

        steps.append(("reap", reap_step))
    except ImportError:
        pass
    try:
        from ondeck.services.maintenance import maintain_step

        steps.append(("maintain", maintain_step))
    except ImportError:
        pass
    from ondeck.services.sessions import sessions_step

    steps.append(("sessions", sessions_step))
    from ondeck.services.notes import notes_step

    steps.append(("notes", notes_step))
    return steps


@dataclass
class Jobs:
    engine: Engine
    settings: Settings
    steps: list[tuple[str, Step]] = field(default_factory=default_steps)
    name: str = field(default_factory=workers.worker_name)
    started_at: datetime = field(default_factory=clock.now)
    stop_event: threading.Event = field(default_factory=threading.Event)
    wake_event: threading.Event = field(default_factory=threading.Event)

    def tick(self, now: datetime | None = None) -> dict[str, Any]:
        """Run every step once and write the heartbeat; returns the summary.

        Raises `Unavailable` when the database cannot be reached, so the loop backs off.
        """
        now = now or clock.now()
        began = time.perf_counter()
        summary: dict[str, Any] = {}
        unavailable: BaseException | None = None
        for name, step in self.steps:
            try:
                summary[name] = step(self.engine, now, self.settings)
            except Exception as exc:
                if isinstance(exc, Unavailable) or is_unavailable(exc):
                    unavailable = exc
                    summary[name] = {"error": "database unavailable"}
                    break
                log.exception("step %s failed", name)
                summary[name] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        if unavailable is not None:
            raise Unavailable(f"database unavailable: {_first_line(unavailable)}") from unavailable
        tick_ms = round((time.perf_counter() - began) * 1000, 2)
        try:
            with self.engine.begin() as conn:
                workers.beat(
                    conn,
                    now,
                    name=self.name,
                    started_at=self.started_at,
                    tick_ms=tick_ms,
                    summary=summary,
                )
        except Exception as exc:
            if is_unavailable(exc):
                raise Unavailable(f"database unavailable: {_first_line(exc)}") from exc
            raise
        log.info("tick done in %.0f ms: %s", tick_ms, _summary_line(summary))
        return summary

    def run(self, *, once: bool = False) -> int:
        """Tick until stopped; returns the exit code."""
        log.info("jobs %s started, ticking every %gs", self.name, self.settings.tick_seconds)
        if not once:
            listen_for_wakeups(self)
        backoff = 1.0
        while not self.stop_event.is_set():
            try:
                self.tick()
                backoff = 1.0
                pause = self.settings.tick_seconds
            except Unavailable as exc:
                if once:
                    log.error("%s", exc)
                    return 5
                pause = min(backoff, MAX_BACKOFF_SECONDS, max(self.settings.tick_seconds, 1.0))
                log.warning("%s; retrying in %.0fs", exc, pause)
                backoff *= 2
            except Exception:
                if once:
                    log.exception("tick failed")
                    return 1
                log.exception("tick failed; the loop goes on")
                pause = self.settings.tick_seconds
            if once:
                break
            self._sleep(pause)
        self._mark_stopped()
        log.info("jobs %s stopped", self.name)
        return 0

    def wake(self) -> None:
        """Tick now instead of at the next interval ("now" pressed, NOTIFY received)."""
        self.wake_event.set()

    def stop(self) -> None:
        self.stop_event.set()
        self.wake_event.set()

    def install_signal_handlers(self) -> None:
        def handler(signum: int, _frame: object) -> None:
            log.info("got %s, finishing the current tick", signal.Signals(signum).name)
            self.stop()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def _sleep(self, seconds: float) -> None:
        self.wake_event.wait(seconds)
        self.wake_event.clear()

    def _mark_stopped(self) -> None:
        try:
            with self.engine.begin() as conn:
                workers.stopped(conn, clock.now(), self.name)
        except Exception as exc:  # the database may be gone; stopping must not fail
            log.warning("could not record the stop: %s", _first_line(exc))


# "now" on PostgreSQL sends NOTIFY on this channel (schedules.wake_jobs) at commit.
WAKE_CHANNEL = "ondeck_jobs"


def listen_for_wakeups(jobs: Jobs) -> threading.Thread | None:
    """PostgreSQL: a thread that LISTENs for "now" and wakes the loop within a second.

    SQLite has no such signal; there "now" waits for the next tick.
    """
    if jobs.engine.dialect.name != "postgresql":
        return None
    thread = threading.Thread(target=_listen, args=(jobs,), name="ondeck-jobs-listen", daemon=True)
    thread.start()
    return thread


def _listen(jobs: Jobs) -> None:
    import psycopg

    url = jobs.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    backoff = 1.0
    while not jobs.stop_event.is_set():
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
                conn.execute(f"LISTEN {WAKE_CHANNEL}")
                backoff = 1.0
                while not jobs.stop_event.is_set():
                    # Short waits, so a stop is noticed within a second.
                    for _ in conn.notifies(timeout=1.0):
                        jobs.wake()
        except Exception as exc:  # a lost connection must not end the wake-ups for good
            log.warning("wake-up listener: %s; retrying in %.0fs", _first_line(exc), backoff)
            jobs.stop_event.wait(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _summary_line(summary: dict[str, Any]) -> str:
    if not summary:
        return "no steps"
    return ", ".join(f"{name} {value}" for name, value in summary.items())
