"""Real ondeck processes for the fault tests: command, environment, faked clock, logs, kills.

Sizes: every long duration and large count is a knob read once at import (the test
fixtures clear `ONDECK_*` from the environment before each test, so it cannot be read
later). `ONDECK_FAULT_FULL=1` runs the full sizes; `ONDECK_FAULT_<NAME>` sets one.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

ONDECK = str(Path(sys.executable).with_name("ondeck"))
WORKER = str(Path(__file__).with_name("worker.py"))
FULL = os.environ.get("ONDECK_FAULT_FULL") == "1"
REPORT_FILE = os.environ.get("ONDECK_FAULT_REPORT")


def knob(name: str, default: float, full: float) -> float:
    """A size: `ONDECK_FAULT_<NAME>` if set, else the full size under ONDECK_FAULT_FULL=1."""
    explicit = os.environ.get(f"ONDECK_FAULT_{name}")
    if explicit:
        return float(explicit)
    return full if FULL else default


# --- the clock, moved from outside the processes ------------------------------------------


def faketime_lib() -> str:
    """libfaketime's preload library (Debian package `faketime`), or skip/fail saying so."""
    explicit = os.environ.get("ONDECK_TEST_FAKETIME_LIB")
    found = [explicit] if explicit else sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    if found and Path(found[0]).exists():
        return found[0]
    reason = "libfaketime not found (install the Debian package faketime)"
    if os.environ.get("CI"):
        pytest.fail(f"CI: {reason}")
    pytest.skip(reason)


def at_time(env: dict[str, str], instant: datetime) -> dict[str, str]:
    """`env` for a process whose clock starts at `instant` (UTC) and then runs normally.

    Only for short commands (`jobs --once`, `context`): with libfaketime 0.9.10 and Python
    3.11, a faked monotonic clock makes timed waits on locks and events hang, and
    excluding it makes every `time.sleep` fail with EINVAL (both libfaketime bugs).
    A one-tick run uses neither kind of timed wait; the looping `ondeck jobs` does.
    """
    return {
        **env,
        "LD_PRELOAD": faketime_lib(),
        "FAKETIME": "@" + instant.strftime("%Y-%m-%d %H:%M:%S"),
        "TZ": "UTC",
    }


# --- environment --------------------------------------------------------------------------


def ondeck_env(
    db_url: str,
    tmp_path: Path,
    *,
    tick: float = 1.0,
    grace: str = "6h",
    backup_dir: Path | None = None,
    **extra: str,
) -> dict[str, str]:
    """What a real process needs: the store, UTC, the tick, the grace, where backups go."""
    return {
        **os.environ,
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_TZ": "UTC",
        "ONDECK_TICK_SECONDS": str(tick),
        "ONDECK_LEASE_GRACE": grace,
        "ONDECK_DATA_DIR": str(tmp_path / "data"),
        "ONDECK_BACKUP_DIR": str(backup_dir or tmp_path / "backups"),
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


# --- processes ----------------------------------------------------------------------------


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def text(self) -> str:
        """Everything it wrote on stdout and stderr so far."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def kill9(self) -> None:
        if self.alive():
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(timeout=30)

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, then its exit code (SIGKILL if it does not stop in time)."""
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(timeout=10)
            raise AssertionError(f"{self.name} did not stop on SIGTERM within {timeout}s") from None

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{self.name} still running after {timeout}s:\n{self.text()[-2000:]}"
            ) from None

    def cpu_seconds(self) -> float:
        """User + system CPU time of the process (all its threads) so far, from /proc."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Procs:
    """Starts processes with their output in a log file; kills every one left at the end."""

    root: Path
    started: list[Proc] = field(default_factory=list)

    def start(self, name: str, args: list[str], env: dict[str, str]) -> Proc:
        log = self.root / f"{len(self.started):03d}-{name}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                args, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        proc = Proc(name=name, popen=popen, log=log)
        self.started.append(proc)
        return proc

    def ondeck(self, name: str, *args: str, env: dict[str, str]) -> Proc:
        return self.start(name, [ONDECK, *args], env)

    def worker(self, name: str, *args: str, env: dict[str, str]) -> Proc:
        return self.start(name, [sys.executable, WORKER, *args], env)

    def close(self) -> None:
        for proc in self.started:
            if proc.alive():
                proc.popen.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(timeout=30)


def run_ondeck(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    """One short `ondeck` command to its end: (exit code, stdout, stderr)."""
    return subprocess.run(
        [ONDECK, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def wait_for(check: Any, *, timeout: float, interval: float = 0.05, what: str = "") -> Any:
    """Poll `check()` until it returns something truthy; that value, or AssertionError."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or check}")
        time.sleep(interval)


# --- HTTP ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    seconds: float
    content_type: str


def http(
    method: str, url: str, payload: dict[str, Any] | None = None, *, timeout: float = 30
) -> Answer:
    """One request; the status and decoded body whatever the status (never raises on 4xx/5xx)."""
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    began = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw, kind = response.status, response.read(), response.headers["content-type"]
    except urllib.error.HTTPError as exc:
        status, raw, kind = exc.code, exc.read(), exc.headers.get("content-type", "")
    seconds = time.monotonic() - began
    try:
        body = json.loads(raw)
    except ValueError:
        body = raw.decode(errors="replace")
    return Answer(status=status, body=body, seconds=seconds, content_type=kind or "")
