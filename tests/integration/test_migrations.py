"""The migrations produce exactly the metadata, on both stores, and HEAD is Alembic's head."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import CheckConstraint, Engine, create_engine, inspect

import ondeck
from ondeck.core.models import BackupStatus, MissedPolicy, ScheduleKind, TaskStatus
from ondeck.db.engine import make_engine
from ondeck.db.fulltext import include_name
from ondeck.db.migrate import HEAD, alembic_head, ensure_schema, read_revision, upgrade
from ondeck.db.schema import metadata


def test_head_constant_matches_alembic() -> None:
    assert alembic_head() == HEAD


def test_migrations_produce_the_metadata(engine: Engine) -> None:
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "include_name": include_name}
        )
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


def test_a_database_of_a_newer_ondeck_is_refused_and_left_as_it_is(
    engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A schema version this ondeck has no migration for: every command says so in one line
    (exit 2), and nothing is migrated or written."""
    from sqlalchemy import text

    from ondeck.core.errors import ConfigError
    from ondeck.db import migrate
    from ondeck.entrypoints.cli import run

    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    monkeypatch.setattr(migrate, "_checked", set())  # as a new process sees it
    with pytest.raises(ConfigError, match=r"schema version 0099, .* newer ondeck; upgrade"):
        ensure_schema(engine)
    capsys.readouterr()
    assert run(["--db", db_url, "task", "add", "written by a newer ondeck?"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ondeck: error: the database holds schema version 0099")
    assert "\n" not in err and "Traceback" not in err
    assert read_revision(engine) == "0099"
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM tasks")).scalar() == 0


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'wal.db'}")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    # create_engine is imported to make sure plain engines stay untouched by ours
    assert create_engine("sqlite://").dialect.name == "sqlite"


# --- the CHECKs built from core.models' enums -----------------------------------------------

MIGRATION_0001 = Path(ondeck.__file__).parent / "migrations/versions/0001_initial_schema.py"
MIGRATION_0004 = Path(ondeck.__file__).parent / "migrations/versions/0004_memory.py"
TABLES_OF_0001 = {"tasks", "schedules", "fires", "events", "workers", "backups"}


def _checks(engine: Engine) -> dict[str, list[tuple[str | None, str]]]:
    inspector = inspect(engine)
    return {
        table: sorted((ck["name"], ck["sqltext"]) for ck in inspector.get_check_constraints(table))
        for table in metadata.tables
    }


def test_every_check_in_the_metadata_is_written_verbatim_in_0001() -> None:
    """0001 is released and frozen (it imports nothing of the app's models): the CHECKs the
    enums build must be exactly the text it hard-codes, or a new member needs a migration."""
    source = MIGRATION_0001.read_text(encoding="utf-8")
    checks = [
        (table.name, ck)
        for table in metadata.tables.values()
        if table.name in TABLES_OF_0001
        for ck in table.constraints
        if isinstance(ck, CheckConstraint)
    ]
    assert len(checks) == 9
    for table_name, ck in checks:
        assert f'"{ck.sqltext}"' in source, (table_name, str(ck.sqltext))
        assert f'name=op.f("{ck.name}")' in source
    # The enums' words, each in the CHECK 0001 wrote for its column.
    for column, enum in (
        ("status", TaskStatus),
        ("kind", ScheduleKind),
        ("missed", MissedPolicy),
        ("status", BackupStatus),
    ):
        listed = ", ".join(f"'{member.value}'" for member in enum)
        assert f'"{column} IN ({listed})"' in source


def test_the_notes_checks_are_written_verbatim_in_0004() -> None:
    """The notes' CHECKs built from core.memory's enums are the text 0004 hard-codes."""
    from ondeck.core.memory import NoteKind, NoteStatus
    from ondeck.db.tables import notes

    source = MIGRATION_0004.read_text(encoding="utf-8")
    checks = [ck for ck in notes.constraints if isinstance(ck, CheckConstraint)]
    assert len(checks) == 8
    for ck in checks:
        assert f'"{ck.sqltext}"' in source, str(ck.sqltext)
        assert f'name=op.f("{ck.name}")' in source
    for column, enum in (("kind", NoteKind), ("status", NoteStatus)):
        listed = ", ".join(f"'{member.value}'" for member in enum)
        assert f'"{column} IN ({listed})"' in source


def test_the_metadata_creates_the_checks_the_migration_created(
    engine: Engine, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The same CHECKs, as the database itself reports them, from `create_all` on an empty
    database as from migration 0001 (PostgreSQL normalises the text: both go through it)."""
    from conftest import empty_database

    fresh = make_engine(empty_database(engine.dialect.name, tmp_path, request, "fresh.db"))
    request.addfinalizer(fresh.dispose)
    metadata.create_all(fresh)
    migrated = _checks(engine)
    assert migrated == _checks(fresh)
    assert len(migrated["tasks"]) == 4 and len(migrated["backups"]) == 1
