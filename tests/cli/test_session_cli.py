"""`ondeck session list|show|move`: tables and lines for people, the API's objects with
--json, one line and an exit code for what is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from conftest import NOW
from ondeck.db.tables import events
from ondeck.entrypoints.cli import run
from ondeck.sessions.classify import Facts, Rules
from ondeck.sessions.intake import apply_record
from support.hooks import SESSION_ID, later, record


def apply(engine: Engine, rec: dict[str, Any]) -> None:
    with engine.begin() as conn:
        apply_record(conn, rec["at"], rec)


def test_list_show_and_move(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    apply(engine, record("start", NOW))
    apply(engine, record("stop", later(NOW, minutes=1), last_assistant_message="한국어 마지막 말"))
    apply(engine, record("end", later(NOW, minutes=2)))
    assert run(["--db", db_url, "session", "list"]) == 0
    out = capsys.readouterr().out
    assert "ended" in out and "한국어" in out
    assert run(["--db", db_url, "session", "list", "--json", "--status", "ended"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["external_id"] == SESSION_ID and listed["status"] == "ended"
    assert run(["--db", db_url, "session", "show", SESSION_ID[:8]]) == 0
    shown = capsys.readouterr().out
    assert f"session {listed['id']}" in shown and "last word" in shown
    assert "prompt_input_exit" in shown and "reason" in shown
    assert run(["--db", db_url, "session", "show", str(listed["id"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["last_word"] == "한국어 마지막 말"
    assert run(["--db", db_url, "session", "move", str(listed["id"]), "--project", "site"]) == 0
    assert "moved: - -> site" in capsys.readouterr().out
    with engine.connect() as conn:
        actor = conn.execute(
            select(events.c.actor).where(events.c.kind == "session.moved")
        ).scalar_one()
    assert actor == "cli"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["session", "show", "999"], 4, "no session 999"),
        (["session", "show", "nope"], 4, "no session"),
        (["session", "list", "--status", "running"], 2, "not one of open, ended, lost"),
        (["session", "list", "--project", "no project"], 2, "project"),
        (["session", "move", "1", "--side", "work"], 2, "no sides are configured"),
        (["session", "move", "1"], 2, "give the project"),
        (["session", "show", "x" * 300], 2, "200 printable"),
        (["session", "import", "gemini"], 2, "not one of claude-code, codex"),
        (["session", "import", "codex", "--since", "someday"], 2, "--since"),
    ],
)
def test_refusals_are_one_line_with_their_exit_code(
    engine: Engine,
    db_url: str,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    message: str,
) -> None:
    apply(engine, record("start", NOW))
    assert run(["--db", db_url, *args]) == code
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_the_inbox_and_a_move_to_a_side(
    engine: Engine,
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ONDECK_SIDES", json.dumps({"work": ["/w"], "own": ["/o"]}))
    rules = Rules(sides={"work": ["/w"], "own": ["/o"]})
    apply(engine, record("start", NOW, rules=rules, facts=Facts(cwd="/elsewhere")))
    assert run(["--db", db_url, "session", "list", "--status", "unclassified"]) == 0
    assert "unclassified" in capsys.readouterr().out
    assert run(["--db", db_url, "session", "move", SESSION_ID, "--side", "own"]) == 0
    assert "(unclassified) -> own" in capsys.readouterr().out
    assert run(["--db", db_url, "session", "list", "--status", "unclassified"]) == 0
    assert "no session records match" in capsys.readouterr().out


def test_import_prints_and_records_its_counts(
    engine: Engine, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    fixtures = Path(__file__).parents[1] / "fixtures" / "claude_transcripts" / "v2.1.332"
    shutil.copytree(fixtures, tmp_path / "projects")
    (tmp_path / "projects" / "-x").mkdir()
    (tmp_path / "projects" / "-x" / "0b7e3f52-8c1d-4e6a-9f20-5d4c3b2a1908.jsonl").write_bytes(
        b"\xff\n"
    )
    args = ["--db", db_url, "session", "import", "claude-code", "--dir", str(tmp_path / "projects")]
    assert run([*args, "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert (dry["sessions"], dry["refused"], dry["dry_run"]) == (1, 1, True)
    assert run(args) == 0
    out = capsys.readouterr().out
    assert "recorded 1, completed 0, unchanged 0, skipped 0, refused 1" in out
    assert "line 1 is not UTF-8" in out
    assert run(["--db", db_url, "session", "list", "--status", "imported", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["imported"] is True and "imported" in listed["badges"]
    assert run(["--db", db_url, "session", "show", str(listed["id"])]) == 0
    shown = capsys.readouterr().out
    assert "imported    from " in shown and "claude-code 2.1.332" in shown
    with engine.connect() as conn:
        details = conn.execute(
            select(events.c.details).where(events.c.kind == "sessions.imported")
        ).scalar_one()
    assert details["sessions"] == 1 and details["refused"] == 1
