"""A real `ondeck serve` for a test: started as a process of its own, waited for until it
answers, stopped (and, where a test needs it, started again).

    with serving(env, "--no-jobs", url=f"http://127.0.0.1:{port}"):
        ..."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from support.pg import free_port

ONDECK = str(Path(sys.executable).with_name("ondeck"))
# A loaded machine (CI shares two cores) can take long to start a server: the wait ends
# as soon as it answers, so a generous deadline costs nothing when it is quick.
START_DEADLINE = 120.0


def wait_until_answering(
    url: str,
    proc: subprocess.Popen[Any],
    *,
    log: Path | None = None,
    headers: dict[str, str] | None = None,
    context: ssl.SSLContext | None = None,
) -> None:
    """Until `url` answers; any HTTP status counts (a server with a token may ask for it).
    A server that exits, or never answers, fails the test with what it said in `log`."""
    request = urllib.request.Request(url, headers=headers or {})
    deadline = time.monotonic() + START_DEADLINE
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited ({proc.returncode}): {_said(log)}")
        try:
            with urllib.request.urlopen(request, timeout=2, context=context):
                return
        except urllib.error.HTTPError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"the server never answered: {_said(log)}") from None
            time.sleep(0.1)


def _said(log: Path | None) -> str:
    return log.read_text(errors="replace")[-4000:] if log is not None and log.exists() else ""


def stop(proc: subprocess.Popen[Any] | None, timeout: float = 30) -> None:
    """SIGTERM, as systemd stops it; killed only if it will not end."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def start(
    env: dict[str, str],
    *args: str,
    url: str,
    log: Path | None = None,
    headers: dict[str, str] | None = None,
    context: ssl.SSLContext | None = None,
) -> subprocess.Popen[bytes]:
    """`ondeck serve *args` with `env`, answering at `url`; its output goes to `log`."""
    out = log.open("ab") if log is not None else None
    try:
        proc = subprocess.Popen(
            [ONDECK, "serve", *args],
            env=env,
            stdout=out or subprocess.DEVNULL,
            stderr=out or subprocess.DEVNULL,
        )
    finally:
        if out is not None:
            out.close()
    try:
        wait_until_answering(
            f"{url}/api/v1/health", proc, log=log, headers=headers, context=context
        )
    except BaseException:
        stop(proc)
        raise
    return proc


@contextmanager
def serving(
    env: dict[str, str],
    *args: str,
    url: str,
    log: Path | None = None,
    headers: dict[str, str] | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """`start`, then `stop` however the block ends."""
    proc = start(env, *args, url=url, log=log, headers=headers)
    try:
        yield proc
    finally:
        stop(proc)


@dataclass
class Served:
    """A started server: where it answers, and the environment it was started with."""

    url: str  # the server's root, no trailing slash
    port: int
    env: dict[str, str]
    db_url: str


S = TypeVar("S", bound=Served)


@contextmanager
def serve_database(db_url: str, data_dir: Path, kind: type[S], **settings: str) -> Iterator[S]:
    """`ondeck serve --no-jobs` of `db_url` on a free port, in UTC, with `settings` (full
    ONDECK_* names), yielded as a `kind` (`Served` or a test's own subclass); its output is
    kept beside `data_dir`."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "ONDECK_SERVER_URL"}
    env.update(ONDECK_DATABASE_URL=db_url, ONDECK_TZ="UTC", ONDECK_DATA_DIR=str(data_dir))
    env.update(settings)
    url = f"http://127.0.0.1:{port}"
    log = data_dir.with_name(f"{data_dir.name}-serve.log")
    with serving(env, "--port", str(port), "--no-jobs", url=url, log=log):
        yield kind(url=url, port=port, env=env, db_url=db_url)
