"""Migrations only move forward, and keep every row: a database created at each revision,
with rows in every table, upgraded to head on SQLite and PostgreSQL, still holds each row
as it was, and ondeck works on it.

Each revision brings its seed rows (`SEEDS`), written when the revision is: rows in every
table that exists at that revision, with a value in every column. A new revision without
one, or with a table or column its seed leaves empty, fails here. Released revisions are
frozen (`RELEASED`): a schema change is a new revision, never an edit of an old one.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, MetaData, Table, insert, null, select, text

from ondeck.db import tables
from ondeck.db.engine import make_engine
from ondeck.db.fulltext import is_fulltext
from ondeck.db.migrate import HEAD, read_revision, upgrade
from ondeck.db.recall_tables import is_index
from ondeck.entrypoints.gateway import Store
from ondeck.host.settings import Settings, load_settings
from ondeck.system import events
from ondeck.work import backlog, backlog_leases, schedules

# --- the revisions ------------------------------------------------------------------------


def _config(location: str = "ondeck:migrations") -> Config:
    config = Config()
    config.set_main_option("script_location", location)
    return config


def _script(location: str = "ondeck:migrations") -> ScriptDirectory:
    return ScriptDirectory.from_config(_config(location))


def revisions(location: str = "ondeck:migrations") -> list[str]:
    """Base first, head last."""
    return [r.revision for r in reversed(list(_script(location).walk_revisions()))]


REVISIONS = revisions()

# Released revisions and the SHA-256 of their file, as released. Add each revision here when
# it ships; from then on, change the schema with a new revision.
RELEASED = {
    # 0.1.0 (commit 7b47820; tests/integration/test_upgrade_from_0_1_0.py upgrades its data)
    "0001": "4fbd258bf6b4d26b843ae07418b756ab4fb1e651b25a847621e4061db48f3e5f",
    "0002": "d87d0168ef9ba3443ae8b0c96aedee1cd6f8d4cd5994fc01c9de2eeb83d8e68c",
    "0003": "270264d1f9f3f4ced3b628f9f8fe9cafec4e7466232f1d32d5ddba4aa503718b",
    "0004": "f639b21a39b6a888a8f06cf23373e292a180fcda588d06f803c83a631a202523",
    "0005": "16476789acd1810c5768ff447e76d082e6f120a26889aac895ce26cfb173a91c",
    "0006": "69d0faacf1975654f04cea744e49e68d5d43098096ce19663f002655d69ef40b",
    # 0.2.0
    "0007": "f8f419c56c533967ca861facfa51adbb02b99c52741d5d00ddb16263a5735298",
    "0008": "c516e2fe26b49aae8f2c78af365dec91927bc630db145e9ebe1acf69c04a7714",
    "0009": "599c8ec99554edf0c66eab2eb31b91170dd29cb4438c2d9547621e2fc910faf2",
}


# --- seed rows, one set per revision -----------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """The id the database gave the `index`-th seeded row of `table` (a foreign key)."""

    table: str
    index: int


T = datetime(2026, 6, 15, 9, 0, 0, 123456, tzinfo=UTC)  # microseconds: kept, not rounded
DAY = date(2026, 6, 15)
KOREAN = "배포 준비 — 한국어와 English"


def _seed_0001() -> dict[str, list[dict[str, Any]]]:
    later = T + timedelta(hours=1)
    return {
        "schedules": [
            {
                "title": "Pay rent",
                "body": "the landlord's account",
                "kind": "task",
                "rule": "monthly:1",
                "project": "home",
                "start_on": DAY,
                "next_due": date(2026, 7, 1),
                "missed": "all",
                "last_fired_on": date(2026, 6, 1),
                "last_fired_at": T - timedelta(days=14),
                "enabled": True,
                "priority": 1,
                "created_at": T - timedelta(days=30),
                "updated_at": T,
                "deleted_at": None,
            },
            {
                "title": KOREAN,
                "body": "",
                "kind": "remind",
                "rule": "weekly:MON,THU",
                "project": None,
                "start_on": DAY,
                "next_due": DAY,
                "missed": "latest",
                "last_fired_on": None,
                "last_fired_at": None,
                "enabled": False,
                "priority": 2,
                "created_at": T,
                "updated_at": T,
                "deleted_at": None,
            },
            {
                "title": "Back up the database",
                "body": "",
                "kind": "backup",
                "rule": "daily",
                "project": None,
                "start_on": DAY,
                "next_due": None,
                "missed": "skip",
                "last_fired_on": None,
                "last_fired_at": None,
                "enabled": True,
                "priority": 9,
                "created_at": T,
                "updated_at": later,
                "deleted_at": later,
            },
        ],
        "tasks": [
            {
                "title": "Pay rent",
                "body": "",
                "status": "DONE",
                "priority": 1,
                "due_on": date(2026, 6, 1),
                "project": "home",
                "source": "sch:1:2026-06-01",
                "lease_owner": None,
                "lease_until": None,
                "lease_token": 3,
                "created_at": T - timedelta(days=14),
                "updated_at": T,
                "done_at": T,
            },
            {
                "title": KOREAN,
                "body": "여러 줄\nlines",
                "status": "RUNNING",
                "priority": 0,
                "due_on": DAY,
                "project": "site",
                "source": None,
                "lease_owner": "claude:7f1c2d3e",
                "lease_until": later,
                "lease_token": 9_000_000_000,  # past 32 bits
                "created_at": T,
                "updated_at": T,
                "done_at": None,
            },
            {
                "title": "someday",
                "body": "",
                "status": "READY",
                "priority": 9,
                "due_on": None,
                "project": None,
                "source": None,
                "lease_owner": None,
                "lease_until": None,
                "lease_token": 0,
                "created_at": T,
                "updated_at": T,
                "done_at": None,
            },
            {
                "title": "dropped",
                "body": "",
                "status": "CANCELLED",
                "priority": 2,
                "due_on": None,
                "project": None,
                "source": None,
                "lease_owner": None,
                "lease_until": None,
                "lease_token": 1,
                "created_at": T,
                "updated_at": T,
                "done_at": None,
            },
        ],
        "fires": [
            {
                "schedule_id": Ref("schedules", 0),
                "fire_date": date(2026, 6, 1),
                "fired_at": T - timedelta(days=14),
                "task_id": Ref("tasks", 0),
                "skipped": 2,
            },
        ],
        "events": [
            {
                "at": T,
                "actor": "mcp:claude-code",
                "kind": "task.claimed",
                "subject": "task:2",
                "details": {"owner": "claude:7f1c2d3e", "note": KOREAN, "token": 9_000_000_000},
            },
        ],
        "workers": [
            {
                "name": "jobs@host:41",
                "started_at": T - timedelta(days=1),
                "last_tick_at": T,
                "tick_ms": 12.5,
                "ticks": 1440,
                "summary": {"fire": {"fired": 1, "tasks": 1}, "reap": {"released": 0}},
                "stopped_at": later,
            },
        ],
        "backups": [
            {
                "started_at": T,
                "finished_at": later,
                "status": "ok",
                "worker": "jobs@host:41",
                "file": "/var/backups/ondeck-2026-06-15.db",
                "bytes": 5_000_000_000,
                "error": "",
                "schedule_id": Ref("schedules", 2),
            },
            {
                "started_at": later,
                "finished_at": later,
                "status": "failed",
                "worker": None,
                "file": None,
                "bytes": None,
                "error": "pg_dump: server closed the connection",
                "schedule_id": None,
            },
        ],
    }


# Revision -> its seed rows, table by table. A new revision adds its own entry, usually the
# previous one's rows with the new columns filled, e.g. for a revision adding `workers.zone`:
#
#     def _seed_0002() -> dict[str, list[dict[str, Any]]]:
#         seed = _seed_0001()
#         for row in seed["workers"]:
#             row["zone"] = "Asia/Seoul"
#         return seed
def _seed_0002() -> dict[str, list[dict[str, Any]]]:
    """0002: each heartbeat says the zone, interval and lease grace it ran with."""
    seed = _seed_0001()
    for row in seed["workers"]:
        row.update(tz="Asia/Seoul", tick_seconds=60.0, lease_grace_seconds=21600.0)
    return seed


def _session(external_id: str, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "agent": "claude",
        "external_id": external_id,
        "status": "open",
        "started_at": T - timedelta(hours=2),
        "last_seen_at": T,
        "ended_at": None,
        "end_reason": None,
        "start_source": "startup",
        "resumes": 0,
        "cwd": None,
        "git_root": None,
        "branch": None,
        "start_head": None,
        "end_head": None,
        "capture": True,
        "side": None,
        "project": None,
        "side_rule": "none",
        "project_rule": "none",
        "unclassified": False,
        "classification": {"side": {"value": None, "rule": "none"}},
        "disagreements": [],
        "last_word": None,
        "last_word_at": None,
        "compactions": 0,
        "commits": None,
        "files": None,
        "git_note": None,
        "redactions": 0,
        "redaction_kinds": {},
        "created_at": T - timedelta(hours=2),
        "updated_at": T,
    }
    row.update(values)
    return row


def _seed_0003() -> dict[str, list[dict[str, Any]]]:
    """0003: session records, their compactions and the hook receipts."""
    seed = _seed_0002()
    head = "a" * 40
    seed["sessions"] = [
        _session(
            "c0ffee00-0000-4000-8000-000000000001",
            status="ended",
            ended_at=T,
            end_reason="logout",
            resumes=1,
            cwd="/home/me/work/api",
            git_root="/home/me/work/api",
            branch="main",
            start_head=head,
            end_head="b" * 40,
            side="work",
            project="api",
            side_rule="path",
            project_rule="marker",
            classification={"side": {"value": "work", "rule": "path"}},
            disagreements=[{"what": "project", "marker": "api", "path": "web"}],
            last_word=f"{KOREAN}: the deploy script is done",
            last_word_at=T - timedelta(minutes=5),
            compactions=1,
            commits=[["b" * 40, "deploy script"]],
            files=["deploy.sh", "배포.md"],
            git_note="1 commit on top",
            redactions=1,
            redaction_kinds={"token": 1},
        ),
        _session(
            "c0ffee00-0000-4000-8000-000000000002",
            unclassified=True,
            capture=False,
            status="lost",
            start_source="resume",
        ),
    ]
    seed["session_compactions"] = [
        {
            "session_id": Ref("sessions", 0),
            "at": T - timedelta(hours=1),
            "trigger": "auto",
            "summary": f"compacted: {KOREAN}",
            "chars": 20,
            "redactions": 0,
        }
    ]
    seed["hook_receipts"] = [
        {"fingerprint": "f" * 64, "session_id": Ref("sessions", 0), "kind": "stop", "at": T}
    ]
    return seed


def _seed_0004() -> dict[str, list[dict[str, Any]]]:
    """0004: notes and handoffs (the full-text tables are kept by triggers, not seeded)."""
    seed = _seed_0003()

    def note(text: str, **values: Any) -> dict[str, Any]:
        row: dict[str, Any] = {
            "side": "work",
            "project": "api",
            "kind": "note",
            "text": text,
            "pinned": False,
            "status": "active",
            "status_reason": None,
            "status_at": None,
            "supersedes": None,
            "superseded_by": None,
            "expires_on": None,
            "origin": "person",
            "session_id": None,
            "git_root": None,
            "branch": None,
            "head": None,
            "redactions": 0,
            "created_at": T - timedelta(days=1),
            "updated_at": T,
        }
        row.update(values)
        return row

    seed["notes"] = [
        note("deploys go through the script", kind="decision", pinned=True),
        note(f"{KOREAN} 배포는 금요일에 하지 않는다", supersedes=Ref("notes", 0)),
        note(
            "the old way",
            status="superseded",
            status_at=T,
            superseded_by=Ref("notes", 1),
            side=None,
            project=None,
        ),
        note(
            "the staging host is 10.0.0.5",
            status="wrong",
            status_reason="moved to 10.0.0.9",
            status_at=T,
            expires_on=date(2027, 1, 1),
            redactions=1,
        ),
        note(
            "next: wire the script into CI",
            kind="handoff",
            origin="agent:c0ffee00",
            session_id=Ref("sessions", 0),
            git_root="/home/me/work/api",
            branch="main",
            head="b" * 40,
        ),
    ]
    return seed


def _seed_0005() -> dict[str, list[dict[str, Any]]]:
    """0005: device tokens (their hashes; a revoked one and a live one of the same name)."""
    seed = _seed_0004()
    seed["tokens"] = [
        {
            "name": "laptop",
            "scope": "write",
            "hash": "a" * 64,
            "created_at": T - timedelta(days=90),
            "last_used_at": T - timedelta(days=1),
            "expires_at": T + timedelta(days=90),
            "revoked_at": T,
        },
        {
            "name": "laptop",
            "scope": "read",
            "hash": "b" * 64,
            "created_at": T,
            "last_used_at": None,
            "expires_at": None,
            "revoked_at": None,
        },
    ]
    return seed


def _seed_0006() -> dict[str, list[dict[str, Any]]]:
    """0006: recall's PostgreSQL trigram indexes made again over lowered text (no table or
    column: 0005's rows, read back through them)."""
    return _seed_0005()


