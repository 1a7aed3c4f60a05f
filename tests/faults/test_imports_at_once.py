"""Two `ondeck session import claude-code` and two `ondeck import` of one memory export, all
four at once against one database (real processes): they take turns (db/locks.py: an
advisory lock on PostgreSQL, the write lock on SQLite), none ends in "internal error", and
what is stored is what one import of each stores. Before, on PostgreSQL, both imports of a
session found it missing and both inserted it (the second refused by the unique key:
"internal error"), and two memory imports each inserted every note."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest
from sqlalchemy import func, select

from ondeck.db.engine import make_engine
from ondeck.db.tables import events, notes, sessions
from ondeck.entrypoints.cli import run
from support.procs import Procs, ondeck_env

pytestmark = pytest.mark.slow

FIXTURE = (
    Path(__file__).parents[1]
    / "fixtures"
    / "claude_transcripts"
    / "v2.1.332"
    / "-home-owner-work-survey"
    / "807671fc-c5d6-4801-a1cc-e882df591ef9.jsonl"
)
SESSIONS = 30
NOTES = 40


def _transcripts(folder: Path) -> Path:
    """SESSIONS copies of one real transcript, each its own session."""
    project = folder / "-home-owner-work-survey"
    project.mkdir(parents=True)
    text = FIXTURE.read_text(encoding="utf-8")
    for _ in range(SESSIONS):
        name = str(uuid.uuid4())
        (project / f"{name}.jsonl").write_text(text.replace(FIXTURE.stem, name), "utf-8")
    return folder


def _export(sqlite_template: Path, tmp_path: Path) -> Path:
    """An export of NOTES notes (Korean text), made by another database."""
    source = tmp_path / "source.db"
    shutil.copyfile(sqlite_template, source)
    url = f"sqlite:///{source}"
    for n in range(NOTES):
        assert run(["--db", url, "note", "add", f"{n}번째 결정: 배포는 목요일"]) == 0
    out = tmp_path / "memory.jsonl"
    assert run(["--db", url, "export", "--format", "jsonl", "--out", str(out)]) == 0
    return out


def _counts(db_url: str) -> dict[str, int]:
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            counted = {
                "sessions": select(func.count()).select_from(sessions),
                "notes": select(func.count()).select_from(notes),
                "distinct notes": select(func.count(func.distinct(notes.c.text))),
                "session.imported": select(func.count()).where(events.c.kind == "session.imported"),
                "note.imported": select(func.count()).where(events.c.kind == "note.imported"),
            }
            return {k: int(conn.execute(q).scalar_one()) for k, q in counted.items()}
    finally:
        engine.dispose()


def test_imports_at_once_take_turns_and_store_what_one_would(
    db_url: str, sqlite_template: Path, procs: Procs, tmp_path: Path
) -> None:
    folder = _transcripts(tmp_path / "projects")
    export = _export(sqlite_template, tmp_path)
    env = ondeck_env(db_url, tmp_path)
    started = [
        *(
            procs.ondeck(f"sessions-{n}", "session", "import", "claude-code", "--dir",
                         str(folder), "--json", env=env)
            for n in range(2)
        ),
        *(procs.ondeck(f"memory-{n}", "import", str(export), "--json", env=env) for n in range(2)),
    ]  # fmt: skip
    for proc in started:
        code = proc.wait(timeout=300)
        said = proc.text()
        assert code == 0, said
        assert "internal error" not in said and "Traceback" not in said, said
    reports = [json.loads(p.text()[p.text().index("{") :]) for p in started[:2]]
    assert sum(r["sessions"] for r in reports) == SESSIONS, reports  # each recorded once
    assert _counts(db_url) == {
        "sessions": SESSIONS,
        "notes": NOTES,
        "distinct notes": NOTES,
        "session.imported": SESSIONS,
        "note.imported": NOTES,
    }
