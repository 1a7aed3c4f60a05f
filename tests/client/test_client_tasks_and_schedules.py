"""Client mode: `ondeck task …`, `ondeck schedule …` and `ondeck rule check` on a
machine with only ONDECK_SERVER_URL and a device token print what the same commands print
on the server's machine, exit with the same codes, and import no database library."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.machines import Machine, Server

# What differs between two runs of the same commands: ids, instants, lease tokens, and the
# lease's wording relative to "now" (checked on its own below).
VARYING = {
    "id",
    "deleted",
    "created_at",
    "updated_at",
    "done_at",
    "lease_until",
    "releases_at",
    "last_fired_at",
    "lease_token",
    "summary",
    "brief",
}


def _steady(found: Any, varying: frozenset[str] = frozenset()) -> Any:
    """`found` without what differs between two runs (and the names in `varying`)."""
    if isinstance(found, dict):
        return {k: _steady(v, varying) for k, v in found.items() if k not in VARYING | varying}
    if isinstance(found, list):
        return [_steady(v, varying) for v in found]
    return found


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    with Server.start(tmp_path_factory.mktemp("server")) as running:
        yield running


@pytest.fixture(scope="module")
def laptop(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Machine:
    return server.client(tmp_path_factory.mktemp("laptop"), server.token("laptop"))


def _recorder(machine: Machine, group: str) -> tuple[list[Any], Callable[..., Any]]:
    """Steps of `ondeck GROUP …` run on `machine`, each one's --json kept in order."""
    steps: list[Any] = []

    def step(*args: str) -> Any:
        steps.append(machine.json(group, *args, "--json"))
        return steps[-1]

    return steps, step


def _task_steps(machine: Machine, project: str) -> list[Any]:
    """A task's whole life, each step's --json."""
    steps, step = _recorder(machine, "task")

    task = step("add", "배포 준비", "--due", "2026-12-24", "--priority", "1", "--project", project)
    tid = str(task["id"])
    step("edit", tid, "--title", "배포 준비 (수정)", "--body", "본문", "--no-due")
    held = step("claim", tid, "--owner", "cli:민수", "--for", "2h")
    token = str(held["lease_token"])
    step("renew", tid, "--token", token, "--for", "3h")
    step("release", tid, "--token", token)
    held = step("claim", "--owner", "cli:민수", "--project", project)
    step("done", tid, "--token", str(held["lease_token"]), "--note", "끝")
    other = step("add", "취소할 일", "--project", project)
    step("cancel", str(other["id"]), "--note", "필요 없음")
    third = step("add", "다음 일", "--project", project)
    again = step("add", "그다음 일", "--project", project)
    held = step("claim", str(third["id"]), "--owner", "cli:민수")
    args = ("--token", str(held["lease_token"]), "--next", "--owner", "cli:민수")
    step("done", str(third["id"]), *args, "--project", project)
    step("release", str(again["id"]), "--force")
    return steps


def test_task_commands_answer_as_on_the_server(server: Server, laptop: Machine) -> None:
    there = _task_steps(server, "server-side")
    here = _task_steps(laptop, "laptop-side")
    # Each machine works in a project of its own (claiming "the next" must find its own).
    apart = frozenset({"project"})
    for mine, theirs in zip(here, there, strict=True):
        assert _steady(mine, apart) == _steady(theirs, apart)
    # The same task read from either machine: the same JSON and the same human lines.
    tid = str(here[0]["id"])
    for args in (
        ("task", "show", tid, "--json"),
        ("task", "show", tid),
        ("task", "list", "--status", "all", "--project", "laptop-side", "--json"),
        ("task", "list", "--status", "all", "--project", "laptop-side"),
        ("task", "list", "--status", "DONE"),
    ):
        mine_done, theirs_done = laptop.ondeck(*args), server.ondeck(*args)
        assert mine_done.returncode == theirs_done.returncode == 0, mine_done.stderr
        assert mine_done.stdout == theirs_done.stdout, args
    shown = laptop.json("task", "show", tid, "--json")
    assert {e["actor"] for e in shown["events"]} == {"api:laptop"}
    assert shown["task"]["title"] == "배포 준비 (수정)"
    assert not list(laptop.home.rglob("*.db")), "no database on the client"


def test_a_running_task_reads_alike_with_its_token(server: Server, laptop: Machine) -> None:
    task = laptop.json("task", "add", "리스 확인", "--project", "lease-read", "--json")
    claimed = laptop.ondeck("task", "claim", str(task["id"]), "--owner", "cli:민수")
    assert claimed.returncode == 0, claimed.stderr
    token = laptop.json("task", "show", str(task["id"]), "--json")["task"]["lease_token"]
    assert f"token {token}" in claimed.stdout and "claimed task" in claimed.stdout
    for args in (("task", "show", str(task["id"])), ("task", "list", "--project", "lease-read")):
        mine, theirs = laptop.ondeck(*args), server.ondeck(*args)
        assert mine.stdout == theirs.stdout, args
        assert "cli:민수" in mine.stdout
    done = laptop.ondeck("task", "done", str(task["id"]), "--token", str(token))
    assert done.returncode == 0 and done.stdout == f"task {task['id']} done: 리스 확인\n"


def _schedule_steps(machine: Machine, project: str) -> list[Any]:
    steps, step = _recorder(machine, "schedule")
    made = step(
        "add",
        "주간 회의",
        "--rule",
        "weekly:MON,THU",
        "--start",
        "2030-01-01",
        "--project",
        project,
        "--missed",
        "skip",
    )
    sid = str(made["id"])
    step("edit", sid, "--title", "주간 회의 (변경)", "--rule", "monthly:1,last")
    step("pause", sid)
    step("resume", sid)
    step("edit", sid, "--start", "2031-02-03", "--project", "")
    step("rm", sid)
    return steps


