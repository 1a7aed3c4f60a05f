"""Fixtures of the fault suite: real processes that are always killed at the end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.procs import REPORT_FILE, Procs

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here is marked `faults`: `-m faults` runs the suite, `-m "not faults"` not
    (`make test` runs them in a pytest of their own, after the rest)."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.faults)


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Procs]:
    """Start processes with `procs.ondeck(...)`/`procs.worker(...)`; none outlives the test."""
    root = tmp_path / "logs"
    root.mkdir()
    started = Procs(root=root)
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Iterator[dict[str, object]]:
    """Figures a test measured: printed (`pytest -s`), and appended to ONDECK_FAULT_REPORT."""
    figures: dict[str, object] = {}
    yield figures
    if figures:
        line = ", ".join(f"{k}={v}" for k, v in figures.items())
        print(f"\n[figures] {request.node.name}: {line}")
        if REPORT_FILE:
            with open(REPORT_FILE, "a") as out:
                out.write(json.dumps({"test": request.node.name, **figures}, default=str) + "\n")