def _seed_0007() -> dict[str, list[dict[str, Any]]]:
    """0007: tasks, schedules and device tokens with a side, and rows still without one
    (the inbox, while sides are configured)."""
    seed = _seed_0006()
    for table in ("tasks", "schedules", "tokens"):
        for number, row in enumerate(seed[table]):
            row["side"] = ("work", "개인", None)[number % 3]
    return seed


def _seed_0008() -> dict[str, list[dict[str, Any]]]:
    """0008: the store's random id (one row)."""
    seed = _seed_0007()
    seed["store_identity"] = [{"id": 1, "store_id": "0123456789abcdef", "created_at": T}]
    return seed


def _seed_0009() -> dict[str, list[dict[str, Any]]]:
    """0009: dashboard sessions (the hashes of their ids; one live, one past its end)."""
    seed = _seed_0008()
    seed["dashboard_sessions"] = [
        {
            "hash": "c" * 64,
            "created_at": T - timedelta(days=1),
            "expires_at": T + timedelta(days=29),
        },
        {
            "hash": "d" * 64,
            "created_at": T - timedelta(days=40),
            "expires_at": T - timedelta(days=10),
        },
    ]
    return seed


def _seed_0011() -> dict[str, list[dict[str, Any]]]:
    """0011: sessions made by `session import` (the file it came from, the agent's version)
    beside hooks' sessions that keep their transcript's path."""
    seed = _seed_0009()
    for number, row in enumerate(seed["sessions"]):
        imported = number % 2 == 0
        row["imported"] = imported
        row["imported_from"] = "/home/me/.claude/projects/-w/세션.jsonl" if imported else None
        row["agent_version"] = "2.1.332"
        row["transcript_path"] = None if imported else "/home/me/.claude/projects/-w/a.jsonl"
    return seed


