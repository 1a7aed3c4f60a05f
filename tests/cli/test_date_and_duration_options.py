"""Every CLI option that takes a date or a lease length refuses what it cannot carry.

The options are found by walking the Typer application (a date option says `YYYY-MM-DD` in
its help, a lease length `15m`), so an option added later is held to the same rules. Typer
vendors click, so parameters are told apart by `param_type_name`. Each refusal is exit 2,
one line naming what was wrong, and nothing written.
"""

from __future__ import annotations

from typing import Any

import pytest
import typer.main
from sqlalchemy import Engine, func, select

from ondeck.db.tables import events, notes, schedules, tasks
from ondeck.entrypoints.cli import run
from ondeck.entrypoints.cli.app import app
from support.bad_inputs import BAD_DATES, BAD_DURATIONS, EDGE_DATES, edge_refusal
from support.walks import cli_commands

# Values for the arguments and options a command needs before it reads the one under test.
SAMPLES = {
    "title": "x",
    "rule": "weekly:MON",
    "owner": "cli:x",
    "token": "1",
    "task_id": "1",
    "schedule_id": "1",
    "note_id": "1",
}
# `task done --for` only applies with --next, which needs the holder's token and owner.
EXTRA = {("task", "done"): ["--next", "--token", "1", "--owner", "cli:x"]}


def _options(kind: str) -> list[tuple[tuple[str, ...], Any, Any]]:
    found = []
    for path, command in cli_commands(typer.main.get_command(app)):
        for param in command.params:
            help_text = getattr(param, "help", None) or ""
            is_date = "YYYY-MM-DD" in help_text
            is_duration = "15m" in help_text
            is_option = param.param_type_name == "option"
            if is_option and (is_date if kind == "date" else is_duration):
                found.append((path, command, param))
    return found


DATE_OPTIONS = _options("date")
DURATION_OPTIONS = _options("duration")


def _ids(options: list) -> list[str]:
    return [" ".join(path) + " " + param.opts[0] for path, _, param in options]


def test_the_walk_finds_the_options_we_know() -> None:
    """Not vacuous: the known date and lease options are among those found."""
    assert {
        "task add --due",
        "task edit --due",
        "task list --due-before",
        "schedule add --start",
        "schedule edit --start",
        "rule check --start",
        "note add --expires",
        "note edit --expires",
    } <= set(_ids(DATE_OPTIONS))
    assert {"task claim --for", "task renew --for", "task done --for"} <= set(
        _ids(DURATION_OPTIONS)
    )


def _args(path: tuple[str, ...], command: Any, option: Any, value: str):
    args = [*path]
    for param in command.params:
        if param is option or not param.required:
            continue
        name = param.name or ""
        sample = SAMPLES.get(name, "x")
        args += [sample] if param.param_type_name == "argument" else [param.opts[0], sample]
    return [*args, *EXTRA.get(path, []), option.opts[0], value]


def _counts(engine: Engine) -> tuple[int, ...]:
    with engine.connect() as conn:
        return tuple(
            conn.execute(select(func.count()).select_from(table)).scalar_one()
            for table in (events, tasks, schedules, notes)
        )


@pytest.fixture
def seeded(db_url: str, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Engine:
    """Task 1 (RUNNING, token 1, held by cli:x), task 2 (READY), schedule 1 and note 1 exist, so a
    command that names them gets as far as reading the option under test."""
    monkeypatch.setenv("ONDECK_TZ", "Asia/Seoul")
    for args in (
        ["task", "add", "held"],
        ["task", "add", "ready"],
        ["task", "claim", "1", "--owner", "cli:x"],
        ["schedule", "add", "weekly", "--rule", "weekly:MON"],
        ["note", "add", "kept"],
    ):
        assert run(["--db", db_url, *args]) == 0
    return engine


@pytest.mark.parametrize(("path", "command", "option"), DATE_OPTIONS, ids=_ids(DATE_OPTIONS))
def test_every_date_option_refuses_dates_it_cannot_carry(
    path, command, option, seeded: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    before = _counts(seeded)
    for value, expected in BAD_DATES:
        assert run(["--db", db_url, *_args(path, command, option, value)]) == 2, value
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and expected in err, (value, err)
    assert _counts(seeded) == before, "a refused date writes nothing"


@pytest.mark.parametrize(("path", "command", "option"), DATE_OPTIONS, ids=_ids(DATE_OPTIONS))
def test_every_date_option_takes_the_edges_of_the_range(
    path, command, option, seeded: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for value in EDGE_DATES:
        code = run(["--db", db_url, *_args(path, command, option, value)])
        refusal = edge_refusal(option.opts[0], value)
        if refusal is not None:
            err = capsys.readouterr().err
            assert code == 2 and refusal in err and err.count("\n") == 1, err
            continue
        assert code == 0, (value, capsys.readouterr().err)


@pytest.mark.parametrize(
    ("path", "command", "option"), DURATION_OPTIONS, ids=_ids(DURATION_OPTIONS)
)
def test_every_lease_length_option_refuses_what_a_lease_cannot_be(
    path, command, option, seeded: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    before = _counts(seeded)
    for value, expected in BAD_DURATIONS:
        assert run(["--db", db_url, *_args(path, command, option, value)]) == 2, value
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and expected in err, (value, err)
    assert _counts(seeded) == before, "a refused lease length writes nothing"
