"""`ondeck task …`: tables for people, `--json` objects for scripts, exit codes for failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from ondeck.core.models import TASK_JSON_FIELDS
from ondeck.db.tables import events, tasks

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONDECK_TZ", "UTC")


def ok_json(ondeck: Any, *args: str, **kw: Any) -> Any:
    code, out, err = ondeck(*args, "--json", **kw)
    assert code == 0, err
    return json.loads(out)


def snapshot(engine: Engine) -> tuple[list[Any], int]:
    with engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(select(tasks).order_by(tasks.c.id))]
        count = conn.execute(select(func.count()).select_from(events)).scalar_one()
    return rows, count


def test_add_claim_renew_done_and_show(ondeck: Any) -> None:
    task = ok_json(
        ondeck, "task", "add", "write it", "--due", "2026-06-16", "--priority", "1",
        "--project", "ondeck", "--body", "details",
    )  # fmt: skip
    assert list(task) == [*TASK_JSON_FIELDS, "lease"]  # the lease as it stands, last
    assert (task["title"], task["due_on"], task["priority"]) == ("write it", "2026-06-16", 1)

    held = ok_json(ondeck, "task", "claim", "--owner", "cli:alice", "--for", "2h")
    assert held["id"] == task["id"]
    assert held["lease_until"] == "2026-06-15T11:00:00+00:00"
    token = str(held["lease_token"])

    renewed = ok_json(ondeck, "task", "renew", str(task["id"]), "--token", token, "--for", "30m")
    assert renewed["lease_until"] == "2026-06-15T09:30:00+00:00"

    code, out, _ = ondeck("task", "done", str(task["id"]), "--token", token, "--note", "sent")
    assert code == 0
    assert out == f"task {task['id']} done: write it\n"

    shown = ok_json(ondeck, "task", "show", str(task["id"]))
    assert shown["task"]["status"] == "DONE"
    assert [e["kind"] for e in shown["events"]] == [
        "task.completed",
        "task.renewed",
        "task.claimed",
        "task.created",
    ]
    assert shown["events"][0]["details"]["note"] == "sent"
    assert {e["actor"] for e in shown["events"]} == {"cli"}


def test_human_output_names_the_holder_and_the_token(ondeck: Any) -> None:
    ondeck("task", "add", "first")
    code, out, _ = ondeck("task", "claim", "1", "--owner", "cli:alice")
    assert code == 0
    assert out.strip() == (
        "claimed task 1: first; held by cli:alice until 2026-06-15T10:00:00+00:00, token 1"
    )
    code, out, _ = ondeck("task", "list")
    assert code == 0
    assert "cli:alice until 2026-06-15 10:00" in out
    code, out, _ = ondeck("task", "show", "1")
    assert "task 1: first" in out and "task.claimed" in out


def test_an_expired_lease_is_shown_as_expired(ondeck: Any) -> None:
    ondeck("task", "add", "first")
    ondeck("task", "claim", "1", "--owner", "cli:alice", "--for", "1h")
    later = NOW + timedelta(hours=2)
    _, out, _ = ondeck("task", "list", at=later)
    assert "RUNNING (expired)" in out
    [listed] = ok_json(ondeck, "task", "list", at=later)
    assert (listed["status"], listed["expired"]) == ("RUNNING", True)


def test_list_filters_by_status_and_project(ondeck: Any) -> None:
    ondeck("task", "add", "a", "--project", "x")
    ondeck("task", "add", "b", "--project", "y")
    ondeck("task", "cancel", "2")
    assert [t["id"] for t in ok_json(ondeck, "task", "list")] == [1]
    assert [t["id"] for t in ok_json(ondeck, "task", "list", "--status", "all")] == [1, 2]
    assert [t["id"] for t in ok_json(ondeck, "task", "list", "--status", "cancelled")] == [2]
    assert ok_json(ondeck, "task", "list", "--project", "y") == []
    code, out, _ = ondeck("task", "list", "--project", "y")
    assert (code, out) == (0, "no tasks\n")


def test_edit_and_force_release(ondeck: Any) -> None:
    ondeck("task", "add", "a", "--due", "2026-06-20", "--project", "x")
    edited = ok_json(ondeck, "task", "edit", "1", "--title", "b", "--no-due", "--no-project")
    assert (edited["title"], edited["due_on"], edited["project"]) == ("b", None, None)
    ondeck("task", "claim", "1", "--owner", "claude:s1")
    code, out, _ = ondeck("task", "release", "1", "--force")
    assert (code, out) == (0, "released task 1 (forced): it is READY again\n")
    shown = ok_json(ondeck, "task", "show", "1")
    assert shown["events"][0]["details"]["force"] is True


def test_instants_are_shown_in_the_configured_zone(
    ondeck: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONDECK_TZ", "Asia/Seoul")
    task = ok_json(ondeck, "task", "add", "a")
    assert task["created_at"] == "2026-06-15T18:00:00+09:00"
    _, out, _ = ondeck("task", "claim", "1", "--owner", "x")
    assert "until 2026-06-15T19:00:00+09:00" in out
    shown = ok_json(ondeck, "task", "show", "1")
    assert shown["events"][0]["at"] == "2026-06-15T18:00:00+09:00"


# Task 1 READY, task 2 RUNNING (cli:bob, token 1), task 3 DONE: every failure leaves them be.
BAD: list[tuple[list[str], int, str]] = [
    (["task", "add", ""], 2, "title must not be empty"),
    (["task", "add", "x" * 501], 2, "at most 500"),
    (["task", "add", "x", "--due", "2026-13-01"], 2, "there is no month 13"),
    (["task", "add", "x", "--due", "tomorrow"], 2, "use YYYY-MM-DD"),
    (["task", "add", "x", "--priority", "10"], 2, "priority 10 is out of range"),
    (["task", "add", "x", "--priority", "high"], 2, "--priority"),
    (["task", "add", "x", "--project", "a b"], 2, "project 'a b' is not valid"),
    (["task", "add", "x", "--body", "\x00"], 2, "NUL"),
    (["task", "add"], 2, "Missing argument"),
    (["task", "list", "--status", "paused"], 2, "unknown status 'PAUSED'"),
    (["task", "list", "--project", "a/b"], 2, "is not valid"),
    (["task", "list", "--due-before", "soon"], 2, "--due-before date"),
    (["task", "show", "99"], 4, "no task 99"),
    (["task", "show", "0"], 2, "task id 0 is not valid"),
    (["task", "show", str(2**63)], 2, "is not valid"),
    (["task", "show", "one"], 2, "valid integer"),
    (["task", "edit", "1"], 2, "nothing to change"),
    (["task", "edit", "1", "--due", "x"], 2, "use YYYY-MM-DD"),
    (["task", "edit", "1", "--due", "2026-06-20", "--no-due"], 2, "not both"),
    (["task", "edit", "1", "--project", "p", "--no-project"], 2, "not both"),
    (["task", "edit", "1", "--title", ""], 2, "title must not be empty"),
    (["task", "edit", "99", "--title", "x"], 4, "no task 99"),
    (["task", "edit", "3", "--title", "x"], 3, "task 3 is DONE"),
    (["task", "claim", "1"], 2, "Missing option '--owner'"),
    (["task", "claim", "1", "--owner", ""], 2, "owner must not be empty"),
    (["task", "claim", "1", "--owner", "x", "--for", "8d"], 2, "at most 7d"),
    (["task", "claim", "1", "--owner", "x", "--for", "0m"], 2, "more than 0"),
    (["task", "claim", "1", "--owner", "x", "--for", "soon"], 2, "not a duration"),
    (["task", "claim", "1", "--owner", "x", "--project", "p"], 2, "without a task id"),
    (["task", "claim", "99", "--owner", "x"], 4, "no task 99"),
    (["task", "claim", "2", "--owner", "x"], 3, "task 2 is RUNNING, held by cli:bob"),
    (["task", "claim", "3", "--owner", "x"], 3, "task 3 is DONE"),
    (["task", "claim", "--owner", "x", "--project", "none-here"], 3, "no READY task to claim"),
    (["task", "renew", "2"], 2, "Missing option '--token'"),
    (["task", "renew", "2", "--token", "-1"], 2, "lease token -1 is not valid"),
    (["task", "renew", "2", "--token", "7"], 3, "lease lost: task 2 is RUNNING, held by cli:bob"),
    (["task", "renew", "2", "--token", "1", "--for", "8d"], 2, "at most 7d"),
    (["task", "renew", "1", "--token", "1"], 3, "lease lost: task 1 is READY"),
    (["task", "renew", "99", "--token", "1"], 4, "no task 99"),
    (["task", "done", "2"], 3, "give its lease token"),
    (["task", "done", "2", "--token", "0"], 3, "lease lost"),
    (["task", "done", "3"], 3, "task 3 is already DONE"),
    (["task", "done", "99"], 4, "no task 99"),
    (["task", "done", "1", "--note", "n" * 2001], 2, "at most 2000"),
    (["task", "release", "2"], 2, "give the lease token, or force"),
    (["task", "release", "2", "--token", "1", "--force"], 2, "not both"),
    (["task", "release", "2", "--token", "9"], 3, "lease lost"),
    (["task", "release", "1", "--force"], 3, "task 1 is READY: there is no lease to release"),
    (["task", "release", "99", "--force"], 4, "no task 99"),
    (["task", "cancel", "2"], 3, "release it first"),
    (["task", "cancel", "3"], 3, "task 3 is already DONE"),
    (["task", "cancel", "99"], 4, "no task 99"),
]


@pytest.mark.parametrize(
    ("args", "code", "message"), BAD, ids=[" ".join(a)[:60] for a, _, _ in BAD]
)
def test_bad_input_exits_with_its_code_and_one_line(
    ondeck: Any, engine: Engine, args: list[str], code: int, message: str
) -> None:
    ondeck("task", "add", "ready")
    ondeck("task", "add", "running")
    ondeck("task", "claim", "2", "--owner", "cli:bob")
    ondeck("task", "add", "done")
    ondeck("task", "done", "3")
    before = snapshot(engine)
    got, out, err = ondeck(*args)
    assert got == code, err
    assert out == ""
    assert err.startswith("ondeck: error: ")
    assert err.count("\n") == 1, err
    assert message in err
    assert "Traceback" not in err
    assert snapshot(engine) == before


def test_the_installed_command_runs_in_a_real_process(tmp_path: Path) -> None:
    """One end-to-end run of the console script: exit codes and stderr as a shell sees them."""
    ondeck = Path(sys.executable).with_name("ondeck")
    env = {
        **os.environ,
        "ONDECK_DATABASE_URL": f"sqlite:///{tmp_path / 'o.db'}",
        "ONDECK_TZ": "UTC",
    }

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(ondeck), *args], capture_output=True, text=True, env=env, timeout=60, check=False
        )

    added = call("task", "add", "from a shell", "--json")
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["title"] == "from a shell"
    missing = call("task", "done", "42")
    assert missing.returncode == 4
    assert missing.stderr == "ondeck: error: no task 42\n"


def test_done_next_completes_and_claims_the_next(ondeck: Any) -> None:
    first = ok_json(ondeck, "task", "add", "first", "--priority", "0")
    second = ok_json(ondeck, "task", "add", "second", "--priority", "1")
    held = ok_json(ondeck, "task", "claim", "--owner", "cli:w")
    token = str(held["lease_token"])
    both = ok_json(ondeck, "task", "done", str(first["id"]), "--token", token, "--next",
                   "--owner", "cli:w", "--for", "2h")  # fmt: skip
    assert (both["done"]["id"], both["done"]["status"]) == (first["id"], "DONE")
    assert (both["next"]["id"], both["next"]["lease_owner"]) == (second["id"], "cli:w")
    token = str(both["next"]["lease_token"])
    code, out, _ = ondeck(
        "task", "done", str(second["id"]), "--token", token, "--next", "--owner", "cli:w"
    )
    assert code == 0
    assert out == f"task {second['id']} done: second\nno READY task to claim\n"
    for args in (("--next",), ("--next", "--token", "1"), ("--owner", "cli:w")):
        code, out, err = ondeck("task", "done", str(first["id"]), *args)
        assert (code, out) == (2, "")
        assert len(err.strip().splitlines()) == 1, err