def _seed_0012() -> dict[str, list[dict[str, Any]]]:
    """0012: recall's word index, made from the rows (its tables are left out of the seeds,
    as the full-text tables were: `_reflect`); 0011's rows, found by recall at head."""
    return _seed_0011()


def _seed_0013() -> dict[str, list[dict[str, Any]]]:
    """0013: when a session's latest start was heard (a resume's), so an end from before it
    ends nothing; 0012's rows, each with one."""
    seed = _seed_0012()
    for row in seed["sessions"]:
        row["last_start_at"] = row["started_at"]
    return seed


def _seed_0014() -> dict[str, list[dict[str, Any]]]:
    """0014: recall's counts per side (its tables made from the rows, as 0012's were); 0013's
    rows, found by recall at head."""
    return _seed_0013()


SEEDS: dict[str, dict[str, list[dict[str, Any]]]] = {
    "0001": _seed_0001(),
    "0002": _seed_0002(),
    "0003": _seed_0003(),
    "0004": _seed_0004(),
    "0005": _seed_0005(),
    "0006": _seed_0006(),
    "0007": _seed_0007(),
    "0008": _seed_0008(),
    "0009": _seed_0009(),
    "0011": _seed_0011(),
    "0012": _seed_0012(),
    "0013": _seed_0013(),
    "0014": _seed_0014(),
}


