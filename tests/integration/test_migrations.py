"""The migrations produce exactly the metadata, on both stores, and HEAD is Alembic's head."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, create_engine, inspect

from ondeck.db.engine import make_engine
from ondeck.db.migrate import HEAD, alembic_head, ensure_schema, read_revision, upgrade
from ondeck.db.tables import metadata


def test_head_constant_matches_alembic() -> None:
    assert alembic_head() == HEAD


def test_migrations_produce_the_metadata(engine: Engine) -> None:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, metadata)
    assert diff == []
    assert read_revision(engine) == HEAD


def test_same_tables_indexes_and_constraints_on_both(engine: Engine) -> None:
    inspector = inspect(engine)
    assert set(inspector.get_table_names()) >= {
        "tasks",
        "schedules",
        "fires",
        "events",
        "workers",
        "backups",
        "alembic_version",
    }
    task_indexes = {ix["name"] for ix in inspector.get_indexes("tasks")}
    assert {"ix_tasks_ready", "ix_tasks_running"} <= task_indexes
    checks = {ck["name"] for ck in inspector.get_check_constraints("tasks")}
    assert {"ck_tasks_running_has_lease", "ck_tasks_status"} <= checks
    assert {ix["name"] for ix in inspector.get_indexes("schedules")} >= {"ix_schedules_due"}
    assert {ix["name"] for ix in inspector.get_indexes("events")} >= {"ix_events_subject"}


def test_a_new_sqlite_file_is_migrated_when_opened(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'sub' / 'new.db'}")
    assert read_revision(engine) is None
    ensure_schema(engine)
    assert read_revision(engine) == HEAD
    assert upgrade(engine) == (HEAD, HEAD)


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'wal.db'}")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    # create_engine is imported to make sure plain engines stay untouched by ours
    assert create_engine("sqlite://").dialect.name == "sqlite"
