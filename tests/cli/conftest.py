"""What the command tests share: `ondeck …` run in-process against a test database, and
the database made unreachable for the hooks and back."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import time_machine
from sqlalchemy.engine import make_url

from ondeck.entrypoints.cli import run
from support.proxy import Proxy

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


@pytest.fixture
def ondeck(db_url: str, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run `ondeck --db <url> …` in-process at NOW; returns (exit code, stdout, stderr)."""

    def call(*args: str, at: datetime = NOW) -> tuple[int, str, str]:
        with time_machine.travel(at, tick=False):
            code = run(["--db", db_url, *args])
        out, err = capsys.readouterr()
        return code, out, err

    return call


@pytest.fixture
def outage(db_url: str) -> Iterator[tuple[str, Any, Any]]:
    """(URL the hooks use, cut, restore): the same database made unreachable and back.
    PostgreSQL through a proxy that refuses connections; SQLite by another process holding
    its write lock (the hooks give up after the 5 s busy timeout)."""
    url = make_url(db_url)
    if url.get_backend_name() == "postgresql":
        proxy = Proxy(url.host or "127.0.0.1", url.port or 5432).start()
        through = url.set(host="127.0.0.1", port=proxy.port)
        try:
            yield through.render_as_string(hide_password=False), proxy.cut, proxy.restore
        finally:
            proxy.stop()
        return
    holder: list[sqlite3.Connection] = []

    def cut() -> None:
        conn = sqlite3.connect(url.database, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        holder.append(conn)

    def restore() -> None:
        while holder:
            holder.pop().close()

    try:
        yield db_url, cut, restore
    finally:
        restore()


@pytest.fixture(scope="session")
def claude_bin(request: pytest.FixtureRequest) -> Path:
    """The real Claude Code (support/claude.py), installed once per test run into pytest's
    cache folder; without npm or its registry the test skips with the reason, unless
    ONDECK_REQUIRE_CLAUDE=1."""
    from support import claude

    folder = Path(request.config.cache.mkdir("claude-code"))
    found = claude.install(folder)
    if isinstance(found, str):
        if os.environ.get("ONDECK_REQUIRE_CLAUDE") == "1":
            pytest.fail(found)
        pytest.skip(found)
    return found