# --- helpers ------------------------------------------------------------------------------


def _reflect(engine: Engine) -> dict[str, Table]:
    """The tables as they are in the database (at whatever revision it is)."""
    reflected = MetaData()
    # Recall's full-text tables, and its word index after them, are made from the rows
    # (db/fulltext.py, db/recall_tables.py).
    reflected.reflect(
        bind=engine, only=lambda name, _: not is_fulltext(name) and not is_index(name)
    )
    return {name: t for name, t in reflected.tables.items() if name != "alembic_version"}


def _insert(engine: Engine, seed: dict[str, list[dict[str, Any]]]) -> dict[str, list[Any]]:
    """Insert the seed in the database's own (reflected) tables; the ids it gave, by table.

    Ids are left to the database, so PostgreSQL's sequences move on as in real use."""
    found = _reflect(engine)
    ids: dict[str, list[Any]] = {}
    with engine.begin() as conn:
        for name, rows in seed.items():
            table = found[name]
            [key] = table.primary_key.columns
            for row in rows:
                # SQL NULL, not JSON's null, for a JSON column left empty.
                values = {
                    column: (
                        ids[v.table][v.index] if isinstance(v, Ref) else null() if v is None else v
                    )
                    for column, v in row.items()
                }
                given = conn.execute(insert(table).values(values).returning(key)).scalar_one()
                ids.setdefault(name, []).append(given)
    return ids


