"""The terminal shows stored text, never obeys it.

Whatever a title, a note, a session's last word or a commit subject holds (an OSC 52 write to
the clipboard, a window title, a screen clear, a one-byte C1 CSI, a carriage return that hides
what came before, a bidirectional override, rich's own markup), every command that prints it
shows those characters written out. The text is put straight into the database, as an older
ondeck, an import or another client may have stored it: what is checked is the printing,
whatever the input rules let in.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from sqlalchemy import Engine, String, Text, func, update

from conftest import NOW
from ondeck.core.terminal import json_visible, visible
from ondeck.db import tables
from ondeck.entrypoints.cli import run
from ondeck.sessions.intake import apply_record
from support.hooks import SESSION_ID, later, record

MARK = "MARKTEXT"
HOSTILE = (
    "배포 [red]RED[/red] \u202eevil\u202c \x1b]52;c;cHduZWQ=\x07 \x1b]0;pwned\x07 \x1b[2J"
    " \x9b31m [link=https://example.invalid]x[/link] a\rb 비밀"
)
# What no output may hold raw: every control but line break and tab, C1, bidi controls.
RAW = {chr(c) for c in range(0x20) if c not in (9, 10)} | {chr(c) for c in range(0x7F, 0xA0)}
RAW |= {"\u202e", "\u202c"}


def _plant(engine: Engine) -> int:
    """Write HOSTILE into every text column of every row that holds MARK; how many were."""
    planted = 0
    with engine.begin() as conn:
        for table in tables.metadata.sorted_tables:
            for column in table.columns:
                kind = getattr(column.type, "impl_instance", column.type)  # ScrubbedText
                if not isinstance(kind, String | Text) or column.primary_key:
                    continue
                planted += conn.execute(
                    update(table)
                    .where(column.contains(MARK))
                    .values({column.name: func.replace(column, MARK, HOSTILE)})
                ).rowcount
    return planted


@pytest.fixture
def planted(engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]) -> str:
    def ok(*args: str) -> None:
        assert run(["--db", db_url, *args]) == 0, capsys.readouterr().err
        capsys.readouterr()

    ok("task", "add", f"task {MARK}", "--body", f"body {MARK}", "--project", "site")
    ok("schedule", "add", f"schedule {MARK}", "--rule", "daily", "--body", f"sb {MARK}")
    ok("note", "add", f"note {MARK} 배포", "--pin")
    with engine.begin() as conn:
        for rec in (
            record("start", NOW),
            record("stop", later(NOW, minutes=1), last_assistant_message=f"last {MARK}"),
        ):
            apply_record(conn, rec["at"], rec)
    assert _plant(engine) >= 5
    return db_url


COMMANDS = [
    ["task", "list"],
    ["task", "show", "1"],
    ["schedule", "list"],
    ["schedule", "show", "1"],
    ["note", "list"],
    ["note", "show", "1"],
    ["recall", "배포"],
    ["session", "list"],
    ["session", "show", SESSION_ID[:8]],
    ["context"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_every_command_shows_control_characters_and_markup_as_text(
    planted: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # rich folds narrow cells; one line keeps it readable
    assert run(["--db", planted, *args]) == 0
    out, err = capsys.readouterr()
    assert not RAW & set(out + err), sorted(RAW & set(out + err))
    # Lists cut a long text at their column's width: what comes first is always there.
    assert "배포 [red]RED[/red] \\u202eevil\\u202c \\x1b]5" in out  # markup shown, not applied
    if args == ["context"] or args[1] in ("show", "배포"):
        assert "\\x1b]52;c;cHduZWQ=\\x07 \\x1b]0;pwned\\x07 \\x1b[2J \\x9b31m" in out


@pytest.mark.parametrize("args", COMMANDS[:-1], ids=lambda a: " ".join(a[:2]))
def test_json_keeps_the_same_strings_with_nothing_raw(
    planted: str, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    assert run(["--db", planted, *args, "--json"]) == 0
    out = capsys.readouterr().out
    assert not RAW & set(out)
    whole = HOSTILE if args[0] != "recall" else HOSTILE[:20]  # recall gives snippets
    assert any(whole in text for text in _strings(json.loads(out)))


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_an_error_line_shows_what_it_quotes(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["--db", db_url, "task", "show", "\x1b]0;x\x07"]) == 2
    err = capsys.readouterr().err
    assert not RAW & set(err) and err.count("\n") == 1


def test_visible_and_json_visible() -> None:
    assert visible("a\tb\nc\r\nd") == "a\tb\nc\nd"
    assert visible("\x1b[2J\x00\x7f\x9b\u202e") == "\\x1b[2J\\x00\\x7f\\x9b\\u202e"
    document = json.dumps({"t": "\x9b\u2066x\x7f"}, ensure_ascii=False)
    assert json.loads(json_visible(document)) == {"t": "\x9b\u2066x\x7f"}
    assert not RAW & set(json_visible(document))


def test_no_command_prints_around_the_helpers() -> None:
    """Every CLI module prints through cli/common.py's echo, print_table, print_json and
    write_json_lines, so a new command cannot forget to show text as text."""
    cli = Path(__file__).parents[2] / "src" / "ondeck" / "entrypoints" / "cli"
    found = []
    for path in sorted(cli.glob("*.py")):
        if path.name in ("common.py", "__init__.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            if name in ("print", "typer.echo", "sys.stdout.write", "sys.stderr.write") or (
                name.endswith(".print") and "Console" in ast.unparse(node)
            ):
                found.append(f"{path.name}:{node.lineno} {name}")
    assert not found, found
