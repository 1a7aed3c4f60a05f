"""The jobs loop: one tick every `ONDECK_TICK_SECONDS`, nothing else.

A tick runs its steps in order, each a function returning a summary (how much it did):

    1. fire       due task and remind schedules become tasks and fires   (firing.py)
    2. backups    due backup schedules start a run, written in a thread of this process
                  so that nothing below waits for it                     (backup_threads.py)
    3. reap       leases whose holder went silent past the grace period  (reaper.py)
    4. maintain   backup runs whose runner went away become abandoned    (backup_liveness.py)
       sessions   the hooks' spool drained, silent sessions marked lost  (sessions.py)
       notes      notes past their expiry marked expired                 (notes.py)
       recall     what was written since, indexed for recall             (recall_index.py)
    5. heartbeat  this process's row in `workers`, with the tick summary (heartbeat.py)

A step that raises is logged with its traceback, named in the summary's `failed_steps`,
and makes `ondeck jobs --once` exit 1; the tick goes on to the next step and the loop to
the next tick. A database that cannot be reached is retried with growing pauses, never a
crash loop. SIGTERM and SIGINT let the current tick finish, cancel the backups being
written (recorded `abandoned`), then the loop exits.

`--once` runs one tick, then, if that tick started a backup, goes on ticking until the
backup has ended: it never leaves a half-written run, and its heartbeat keeps saying it is
alive meanwhile (other processes judge its run by that heartbeat).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from ondeck.core import clock, logs
from ondeck.core.errors import Unavailable
from ondeck.db.engine import is_unavailable
from ondeck.entrypoints.jobs.backup_threads import BackupThreads
from ondeck.host.settings import Settings
from ondeck.memory import notes, recall_index
from ondeck.sessions import records_tick
from ondeck.system import heartbeat
from ondeck.work import firing, reaper
from ondeck.work.schedules import WAKE_CHANNEL

log = logs.logger("ondeck.jobs")

Step = Callable[[Engine, datetime, Settings], dict[str, Any]]
MAX_BACKOFF_SECONDS = 60.0
# How often `--once` looks whether its backups have ended (time.sleep, see _drain).
_DRAIN_POLL_SECONDS = 0.1


def default_steps(backups: BackupThreads) -> list[tuple[str, Step]]:
    """The steps of a tick, in order."""
    return [
        ("fire", firing.fire_step),
        ("backups", backups.step),
        ("reap", reaper.reap_step),
        ("maintain", backups.maintain),
        ("sessions", records_tick.sessions_step),
        ("notes", notes.notes_step),
        ("recall", recall_index.recall_step),
    ]


@dataclass
class Jobs:
    engine: Engine
    settings: Settings
    steps: list[tuple[str, Step]] | None = None  # default_steps(self.backups)
    name: str = field(default_factory=heartbeat.worker_name)
    started_at: datetime = field(default_factory=clock.now)
    stop_event: threading.Event = field(default_factory=threading.Event)
    wake_event: threading.Event = field(default_factory=threading.Event)
    backups: BackupThreads = field(init=False)

    def __post_init__(self) -> None:
        self.backups = BackupThreads(name=self.name)
        if self.steps is None:
            self.steps = default_steps(self.backups)

    def tick(self, now: datetime | None = None) -> dict[str, Any]:
        """Run every step once and write the heartbeat; returns the summary.

        Raises `Unavailable` when the database cannot be reached, so the loop backs off.
        """
        now = now or clock.now()
        began = time.perf_counter()
        summary: dict[str, Any] = {}
        failed: list[str] = []
        unavailable: BaseException | None = None
        for name, step in self.steps or []:
            try:
                summary[name] = step(self.engine, now, self.settings)
            except Exception as exc:
                if isinstance(exc, Unavailable) or is_unavailable(exc):
                    unavailable = exc
                    summary[name] = {"error": "database unavailable"}
                    break
                log.exception("step %s failed", name)
                summary[name] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
                failed.append(name)
        if failed:
            summary["failed_steps"] = failed
        if unavailable is not None:
            raise Unavailable(f"database unavailable: {_first_line(unavailable)}") from unavailable
        tick_ms = round((time.perf_counter() - began) * 1000, 2)
        try:
            with self.engine.begin() as conn:
                heartbeat.beat(
                    conn,
                    now,
                    name=self.name,
                    started_at=self.started_at,
                    tick_ms=tick_ms,
                    summary=summary,
                    **heartbeat.settings_of(self.settings),
                )
        except Exception as exc:
            if is_unavailable(exc):
                raise Unavailable(f"database unavailable: {_first_line(exc)}") from exc
            raise
        log.info("tick done in %.0f ms: %s", tick_ms, _summary_line(summary))
        return summary

    def run(self, *, once: bool = False) -> int:
        """Tick until stopped; returns the exit code.

        `once`: 0, or 1 when a step failed, 5 when the database could not be reached.
        """
        log.info("jobs %s started, ticking every %gs", self.name, self.settings.tick_seconds)
        _private_backups(self.settings.backups_path)
        if not once:
            listen_for_wakeups(self)
        code = 0
        try:
            backoff = 1.0
            while not self.stop_event.is_set():
                try:
                    if self.tick().get("failed_steps"):
                        code = 1
                    backoff = 1.0
                    pause = self.settings.tick_seconds
                except Unavailable as exc:
                    if once:
                        log.error("%s", exc)
                        code = 5
                        break
                    pause = min(backoff, MAX_BACKOFF_SECONDS, max(self.settings.tick_seconds, 1.0))
                    log.warning("%s; retrying in %.0fs", exc, pause)
                    backoff *= 2
                except Exception:
                    if once:
                        log.exception("tick failed")
                        code = 1
                        break
                    log.exception("tick failed; the loop goes on")
                    pause = self.settings.tick_seconds
                if once:
                    if self._drain():
                        code = code or 1
                    break
                self._sleep(pause)
        finally:
            if not once:
                self.backups.stop()
            self.backups.join()
        if code != 5:
            self._mark_stopped()
        log.info("jobs %s stopped", self.name)
        return code

    def _drain(self) -> bool:
        """`--once`: tick on while the backups this process started are being written;
        True if a step failed meanwhile.

        Waits with `time.sleep`, not an Event's timed wait: under libfaketime (the tests'
        moved clock) a timed wait on a lock never returns.
        """
        failed = False
        next_tick = time.monotonic() + self.settings.tick_seconds
        while self.backups.busy():
            if self.stop_event.is_set():
                self.backups.stop()
            time.sleep(_DRAIN_POLL_SECONDS)
            if time.monotonic() < next_tick or not self.backups.busy():
                continue
            next_tick = time.monotonic() + self.settings.tick_seconds
            try:
                failed |= bool(self.tick().get("failed_steps"))
            except Exception as exc:  # the backup goes on; its record is what matters
                log.warning("tick while waiting for a backup failed: %s", _first_line(exc))
        return failed

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
                heartbeat.stopped(conn, clock.now(), self.name)
        except Exception as exc:  # the database may be gone; stopping must not fail
            log.warning("could not record the stop: %s", _first_line(exc))


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


def _private_backups(folder: Path) -> None:
    """Backups found readable by others (an older ondeck, a copy made by hand) are
    tightened when the loop that writes them starts, each said in the log."""
    from ondeck.backups.files import private_folder

    if folder.is_dir():
        try:
            private_folder(folder)
        except OSError as exc:
            log.warning("could not check the backups in %s: %s", folder, exc.strerror or exc)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _summary_line(summary: dict[str, Any]) -> str:
    if not summary:
        return "no steps"
    return ", ".join(f"{name} {value}" for name, value in summary.items())