def _resolved(value: Any, ids: dict[str, list[Any]]) -> Any:
    return ids[value.table][value.index] if isinstance(value, Ref) else value


# --- the tests ----------------------------------------------------------------------------


def _check_each_revision_has_seed_rows(found: list[str]) -> None:
    missing = [r for r in found if r not in SEEDS]
    assert not missing, (
        f"revision(s) {missing} have no seed rows: add SEEDS[...] in {Path(__file__).name}, "
        "with rows in every table and a value in every column the revision leaves"
    )
    assert not set(SEEDS) - set(found), "seed rows for a revision that does not exist"


def test_every_revision_brings_its_seed_rows() -> None:
    _check_each_revision_has_seed_rows(REVISIONS)
    assert REVISIONS[-1] == HEAD


def test_released_revisions_are_never_edited() -> None:
    versions = Path(_script().dir) / "versions"
    for revision, digest in RELEASED.items():
        [path] = [p for p in versions.glob("*.py") if p.name.startswith(f"{revision}_")]
        # Line endings as git may check them out on another system do not count.
        found = hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).hexdigest()
        assert found == digest, (
            f"{path.name} is released and was edited: databases made with it will not get "
            "the change. Put it in a new revision instead."
        )


@pytest.mark.parametrize("revision", REVISIONS)
def test_a_database_at_each_revision_keeps_every_row_up_to_head(
    empty_url: str, tmp_path: Path, revision: str
) -> None:
    engine = make_engine(empty_url)
    try:
        upgrade(engine, revision)
        assert read_revision(engine) == revision
        seed = SEEDS[revision]
        _check_the_seed_fills_the_schema(engine, revision, seed)
        ids = _insert(engine, seed)

        upgrade(engine)
        assert read_revision(engine) == HEAD

        _check_every_row_is_kept(engine, seed, ids)
        settings = load_settings(
            database_url=empty_url, tz="Asia/Seoul", data_dir=tmp_path / "data"
        )
        _check_ondeck_works_on_it(engine, settings, seed)
    finally:
        engine.dispose()


def _check_the_seed_fills_the_schema(
    engine: Engine, revision: str, seed: dict[str, list[dict[str, Any]]]
) -> None:
    """Rows in every table, and some row with a value in every column, at `revision`."""
    for name, table in _reflect(engine).items():
        rows = seed.get(name, [])
        assert rows, f"SEEDS[{revision!r}] has no rows for table {name}"
        for column in table.columns:
            if column.primary_key and column.autoincrement:
                continue
            assert any(row.get(column.name) is not None for row in rows), (
                f"SEEDS[{revision!r}]: no row of {name} has a value for {column.name}"
            )


