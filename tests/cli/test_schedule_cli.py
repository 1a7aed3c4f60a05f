"""`ondeck schedule …`, `ondeck backup`, `ondeck restore`: output, exit codes, nothing half-done."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, func, select

from ondeck.core import clock
from ondeck.db.tables import schedules, tasks
from ondeck.entrypoints.cli import run

UTC_ZONE = ZoneInfo("UTC")


@pytest.fixture
def cli(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Any:
    monkeypatch.setenv("ONDECK_TZ", "UTC")
    monkeypatch.setenv("ONDECK_BACKUP_DIR", str(tmp_path / "backups"))

    def call(*args: str) -> tuple[int, str, str]:
        code = run(["--db", db_url, *args])
        out, err = capsys.readouterr()
        return code, out, err

    return call


def _json(cli: Any, *args: str) -> Any:
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_add_list_show_edit(cli: Any) -> None:
    code, out, _ = cli("schedule", "add", "Weekly check", "--rule", "weekly: mon", "--project", "p")
    assert code == 0
    assert "added schedule 1: Weekly check (every Monday), next due" in out
    options = ["--kind", "remind", "--start", "2030-01-01", "--priority", "0", "--missed", "skip"]
    made = _json(cli, "schedule", "add", "Note", "--rule", "every:3", *options, "--body", "b")
    assert (made["kind"], made["start_on"], made["next_due"]) == (
        "remind",
        "2030-01-01",
        "2030-01-01",
    )
    assert (made["priority"], made["missed"], made["body"]) == (0, "skip", "b")
    listed = _json(cli, "schedule", "list")
    assert [s["id"] for s in listed] == [1, 2]
    code, out, _ = cli("schedule", "list")
    assert "Weekly" in out and "remind" in out
    shown = _json(cli, "schedule", "show", "2")
    assert shown["next"] == ["2030-01-01", "2030-01-04", "2030-01-07", "2030-01-10", "2030-01-13"]
    assert shown["fires"] == []
    code, out, _ = cli("schedule", "show", "2")
    assert "every 3 days" in out and "2030-01-04" in out
    edited = _json(cli, "schedule", "edit", "1", "--title", "Renamed", "--rule", "daily",
                   "--project", "")  # fmt: skip
    assert (edited["title"], edited["rule"], edited["project"]) == ("Renamed", "daily", None)
    assert edited["next_due"] == clock.today(clock.now(), UTC_ZONE).isoformat()


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["schedule", "add", "x", "--rule", "monthly:31"], 2, "not every month has a day 31"),
        (["schedule", "add", "x", "--rule", "*/5 * * * *"], 2, "cron"),
        (["schedule", "add", "x"], 2, "--rule"),
        (["schedule", "add", "x", "--rule", "daily", "--start", "tomorrow"], 2, "YYYY-MM-DD"),
        (["schedule", "add", "x", "--rule", "daily", "--kind", "mail"], 2, "kind 'mail'"),
        (["schedule", "add", "x", "--rule", "daily", "--priority", "12"], 2, "priority"),
        (["schedule", "show", "99"], 4, "no schedule 99"),
        (["schedule", "now", "99"], 4, "no schedule 99"),
        (["schedule", "rm", "99"], 4, "no schedule 99"),
        (["schedule", "show", "abc"], 2, "schedule_id"),
    ],
)
def test_bad_input_is_one_line_with_its_exit_code(
    cli: Any, engine: Engine, args: list[str], code: int, message: str
) -> None:
    got, _, err = cli(*args)
    assert got == code
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(schedules)).scalar() == 0


def test_now_then_the_jobs_tick_makes_the_task(cli: Any, engine: Engine) -> None:
    _json(cli, "schedule", "add", "Check", "--rule", "monthly:1")
    code, out, _ = cli("schedule", "now", "1")
    assert code == 0
    assert "due today — waiting for the jobs loop, which has never ticked" in out
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(tasks)).scalar() == 0
    assert cli("jobs", "--once")[0] == 0
    shown = _json(cli, "schedule", "show", "1")
    [fire] = shown["fires"]
    day = clock.today(clock.now(), UTC_ZONE).isoformat()
    assert fire["fire_date"] == day
    with engine.connect() as conn:
        assert conn.execute(select(tasks.c.source)).scalars().all() == [f"sch:1:{day}"]


def test_pause_resume_rm(cli: Any) -> None:
    _json(cli, "schedule", "add", "Check", "--rule", "daily")
    assert _json(cli, "schedule", "pause", "1")["enabled"] is False
    code, _, err = cli("schedule", "now", "1")
    assert code == 3 and "paused" in err
    assert _json(cli, "schedule", "resume", "1")["enabled"] is True
    assert _json(cli, "schedule", "rm", "1") == {"deleted": 1}
    assert _json(cli, "schedule", "list") == []


def test_backup_and_restore(cli: Any, tmp_path: Path) -> None:
    _json(cli, "schedule", "add", "Keep me", "--rule", "daily")
    made = _json(cli, "backup")
    assert made["status"] == "ok"
    file = Path(made["file"])
    assert file.parent == tmp_path / "backups"
    code, out, _ = cli("backup")
    assert code == 0 and "backup 2:" in out
    _json(cli, "schedule", "rm", "1")

    code, _, err = cli("restore", str(file))
    assert code == 2 and "--yes" in err
    assert _json(cli, "schedule", "list") == []
    restored = _json(cli, "restore", str(file), "--yes")
    assert restored["file"] == str(file)
    assert [s["title"] for s in _json(cli, "schedule", "list")] == ["Keep me"]

    broken = tmp_path / "broken.bin"
    broken.write_bytes(b"\x00not a backup" * 100)
    code, _, err = cli("restore", str(broken), "--yes")
    assert code == 2 and str(broken) in err
