"""`ondeck setup claude-code [--undo]` on a fake home, with a stand-in for `claude` (a real
subprocess given with `--claude PATH`: it logs each call, and fails on the subcommands
FAKE_CLAUDE_FAIL names).

    the session-end budget   setup writes CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS in the
                             settings' `env` and says so; `--undo` takes out exactly that,
                             and only while it holds setup's value; a person's value is left
                             alone at setup and at undo
    a step that fails        setup takes back what it had done and says so in one line
                             (exit 2, no traceback), so it can simply run again; when taking
                             back fails too, the state file keeps what is left and `--undo`
                             removes it
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ondeck.entrypoints.hooks.claude_setup import END_BUDGET_ENV, END_BUDGET_MS, STATE_NAME
from support.hooks import ONDECK

FAKE_CLAUDE = f"""#!{sys.executable}
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["FAKE_CLAUDE_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
said = " ".join(args)
for failing in filter(None, os.environ.get("FAKE_CLAUDE_FAIL", "").split(",")):
    if said.startswith(failing):
        print(f"boom: {{failing}}", file=sys.stderr)
        sys.exit(1)
if args == ["--version"]:
    print(os.environ.get("FAKE_CLAUDE_VERSION", "2.1.332") + " (Claude Code)")
elif args[:2] in (["plugin", "install"], ["plugin", "uninstall"]):
    # as Claude Code does: the plugin's switch in the user settings
    # (where the settings cannot be written, it keeps the switch to itself)
    path = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    if path.parent.is_dir():
        data = json.loads(path.read_text()) if path.exists() else {{}}
        enabled = data.setdefault("enabledPlugins", {{}})
        if args[1] == "install":
            enabled[args[2]] = True
        else:
            enabled.pop(args[2], None)
        path.write_text(json.dumps(data))
"""
BEFORE = {"theme": "dark", "permissions": {"allow": ["Bash(ls)"]}}


class Home:
    """A fake home: its Claude Code settings, ondeck's data directory, the fake `claude`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.settings = root / "home" / ".claude" / "settings.json"
        self.settings.parent.mkdir(parents=True)
        self.settings.write_text(json.dumps(BEFORE, indent=2) + "\n")
        self.state = root / "data" / STATE_NAME
        self.log = root / "claude.log"
        self.claude = root / "bin" / "claude"
        self.claude.parent.mkdir()
        self.claude.write_text(FAKE_CLAUDE)
        self.claude.chmod(0o755)

    def ondeck(
        self, *args: str, fail: str = "", version: str = "2.1.332"
    ) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.root / "home"),
            "ONDECK_DATA_DIR": str(self.root / "data"),
            "ONDECK_CONFIG": str(self.root / "no-config.toml"),
            "FAKE_CLAUDE_LOG": str(self.log),
            "FAKE_CLAUDE_FAIL": fail,
            "FAKE_CLAUDE_VERSION": version,
        }
        return subprocess.run(
            [ONDECK, "setup", "claude-code", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def setup(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.ondeck("--claude", str(self.claude), *args, **kw)

    def read(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.settings.read_text())
        return data

    def calls(self) -> list[str]:
        if not self.log.exists():
            return []
        return [" ".join(json.loads(line)[:3]) for line in self.log.read_text().splitlines()]


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


def refused(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed setup ends with (exit 2, as every bad input of the CLI)."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    return done.stderr


def test_setup_raises_the_session_end_budget_and_undo_takes_out_exactly_that(
    home: Home,
) -> None:
    home.settings.chmod(0o640)
    done = home.setup()
    assert done.returncode == 0, done.stderr
    assert f"env {END_BUDGET_ENV}={END_BUDGET_MS}" in done.stdout
    assert END_BUDGET_MS == "10000"  # the settings hooks' SessionEnd bound, in ms
    data = home.read()
    assert data["env"] == {END_BUDGET_ENV: END_BUDGET_MS}
    assert data["theme"] == "dark" and data["enabledPlugins"] == {"ondeck@ondeck": True}
    assert stat.S_IMODE(home.settings.stat().st_mode) == 0o640  # the one writer keeps it

    undone = home.ondeck("--undo")
    assert undone.returncode == 0, undone.stderr
    assert f"env {END_BUDGET_ENV} removed" in undone.stdout
    assert home.read() == BEFORE and not home.state.exists()
    assert stat.S_IMODE(home.settings.stat().st_mode) == 0o640


def test_a_budget_the_person_set_is_left_alone_at_setup_and_at_undo(home: Home) -> None:
    theirs = {**BEFORE, "env": {END_BUDGET_ENV: "3000", "OTHER": "x"}}
    home.settings.write_text(json.dumps(theirs))
    done = home.setup()
    assert done.returncode == 0, done.stderr
    assert f"env {END_BUDGET_ENV} is set already, left as it is" in done.stdout
    assert home.read()["env"] == theirs["env"]
    assert home.ondeck("--undo").returncode == 0
    assert home.read() == theirs


def test_a_budget_changed_after_setup_is_the_persons_and_undo_leaves_it(home: Home) -> None:
    assert home.setup().returncode == 0
    data = home.read()
    data["env"][END_BUDGET_ENV] = "20000"
    home.settings.write_text(json.dumps(data))
    undone = home.ondeck("--undo")
    assert undone.returncode == 0, undone.stderr
    assert "no longer holds 10000" in undone.stdout
    assert home.read() == {**BEFORE, "env": {END_BUDGET_ENV: "20000"}}


def test_an_env_that_is_not_an_object_is_refused_and_nothing_is_left(home: Home) -> None:
    home.settings.write_text(json.dumps({**BEFORE, "env": ["not", "an object"]}))
    said = refused(home.setup())
    assert "'env' is not an object" in said and "took back" in said
    assert home.read() == {**BEFORE, "env": ["not", "an object"]}
    assert not home.state.exists()


@pytest.mark.parametrize(
    ("version", "fail", "taken_back"),
    [
        ("2.1.332", "plugin marketplace add", []),
        ("2.1.332", "plugin install", ["plugin marketplace remove"]),
        ("2.1.286", "mcp add", []),  # the settings hooks it had added are taken out
    ],
)
def test_a_step_that_fails_is_taken_back_and_setup_can_run_again(
    home: Home, version: str, fail: str, taken_back: list[str]
) -> None:
    said = refused(home.setup(fail=fail, version=version))
    assert f"`claude {fail}" in said and f"boom: {fail}" in said
    first = fail == "plugin marketplace add"
    assert ("nothing changed" if first else "took back") in said
    ran = home.calls()
    assert ran[ran.index(next(c for c in ran if c.startswith(fail))) + 1 :] == taken_back
    assert home.read() == BEFORE and not home.state.exists()

    again = home.setup(version=version)
    assert again.returncode == 0, again.stderr
    assert home.ondeck("--undo").returncode == 0
    assert home.read() == BEFORE


def test_settings_that_cannot_be_written_take_back_the_plugin(home: Home) -> None:
    """A file stands where ~/.claude would be: the fake `claude` installs the plugin all the
    same, then the session-end budget cannot be written."""
    folder = home.settings.parent
    home.settings.unlink()
    folder.rmdir()
    folder.write_text("a file, not a folder")
    said = refused(home.setup())
    assert "cannot be written" in said and "took back" in said
    assert home.calls()[-2:] == ["plugin uninstall ondeck@ondeck", "plugin marketplace remove"]
    assert not home.state.exists() and folder.read_text() == "a file, not a folder"


def test_when_taking_back_fails_too_undo_removes_what_is_left(home: Home) -> None:
    said = refused(home.setup(fail="plugin install,plugin marketplace remove"))
    assert "taking back what it had done failed too" in said and "--undo" in said
    state = json.loads(home.state.read_text())
    assert state["marketplace"] == "ondeck" and state["complete"] is False
    assert "plugin" not in state

    stopped = refused(home.setup())
    assert "stopped partway" in stopped and "--undo" in stopped

    undone = home.ondeck("--undo")
    assert undone.returncode == 0, undone.stderr
    assert undone.stdout.splitlines() == ["marketplace ondeck removed"]
    assert home.calls()[-1] == "plugin marketplace remove"
    assert home.read() == BEFORE and not home.state.exists()