def _check_every_row_is_kept(
    engine: Engine, seed: dict[str, list[dict[str, Any]]], ids: dict[str, list[Any]]
) -> None:
    """Each seeded row, read back through ondeck's own tables at head, as it was written."""
    with engine.connect() as conn:
        for name, rows in seed.items():
            table = tables.metadata.tables[name]
            [key] = table.primary_key.columns
            gone = [c for c in rows[0] if c not in table.c]
            assert not gone, f"columns of {name} gone at head: {gone} (where did their data go?)"
            for row, given in zip(rows, ids[name], strict=True):
                columns = [table.c[c] for c in row]
                stored = conn.execute(select(*columns).where(key == given)).first()
                assert stored is not None, f"{name} row {given} is gone after the upgrade"
                expected = tuple(_resolved(v, ids) for v in row.values())
                assert tuple(stored) == expected, f"{name} row {given} changed"
            count = conn.execute(select(text("count(*)")).select_from(table)).scalar_one()
            assert count == len(rows), f"{name}: {count} rows after the upgrade, {len(rows)} before"


def _check_ondeck_works_on_it(
    engine: Engine, settings: Settings, seed: dict[str, list[dict[str, Any]]]
) -> None:
    """Reading everything and writing anew, through the services, on the upgraded database."""
    call = Store(settings=settings, engine=engine).call(T)
    with call.read() as conn:
        listed = backlog.list_tasks(conn, limit=1000)
        assert len(listed) == len(seed["tasks"])
        assert {t.title for t in listed} >= {KOREAN}
        live = schedules.list_schedules(conn)
        assert KOREAN in {s.title for s in live}
        assert events.list_events(conn, limit=100)
    ctx = call.context()
    assert KOREAN in call.context_text("markdown")
    assert [r.task.title for r in ctx.running] == [KOREAN]
    with call.write() as conn:
        made = backlog.create_task(conn, T, title="after the upgrade", actor="cli")
        held = backlog_leases.claim_task(conn, T, made.id, owner="me", actor="cli")
        backlog_leases.complete_task(conn, T, made.id, token=held.lease_token, actor="cli")
        created = schedules.create_schedule(
            conn, T, settings.zone, title="new", rule="daily", actor="cli"
        )
        schedules.pull_now(conn, T, settings.zone, created.id, actor="cli")
    assert made.id not in {t.id for t in listed}


# --- the checks, checked -------------------------------------------------------------------

LOSSY = """
import sqlalchemy as sa
from alembic import op

revision = "9001"
down_revision = {down!r}
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workers") as batch_op:
        batch_op.add_column(sa.Column("zone", sa.String(64)))
    op.execute("DELETE FROM events")


def downgrade() -> None:
    pass
"""


def test_a_new_revision_without_seed_rows_or_that_loses_rows_is_caught(tmp_path: Path) -> None:
    """A copy of the migrations with one more revision: it adds a column (that the seeds do
    not fill) and deletes every event. Each of the checks above says so."""
    from alembic import command

    location = tmp_path / "migrations"
    shutil.copytree(Path(_script().dir), location, ignore=shutil.ignore_patterns("__pycache__"))
    (location / "versions" / "9001_lossy.py").write_text(
        LOSSY.format(down=REVISIONS[-1]), encoding="utf-8"
    )
    found = revisions(str(location))
    assert found == [*REVISIONS, "9001"]
    with pytest.raises(AssertionError, match=r"\['9001'\] have no seed rows"):
        _check_each_revision_has_seed_rows(found)

    engine = make_engine(f"sqlite:///{tmp_path / 'lossy.db'}")
    try:
        upgrade(engine)  # head of the real migrations
        ids = _insert(engine, SEEDS[REVISIONS[-1]])
        with engine.begin() as conn:
            config = _config(str(location))
            config.attributes["connection"] = conn
            command.upgrade(config, "9001")
        with pytest.raises(AssertionError, match="no row of workers has a value for zone"):
            _check_the_seed_fills_the_schema(engine, "9001", SEEDS[REVISIONS[-1]])
        with pytest.raises(AssertionError, match="events row 1 is gone after the upgrade"):
            _check_every_row_is_kept(engine, SEEDS[REVISIONS[-1]], ids)
    finally:
        engine.dispose()
