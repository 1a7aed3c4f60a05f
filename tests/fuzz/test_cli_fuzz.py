"""Hypothesis-made arguments for `schedule add`, `task add` and `rule check`: the exit code is
0, 2, 3 or 4, and a failure is exactly one line on stderr, never a traceback.

In-process (`ondeck.entrypoints.cli.run` with capsys) for the generated cases, over SQLite: the
command-line layer (Typer parsing, the error mapping, the printing) is the same whichever
store is behind it. A few real processes check what only they can: arguments that are not
valid UTF-8 (Python hands them over as lone surrogates) and the real stdout encoding.
`ONDECK_FUZZ_CLI_EXAMPLES` sets the cases per command (default 200).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ondeck.entrypoints.cli import run

EXAMPLES = int(os.environ.get("ONDECK_FUZZ_CLI_EXAMPLES", "200"))
ALLOWED = {0, 2, 3, 4}
EXITS: Counter[tuple[str, int]] = Counter()  # printed by the last test, for the report
ONDECK = Path(sys.executable).with_name("ondeck")

# Any text, plus the kinds of values that reach corners: option-like words, surrogates
# (undecodable argv bytes), controls and NUL, digits Python's isdigit takes but int() does
# not, huge numbers, dates that almost parse, and near-misses of the real grammar.
junk = st.sampled_from(
    [
        "",
        " ",
        "-",
        "--",
        "--json",
        "--help-me",
        "\x00",
        "a\nb",
        "\udcff",
        "²",
        "١٢",
        "9" * 30,
        "-1",
        "0",
        "10",
        "2026-02-30",
        "2026-06-15",
        "0001-01-01",
        "9999-12-31",
        "daily",
        "weekly:MON,THU",
        "monthly:1,15,last",
        "monthly:31",
        "every:0",
        "every:99999999999999999999",
        "0 9 * * 1",
        "weekly:",
        "monthly:last,last",
        "'; DROP TABLE tasks; --",
        "ops.site_1-a",
        "a" * 600,
    ]
)
words = st.one_of(junk, st.text(max_size=40), st.text(alphabet="0123456789-:,", max_size=12))


def _mostly(good: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Usually a good value (so the success paths run too), sometimes anything."""
    return st.one_of(good, good, good, words)


rules = _mostly(
    st.one_of(
        st.sampled_from(["daily", "weekly:MON,THU", "weekly: fri", "monthly:1,15,last"]),
        st.integers(1, 400).map(lambda n: f"every:{n}"),
    )
)
days = _mostly(st.dates().map(lambda d: d.isoformat()))
VALUES: dict[str, st.SearchStrategy[str]] = {
    "--body": st.one_of(st.text(max_size=200), words),
    "--due": days,
    "--start": days,
    "--priority": _mostly(st.integers(0, 9).map(str)),
    "--project": _mostly(st.from_regex(r"[A-Za-z0-9._-]{1,64}", fullmatch=True)),
    "--kind": _mostly(st.sampled_from(["task", "remind", "backup"])),
    "--missed": _mostly(st.sampled_from(["latest", "all", "skip"])),
    "--count": _mostly(st.integers(1, 100).map(str)),
}
titles = _mostly(st.text(st.characters(exclude_categories=["Cc", "Cs"]), min_size=1, max_size=60))


def _options(names: list[str]) -> st.SearchStrategy[list[str]]:
    """Some of these options, each with a value, in any order."""
    pair = st.sampled_from(names).flatmap(lambda n: VALUES[n].map(lambda v: [n, v]))
    return st.lists(pair, max_size=4).map(lambda pairs: [w for p in pairs for w in p])


