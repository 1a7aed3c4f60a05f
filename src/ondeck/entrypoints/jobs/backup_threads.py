"""Backups written in threads of the jobs process, so that the tick goes on meanwhile.

A large `pg_dump` may take hours; firing, reaping and the heartbeat must not wait for it.
The tick's backups step only starts the runs of due backup schedules
(`backup_runs.claim_due`: one short transaction, whose `running` row keeps any tick of any
process from starting a second run of the same schedule) and hands each to a thread here
that writes it (`backup_runs.complete`). Later ticks report what ended.

The runs are this process's: their runner is its heartbeat name, which is how other
processes judge them alive, and the maintain step tells its own runs from a
predecessor's that had the same name (`backup_liveness`). Stopping cancels the copies:
each run is then recorded `abandoned`, never left `running`.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from ondeck.backups import liveness as backup_liveness
from ondeck.backups import runs as backup_runs
from ondeck.core import logs
from ondeck.host.settings import Settings

log = logs.logger("ondeck.jobs")


@dataclass
class BackupThreads:
    name: str  # the jobs process's heartbeat name: its runs' runner
    stop_event: threading.Event = field(default_factory=threading.Event)
    _threads: dict[int, threading.Thread] = field(default_factory=dict)
    _ended: list[backup_runs.Ran] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _defaults_done: bool = False

    def step(self, engine: Engine, now: datetime, settings: Settings) -> dict[str, Any]:
        """The tick's backups step: start due runs; how the earlier ones ended."""
        if not self._defaults_done:
            with engine.begin() as conn:
                if backup_runs.ensure_default_schedules(conn, now, settings.zone):
                    log.info("created the daily backup schedule")
            self._defaults_done = True
        with self._lock:
            ended, self._ended = self._ended, []
            writing = sorted(self._threads)
        claims = backup_runs.claim_due(engine, now, settings.zone, runner=self.name)
        for claim in claims:
            self._spawn(engine, settings, claim)
        summary: dict[str, Any] = dict(Counter(ran.backup.status.value for ran in ended))
        if claims:
            summary["started"] = [claim.backup_id for claim in claims]
        if writing:
            summary["writing"] = writing
        return summary

    def maintain(self, engine: Engine, now: datetime, settings: Settings) -> dict[str, Any]:
        """The tick's maintain step: runs whose runner went away are marked abandoned."""
        abandoned = backup_liveness.mark_abandoned(
            engine, now, settings, me=self.name, mine=self.running()
        )
        return {"abandoned": abandoned}

    def running(self) -> set[int]:
        with self._lock:
            return set(self._threads)

    def busy(self) -> bool:
        return bool(self.running())

    def stop(self) -> None:
        """Cancel the copies in progress; each thread records its run and ends soon."""
        self.stop_event.set()

    def join(self) -> None:
        """Wait for every thread (no timeout: a timed wait hangs under libfaketime, and a
        copy ends by itself, being bounded in time)."""
        with self._lock:
            threads = list(self._threads.values())
        for thread in threads:
            thread.join()

    def _spawn(self, engine: Engine, settings: Settings, claim: backup_runs.Claim) -> None:
        thread = threading.Thread(
            target=self._write,
            args=(engine, settings, claim),
            name=f"ondeck-backup-{claim.backup_id}",
        )
        with self._lock:
            self._threads[claim.backup_id] = thread
        thread.start()

    def _write(self, engine: Engine, settings: Settings, claim: backup_runs.Claim) -> None:
        ran = None
        try:
            ran = backup_runs.complete(engine, settings, claim, actor="jobs", stop=self.stop_event)
        except Exception:
            # `complete` records every failed backup; this is the record itself failing (the
            # database went away). The run stays "running" until the maintain step, which
            # no longer finds it among this process's runs, marks it abandoned.
            log.exception("backup %s: could not record how it ended", claim.backup_id)
        finally:
            with self._lock:
                self._threads.pop(claim.backup_id, None)
                if ran is not None:
                    self._ended.append(ran)
