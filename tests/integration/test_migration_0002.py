"""Revision 0002 (the heartbeat's zone, interval and grace) on a database released at 0001:
existing heartbeats are kept and read as "not recorded", and it goes back down cleanly."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, insert, inspect, select, text

from ondeck.db.engine import make_engine
from ondeck.db.migrate import HEAD, read_revision, upgrade
from ondeck.db.tables import workers as workers_table
from ondeck.system import heartbeat

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


@pytest.fixture
def bare(empty_url: str) -> Iterator[Engine]:
    """An empty database (not the migrated template): each test migrates it itself."""
    engine = make_engine(empty_url)
    yield engine
    engine.dispose()


def test_0002_keeps_the_heartbeats_of_0001_and_reads_them_as_not_recorded(bare: Engine) -> None:
    assert upgrade(bare, "0001") == (None, "0001")
    with bare.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO workers (name, started_at, last_tick_at, tick_ms, ticks) "
                "VALUES ('jobs@old:1', :at, :at, 3.5, 42)"
            ),
            {"at": NOW},
        )
    assert upgrade(bare) == ("0001", HEAD)
    assert "ix_workers_last_tick_at" in {ix["name"] for ix in inspect(bare).get_indexes("workers")}
    with bare.connect() as conn:
        [old] = heartbeat.list_workers(conn)
        health = heartbeat.jobs_health(conn, NOW + timedelta(minutes=2), tick_seconds=60)
    assert (old.name, old.ticks, old.tz, old.tick_seconds, old.lease_grace_seconds) == (
        "jobs@old:1",
        42,
        None,
        None,
        None,
    )
    assert health.alive and health.interval == 60  # judged by the reader's interval
    with bare.begin() as conn:
        heartbeat.beat(
            conn,
            NOW + timedelta(minutes=3),
            name="jobs@old:1",
            started_at=NOW,
            tick_ms=1.0,
            summary={},
            tz="Asia/Seoul",
            tick_seconds=30.0,
            lease_grace=timedelta(hours=2),
        )
        row = conn.execute(select(workers_table)).one()
    assert (row.ticks, row.tz, row.tick_seconds, row.lease_grace_seconds) == (
        43,
        "Asia/Seoul",
        30.0,
        7200.0,
    )


def test_0002_goes_down_to_0001_and_up_again(bare: Engine) -> None:
    upgrade(bare)
    with bare.begin() as conn:
        conn.execute(
            insert(workers_table).values(
                name="jobs@new:1", started_at=NOW, last_tick_at=NOW, ticks=1, tz="UTC"
            )
        )
    from alembic import command

    from ondeck.db.migrate import _alembic_config

    with bare.begin() as conn:
        command.downgrade(_alembic_config(conn), "0001")
    assert read_revision(bare) == "0001"
    columns = {c["name"] for c in inspect(bare).get_columns("workers")}
    assert not columns & {"tz", "tick_seconds", "lease_grace_seconds"}
    with bare.connect() as conn:
        assert conn.execute(text("SELECT name FROM workers")).scalars().all() == ["jobs@new:1"]
    assert upgrade(bare) == ("0001", HEAD)
