"""The store's fingerprint is a random id of the database, kept in it: not a
hash of the URL (which holds a PostgreSQL password), the same at every open, different for
two databases, and carried by a backup: a restored database says the id of the one the
backup was taken from."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import select

from conftest import NOW
from ondeck.db import open_database
from ondeck.db.engine import writing
from ondeck.db.plain import as_db
from ondeck.db.tables import store_identity as table
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import load_settings
from ondeck.system import store_id as store_identity
from support.procs import run_ondeck


def _id_of(url: str) -> str:
    engine = open_database(url)
    try:
        with writing(engine) as conn:
            return store_identity.ensure(as_db(conn), NOW)
    finally:
        engine.dispose()


def test_the_store_id_is_random_kept_and_what_the_server_says(db_url: str, tmp_path: Path) -> None:
    first = _id_of(db_url)
    assert first == _id_of(db_url)  # kept in the database
    assert len(first) == 16 and int(first, 16) >= 0
    assert first != hashlib.sha256(db_url.encode()).hexdigest()[:16]  # not the URL's
    assert _id_of(f"sqlite:///{tmp_path / 'another.db'}") != first
    settings = load_settings(database_url=db_url, data_dir=tmp_path / "data", tz="UTC")
    engine = open_database(db_url)
    try:
        app = create_app(settings, engine)
        with time_machine.travel(NOW, tick=False), TestClient(app) as client:
            assert client.get("/api/v1/health").headers["x-ondeck-store"] == first
        with engine.connect() as conn:
            assert conn.execute(select(table.c.store_id)).scalar_one() == first
    finally:
        engine.dispose()


def test_a_restored_backup_says_the_id_of_the_database_it_was_taken_from(
    tmp_path: Path,
) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ONDECK_")},
        "ONDECK_TZ": "UTC",
        "ONDECK_BACKUP_DIR": str(tmp_path / "backups"),
        "ONDECK_DATA_DIR": str(tmp_path / "data"),
    }
    here, there = f"sqlite:///{tmp_path / 'here.db'}", f"sqlite:///{tmp_path / 'there.db'}"
    mine, theirs = _id_of(here), _id_of(there)
    made = run_ondeck("--db", here, "backup", "--json", env=env)
    assert made.returncode == 0, made.stderr
    backup = json.loads(made.stdout)["file"]
    done = run_ondeck("--db", there, "restore", backup, "--yes", env=env)
    assert done.returncode == 0, done.stderr
    assert _id_of(there) == mine != theirs