COMMANDS = {
    "task add": st.tuples(
        titles, _options(["--body", "--due", "--priority", "--project"]), st.booleans()
    ).map(lambda t: ["task", "add", t[0], *t[1], *(["--json"] if t[2] else [])]),
    "schedule add": st.tuples(
        titles,
        rules,
        _options(["--kind", "--body", "--start", "--project", "--priority", "--missed"]),
        st.booleans(),
    ).map(
        lambda t: ["schedule", "add", t[0], "--rule", t[1], *t[2], *(["--json"] if t[3] else [])]
    ),
    "rule check": st.tuples(rules, _options(["--start", "--count"]), st.booleans()).map(
        lambda t: ["rule", "check", t[0], *t[1], *(["--json"] if t[2] else [])]
    ),
}


def assert_clean_exit(code: int, out: str, err: str, args: list[str]) -> None:
    assert code in ALLOWED, (args, code, err)
    assert "Traceback" not in err and "Traceback" not in out, (args, err)
    if code != 0:
        assert err.endswith("\n") and err.count("\n") == 1, (args, err)
        assert err.startswith("ondeck: error: "), (args, err)


@pytest.fixture(scope="module")
def db_path(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli-fuzz") / "ondeck.db"
    shutil.copyfile(sqlite_template, path)
    return path


@pytest.fixture
def in_process(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[object]:
    monkeypatch.setenv("ONDECK_TZ", "UTC")
    monkeypatch.setenv("ONDECK_DATABASE_URL", f"sqlite:///{db_path}")

    def call(args: list[str]) -> tuple[int, str, str]:
        capsys.readouterr()
        code = run(args)
        out, err = capsys.readouterr()
        return code, out, err

    yield call


@pytest.mark.parametrize("command", list(COMMANDS))
def test_generated_arguments_exit_cleanly(in_process, command: str) -> None:  # type: ignore[no-untyped-def]
    @given(args=COMMANDS[command])
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(args: list[str]) -> None:
        code, out, err = in_process(args)
        EXITS[command, code] += 1
        assert_clean_exit(code, out, err, args)

    check()
    assert any(name == command for name, _ in EXITS)


REAL = [
    ["task", "add", "ok from a shell", "--priority", "1", "--json"],
    ["task", "add", b"\xff\xfe title".decode("utf-8", "surrogateescape")],
    ["task", "add", "t", "--project", b"p\xff".decode("utf-8", "surrogateescape")],
    ["task", "add", "t", "--priority", "²"],
    ["task", "add", "t", "--due", "2026-13-01"],
    ["schedule", "add", "s", "--rule", b"daily\xff".decode("utf-8", "surrogateescape")],
    ["schedule", "add", "s", "--rule", "monthly:31"],
    ["schedule", "add", "s", "--rule", "daily", "--kind", "cron"],
    ["rule", "check", "0 9 * * 1"],
    ["rule", "check", b"weekly:\xffMON".decode("utf-8", "surrogateescape")],
    ["rule", "check", "daily", "--count", "99999999999999999999999"],
    ["rule", "check", "every:3", "--start", "2026-06-01", "--json"],
]


@pytest.mark.parametrize("args", REAL, ids=range(len(REAL)))
def test_a_real_process_exits_cleanly(db_path: Path, tmp_path: Path, args: list[str]) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ONDECK_")},
        "ONDECK_DATABASE_URL": f"sqlite:///{db_path}",
        "ONDECK_TZ": "UTC",
        "ONDECK_CONFIG": str(tmp_path / "none.toml"),
    }
    argv = [os.fsencode(a) for a in [str(ONDECK), *args]]  # undecodable bytes go out as bytes
    done = subprocess.run(argv, capture_output=True, env=env, timeout=60, check=False)
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace")
    assert_clean_exit(done.returncode, out, err, args)


def test_it_ran_every_command() -> None:
    """The exit codes seen, for the report (`pytest -s`); runs after the fuzz (file order)."""
    print(f"\ncli fuzz: {sum(EXITS.values())} runs, exit codes {dict(sorted(EXITS.items()))}")
    if not EXITS:
        pytest.skip("the fuzz cases were deselected in this run")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("under xdist each worker counts its own share: run without -n for the figure")
    assert {command for command, _ in EXITS} == set(COMMANDS)
