"""`ondeck setup codex|gemini [--undo]`: idempotent, keeps every other setting, undo removes
exactly what setup added, a file that does not parse is refused in one line and unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from support.hooks import ONDECK

CODEX_CONFIG = """# the person's own settings
model = "o4-mini"

[mcp_servers.docs]
command = "docs-server"
args = ["--stdio"]

[profiles.fast]
model = "gpt-5-mini"
"""
CODEX_HOOKS = {
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-me", "timeout": 5}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}],
    }
}
GEMINI_SETTINGS = {
    "theme": "GitHub",
    "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "say-done"}]}]},
    "mcpServers": {"docs": {"command": "docs-server"}},
}


def setup(agent: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ONDECK, "setup", agent, "--user", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(home), "CODEX_HOME": str(home / ".codex")},
    )


def test_codex_setup_merges_once_and_undo_restores_the_files(tmp_path: Path) -> None:
    folder = tmp_path / ".codex"
    folder.mkdir()
    (folder / "config.toml").write_text(CODEX_CONFIG)
    (folder / "hooks.json").write_text(json.dumps(CODEX_HOOKS))
    first = setup("codex", tmp_path)
    assert first.returncode == 0, first.stderr
    assert "/hooks" in first.stdout  # Codex asks a person to trust new hooks
    config = tomllib.loads((folder / "config.toml").read_text())
    assert config["model"] == "o4-mini" and config["profiles"]["fast"]["model"] == "gpt-5-mini"
    assert config["mcp_servers"]["docs"] == {"command": "docs-server", "args": ["--stdio"]}
    assert config["mcp_servers"]["ondeck"]["args"][-1] == "mcp"
    hooks = json.loads((folder / "hooks.json").read_text())["hooks"]
    assert hooks["PreToolUse"] == CODEX_HOOKS["hooks"]["PreToolUse"]
    assert hooks["Stop"][0] == CODEX_HOOKS["hooks"]["Stop"][0]
    ours = {
        e: [h for g in gs for h in g["hooks"] if "ondeck" in h["command"]]
        for e, gs in hooks.items()
    }
    assert [h["command"].split()[-3:] for h in ours["Stop"]] == [["stop", "--agent", "codex"]]
    assert ours["SessionEnd"][0]["timeout"] == 3  # Codex's own limit for SessionEnd
    before = ((folder / "config.toml").read_text(), (folder / "hooks.json").read_text())

    again = setup("codex", tmp_path)
    assert again.returncode == 0 and "nothing changed" in again.stdout
    assert ((folder / "config.toml").read_text(), (folder / "hooks.json").read_text()) == before

    undone = setup("codex", tmp_path, "--undo")
    assert undone.returncode == 0, undone.stderr
    assert (folder / "config.toml").read_text() == CODEX_CONFIG
    assert json.loads((folder / "hooks.json").read_text()) == CODEX_HOOKS
    assert "nothing changed" in setup("codex", tmp_path, "--undo").stdout


def test_gemini_setup_merges_once_and_undo_restores_the_settings(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(GEMINI_SETTINGS))
    assert setup("gemini", tmp_path).returncode == 0
    data = json.loads(settings.read_text())
    assert data["theme"] == "GitHub" and data["mcpServers"]["docs"] == {"command": "docs-server"}
    assert data["mcpServers"]["ondeck"]["args"][-1] == "mcp"
    after = [h["command"] for g in data["hooks"]["AfterAgent"] for h in g["hooks"]]
    assert after[0] == "say-done" and after[1].endswith("hook stop --agent gemini-cli")
    start = data["hooks"]["SessionStart"][0]["hooks"][0]
    assert start["timeout"] == 30_000  # milliseconds, Gemini's unit
    before = settings.read_text()
    assert "nothing changed" in setup("gemini", tmp_path).stdout
    assert settings.read_text() == before
    assert setup("gemini", tmp_path, "--undo").returncode == 0
    assert json.loads(settings.read_text()) == GEMINI_SETTINGS


@pytest.mark.parametrize(
    ("agent", "name", "text"),
    [
        ("gemini", ".gemini/settings.json", '{"theme": "GitHub",'),
        ("gemini", ".gemini/settings.json", '["not", "an object"]'),
        ("gemini", ".gemini/settings.json", '{"hooks": {"SessionStart": {"no": "list"}}}'),
        ("codex", ".codex/hooks.json", "{broken"),
        ("codex", ".codex/config.toml", 'model = "unclosed'),
        ("codex", ".codex/config.toml", 'mcp_servers = { docs = { command = "d" } }\n'),
    ],
)
def test_a_file_that_does_not_parse_is_refused_and_left_alone(
    agent: str, name: str, text: str, tmp_path: Path
) -> None:
    path = tmp_path / name
    path.parent.mkdir()
    path.write_text(text)
    for args in ((), ("--undo",)):
        done = setup(agent, tmp_path, *args)
        if args and done.returncode == 0:  # nothing of ondeck's to remove from it
            continue
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and "nothing changed" in done.stderr
    assert path.read_text() == text
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


@pytest.mark.parametrize("agent", ["codex", "gemini", "claude-hooks"])
def test_a_place_that_cannot_be_written_is_refused_in_one_line(tmp_path: Path, agent: str) -> None:
    """A project folder where nothing can be made (a file stands where the folder would go)."""
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a folder")
    command = (
        ["hook", "install", "--project-dir", str(blocked)]
        if agent == "claude-hooks"
        else ["setup", agent, "--project-dir", str(blocked)]
    )
    done = subprocess.run(
        [ONDECK, *command],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "cannot be written" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and blocked.read_text() == "a file, not a folder"
