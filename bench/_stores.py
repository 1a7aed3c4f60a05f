"""Stores for the benchmarks: a fresh SQLite file, and a throwaway PostgreSQL cluster
(the test suite's own `tests/support/pg.py`) unless `--pg-url` names a server."""

from __future__ import annotations

import contextlib
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support import pg


@contextlib.contextmanager
def sqlite_url() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="ondeck-bench-") as tmp:
        yield f"sqlite:///{tmp}/bench.db"


@contextlib.contextmanager
def postgres_url(admin_url: str | None = None) -> Iterator[str]:
    cluster = None
    if admin_url is None:
        bindir = pg.find_bindir()
        if bindir is None:
            raise SystemExit("no PostgreSQL server binaries; pass --pg-url")
        cluster = pg.start_cluster(bindir)
        admin_url = cluster.admin_url
    name = f"bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()
        if cluster is not None:
            cluster.stop()


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99)}
