"""Every CLI option and argument that writes a text stores it scrubbed.

The commands that write are walked in the Typer application: every parameter of theirs is
either a text given a secret here (and the database is then read back, every table and
column, with raw SQL) or named as not text, so a text option added later fails this test
until it is walked. A refusal (exit 2) stores nothing, which passes too.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable

import typer.main
from sqlalchemy import Engine

from ondeck.entrypoints.cli import run
from ondeck.entrypoints.cli.app import app
from support.scrub_walk import assert_scrubbed, markers, text_for, token
from support.walks import cli_commands

# Parameters that take no free text: ids, numbers, flags, dates, lengths, fixed choices, and
# `rule` (a rule the parser accepts, or a refusal).
NOT_TEXT = {
    "task_id", "schedule_id", "note_id", "as_json", "due", "no_due", "no_project", "priority",
    "token", "lease_for", "claim_next", "force", "kind", "start", "missed", "whole_side",
    "pin", "expires", "unclassified", "yes", "scope", "rule", "ref",
}  # fmt: skip
WRITES = {
    ("task", "add"), ("task", "edit"), ("task", "claim"), ("task", "done"), ("task", "cancel"),
    ("schedule", "add"), ("schedule", "edit"), ("note", "add"), ("note", "edit"),
    ("note", "supersede"), ("note", "wrong"), ("handoff",), ("session", "move"),
    ("token", "create"),
}  # fmt: skip


def cli(db_url: str, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = run(["--db", db_url, *args])
    return code, out.getvalue()


def _new_task(db_url: str) -> int:
    code, out = cli(db_url, "task", "add", "plain", "--json")
    assert code == 0, out
    return int(json.loads(out)["id"])


def _claimed(db_url: str) -> tuple[int, int]:
    task = _new_task(db_url)
    code, out = cli(db_url, "task", "claim", str(task), "--owner", "cli:w", "--json")
    assert code == 0, out
    return task, int(json.loads(out)["lease_token"])


def _schedule(db_url: str) -> str:
    code, out = cli(db_url, "schedule", "add", "plain", "--rule", "weekly:MON", "--json")
    assert code == 0, out
    return str(json.loads(out)["id"])


def _note(db_url: str) -> str:
    code, out = cli(db_url, "note", "add", "plain", "--json")
    assert code == 0, out
    return str(json.loads(out)["id"])


Argv = Callable[[str, str], list[str]]


def _inputs() -> dict[tuple[tuple[str, ...], str], Argv]:
    """(command, parameter) → the argv that gives that parameter the text."""

    def task_done_note(db: str, t: str) -> list[str]:
        task, lease = _claimed(db)
        return ["task", "done", str(task), "--token", str(lease), "--note", t]

    def task_done_owner(db: str, t: str) -> list[str]:
        task, lease = _claimed(db)
        _new_task(db)
        return ["task", "done", str(task), "--token", str(lease), "--next", "--owner", t]

    return {
        (("task", "add"), "title"): lambda db, t: ["task", "add", t],
        (("task", "add"), "body"): lambda db, t: ["task", "add", "x", "--body", t],
        (("task", "add"), "project"): lambda db, t: ["task", "add", "x", "--project", token(t)],
        (("task", "edit"), "title"): lambda db, t: [
            "task",
            "edit",
            str(_new_task(db)),
            "--title",
            t,
        ],
        (("task", "edit"), "body"): lambda db, t: ["task", "edit", str(_new_task(db)), "--body", t],
        (("task", "edit"), "project"): lambda db, t: [
            "task",
            "edit",
            str(_new_task(db)),
            "--project",
            token(t),
        ],
        (("task", "claim"), "owner"): lambda db, t: [
            "task",
            "claim",
            str(_new_task(db)),
            "--owner",
            t,
        ],
        (("task", "claim"), "project"): lambda db, t: [
            "task",
            "claim",
            "--owner",
            "cli:w",
            "--project",
            token(t),
        ],
        (("task", "done"), "note"): task_done_note,
        (("task", "done"), "owner"): task_done_owner,
        (("task", "done"), "project"): lambda db, t: [
            *task_done_owner(db, "cli:w"),
            "--project",
            token(t),
        ],
        (("task", "cancel"), "note"): lambda db, t: [
            "task",
            "cancel",
            str(_new_task(db)),
            "--note",
            t,
        ],
        (("schedule", "add"), "title"): lambda db, t: ["schedule", "add", t, "--rule", "daily"],
        (("schedule", "add"), "body"): lambda db, t: [
            "schedule",
            "add",
            "x",
            "--rule",
            "daily",
            "--body",
            t,
        ],
        (("schedule", "add"), "project"): lambda db, t: [
            "schedule",
            "add",
            "x",
            "--rule",
            "daily",
            "--project",
            token(t),
        ],
        (("schedule", "edit"), "title"): lambda db, t: [
            "schedule",
            "edit",
            _schedule(db),
            "--title",
            t,
        ],
        (("schedule", "edit"), "body"): lambda db, t: [
            "schedule",
            "edit",
            _schedule(db),
            "--body",
            t,
        ],
        (("schedule", "edit"), "project"): lambda db, t: [
            "schedule",
            "edit",
            _schedule(db),
            "--project",
            token(t),
        ],
        (("note", "add"), "text"): lambda db, t: ["note", "add", t],
        (("note", "add"), "project"): lambda db, t: ["note", "add", "x", "--project", token(t)],
        (("note", "add"), "side"): lambda db, t: ["note", "add", "x", "--side", token(t)],
        (("note", "add"), "session"): lambda db, t: ["note", "add", "x", "--session", t],
        (("note", "edit"), "text"): lambda db, t: ["note", "edit", _note(db), "--text", t],
        (("note", "edit"), "project"): lambda db, t: [
            "note",
            "edit",
            _note(db),
            "--project",
            token(t),
        ],
        (("note", "edit"), "to_side"): lambda db, t: [
            "note",
            "edit",
            _note(db),
            "--to-side",
            token(t),
        ],
        (("note", "edit"), "side"): lambda db, t: ["note", "edit", _note(db), "--side", token(t)],
        (("note", "supersede"), "text"): lambda db, t: ["note", "supersede", _note(db), t],
        (("note", "supersede"), "session"): lambda db, t: [
            "note",
            "supersede",
            _note(db),
            "x",
            "--session",
            t,
        ],
        (("note", "supersede"), "side"): lambda db, t: [
            "note",
            "supersede",
            _note(db),
            "x",
            "--side",
            token(t),
        ],
        (("note", "wrong"), "reason"): lambda db, t: ["note", "wrong", _note(db), "--reason", t],
        (("note", "wrong"), "side"): lambda db, t: ["note", "wrong", _note(db), "--side", token(t)],
        (("handoff",), "text"): lambda db, t: ["handoff", t, "--session", "nobody"],
        (("handoff",), "session"): lambda db, t: ["handoff", "x", "--session", t],
        (("session", "move"), "side"): lambda db, t: ["session", "move", "1", "--side", token(t)],
        (("session", "move"), "project"): lambda db, t: [
            "session",
            "move",
            "1",
            "--project",
            token(t),
        ],
        (("token", "create"), "name"): lambda db, t: ["token", "create", token(t)],
        # A side is a configured name: a secret in its place is refused (no side holds it).
        (("task", "add"), "side"): lambda db, t: ["task", "add", "x", "--side", token(t)],
        (("task", "edit"), "side"): lambda db, t: ["task", "edit", "1", "--side", token(t)],
        (("task", "claim"), "side"): lambda db, t: ["task", "claim", "--side", token(t)],
        (("schedule", "add"), "side"): lambda db, t: [
            "schedule",
            "add",
            "x",
            "--rule",
            "daily",
            "--side",
            token(t),
        ],
        (("token", "create"), "side"): lambda db, t: ["token", "create", "n", "--side", token(t)],
    }


INPUTS = _inputs()


def test_the_walk_covers_every_text_parameter_of_every_write() -> None:
    commands = dict(cli_commands(typer.main.get_command(app)))
    assert set(commands) >= WRITES
    texts = {
        (path, param.name)
        for path in WRITES
        for param in commands[path].params
        if param.name not in NOT_TEXT
    }
    assert texts == set(INPUTS), texts ^ set(INPUTS)


def test_every_text_a_command_writes_is_stored_scrubbed(db_url: str, engine: Engine) -> None:
    before = markers(engine)
    accepted = 0
    for (path, param), argv in INPUTS.items():
        name = f"cli {' '.join(path)} --{param}"
        code, out = cli(db_url, *argv(db_url, text_for(name)))
        assert code in (0, 2, 3, 4), (name, code, out)
        accepted += code == 0
        before = assert_scrubbed(engine, name, before, accepted=False)
    # Not vacuous: the texts most commands take were written (scrubbed).
    assert accepted >= 15, accepted
