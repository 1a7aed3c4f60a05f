"""`ondeck up` as a real process: health answers, the heartbeat moves, SIGTERM stops it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from ondeck.db.tables import workers
from support.pg import free_port

ONDECK = str(Path(sys.executable).with_name("ondeck"))


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=2) as response:
        return json.loads(response.read())


def _wait_for_health(url: str, proc: subprocess.Popen, seconds: float = 20) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            return _get(url)
        except OSError:
            time.sleep(0.1)
    raise AssertionError("health never answered")


@pytest.mark.slow
def test_up_serves_health_and_ticks_the_heartbeat(db_url: str, tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_TICK_SECONDS": "1",
        "ONDECK_TZ": "UTC",
    }
    started = time.monotonic()
    proc = subprocess.Popen(
        [ONDECK, "up", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        health = _wait_for_health(f"http://127.0.0.1:{port}/api/v1/health", proc)
        assert health["database"] == "ok"
        assert time.monotonic() - started < 15
        engine = create_engine(db_url)
        ticks = []
        for _ in range(40):
            with engine.connect() as conn:
                row = conn.execute(select(workers.c.ticks, workers.c.last_tick_at)).first()
            if row:
                ticks.append(row)
            if len({t.last_tick_at for t in ticks}) >= 3:
                break
            time.sleep(0.25)
        engine.dispose()
        assert len({t.last_tick_at for t in ticks}) >= 3, "the heartbeat row updates every tick"
        assert _get(f"http://127.0.0.1:{port}/api/v1/health")["jobs_ticking"] is True
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"http://127.0.0.1:{port}/" in out
    assert "jobs" in err and "stopped" in err


@pytest.mark.slow
def test_jobs_process_finishes_its_tick_on_sigterm_and_exits_0(db_url: str) -> None:
    env = {**os.environ, "ONDECK_DATABASE_URL": db_url, "ONDECK_TICK_SECONDS": "1"}
    proc = subprocess.Popen([ONDECK, "jobs"], env=env, stderr=subprocess.PIPE, text=True)
    # Signal once it has ticked, not after a fixed pause: on a busy machine its start-up
    # alone can take longer than any pause, and the signal would land before the handler.
    killer = threading.Timer(60, proc.kill)
    killer.start()
    seen = []
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if "tick done" in line:
            break
    killer.cancel()
    proc.send_signal(signal.SIGTERM)
    _, rest = proc.communicate(timeout=30)
    err = "".join(seen) + rest
    assert proc.returncode == 0, err
    assert "got SIGTERM" in err
    assert "tick done" in err