def test_schedule_commands_answer_as_on_the_server(server: Server, laptop: Machine) -> None:
    here = _schedule_steps(laptop, "laptop-side")
    there = _schedule_steps(server, "server-side")
    apart = frozenset({"project"})
    assert [_steady(x, apart) for x in here] == [_steady(x, apart) for x in there]
    assert here[-1] == {"deleted": here[0]["id"]}
    # One schedule read from either machine: the same JSON and the same lines.
    made = laptop.json("schedule", "add", "월말 정산", "--rule", "monthly:last", "--json")
    sid = str(made["id"])
    for args in (
        ("schedule", "show", sid, "--json"),
        ("schedule", "show", sid),
        ("schedule", "list", "--json"),
        ("schedule", "list"),
    ):
        mine, theirs = laptop.ondeck(*args), server.ondeck(*args)
        assert mine.returncode == theirs.returncode == 0, mine.stderr
        assert mine.stdout == theirs.stdout, args
    # "now" with its note (the jobs loop of the server fires it; the note says when).
    pulled = laptop.json("schedule", "now", sid, "--json")
    assert pulled["note"] and pulled["next_due"] is not None
    line = laptop.ondeck("schedule", "now", sid)
    assert line.returncode == 0 and line.stdout.startswith(f"schedule {sid} (next due ")
    removed = laptop.ondeck("schedule", "rm", sid)
    assert removed.stdout == f"removed schedule {sid}: 월말 정산\n"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("task", "show", "987654"), 4),
        (("task", "done", "987654", "--token", "1"), 4),
        (("schedule", "show", "987654"), 4),
        (("schedule", "rm", "987654"), 4),
        (("task", "add", "x", "--priority", "12"), 2),
        (("task", "add", "   "), 2),
        (("task", "claim", "--owner", "cli:x", "--for", "9d"), 2),
        (("task", "list", "--status", "LATER"), 2),
        (("schedule", "add", "x", "--rule", "weekly:FUNDAY"), 2),
        (("schedule", "add", "x", "--rule", "daily", "--kind", "often"), 2),
        (("schedule", "list", "--kind", "often"), 2),
    ],
)
def test_refusals_exit_as_on_the_server(
    server: Server, laptop: Machine, args: tuple[str, ...], code: int
) -> None:
    for machine in (laptop, server):
        done = machine.ondeck(*args)
        assert done.returncode == code, (machine is laptop, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr


def test_claiming_a_running_task_is_a_conflict(server: Server, laptop: Machine) -> None:
    task = laptop.json("task", "add", "한 번만", "--json")
    tid = str(task["id"])
    assert laptop.ondeck("task", "claim", tid, "--owner", "cli:a").returncode == 0
    for machine in (laptop, server):
        done = machine.ondeck("task", "claim", tid, "--owner", "cli:b")
        assert done.returncode == 3, done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
        wrong = machine.ondeck("task", "done", tid, "--token", "0")
        assert wrong.returncode == 3, wrong.stderr


def test_a_read_token_reads_and_cannot_write(server: Server, tmp_path: Path) -> None:
    reader = server.client(tmp_path / "tablet", server.token("tablet", "read"))
    assert reader.ondeck("task", "list").returncode == 0
    assert reader.ondeck("schedule", "list", "--json").returncode == 0
    for args in (("task", "add", "쓰기 시도"), ("schedule", "add", "x", "--rule", "daily")):
        done = reader.ondeck(*args)
        assert done.returncode == 6, done.stderr
        assert done.stderr.count("\n") == 1 and "may only read" in done.stderr, done.stderr
        assert "tablet" in done.stderr


def test_a_revoked_token_is_refused_at_once(server: Server, tmp_path: Path) -> None:
    phone = server.client(tmp_path / "phone", server.token("phone"))
    assert phone.ondeck("task", "list").returncode == 0
    assert server.ondeck("token", "revoke", "phone").returncode == 0
    done = phone.ondeck("task", "list")
    assert done.returncode == 6, done.stderr
    assert done.stderr.count("\n") == 1 and server.url in done.stderr
    assert "token 'phone' is revoked" in done.stderr, "the line names the token"


def test_rule_check_needs_no_server(tmp_path: Path, server: Server) -> None:
    """It parses a rule and lists dates: no database, so in client mode it stays local."""
    from support.machines import home_env
    from support.pg import free_port

    away = Machine(tmp_path, home_env(tmp_path, server_url=f"http://127.0.0.1:{free_port()}"))
    args = ("rule", "check", "weekly:MON,THU", "--start", "2030-01-01", "--count", "3")
    for extra in ((), ("--json",)):
        mine, theirs = away.ondeck(*args, *extra), server.ondeck(*args, *extra)
        assert mine.returncode == 0, mine.stderr
        assert mine.stdout == theirs.stdout
    bad = away.ondeck("rule", "check", "weekly:FUNDAY")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "args",
    [
        ("task", "list"),
        ("task", "show", "{own}", "--json"),
        ("schedule", "list"),
        ("rule", "check", "daily"),
    ],
)
def test_the_client_imports_no_database_library(laptop: Machine, args: tuple[str, ...]) -> None:
    if "{own}" in args:  # a task of its own: the module's server holds others' in any order
        made = laptop.json("task", "add", "가져오기 확인 import check", "--json")
        args = tuple(str(made["id"]) if a == "{own}" else a for a in args)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ondeck", *args],
        env=laptop.env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=laptop.home,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    for name in ("sqlalchemy", "psycopg", "sqlite3", "_sqlite3", "alembic"):
        assert not {m for m in imported if m == name or m.startswith(name + ".")}, name
