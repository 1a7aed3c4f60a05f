"""What the command tests share: `ondeck …` run in-process against a test database."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine

from ondeck.entrypoints.cli import run

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
