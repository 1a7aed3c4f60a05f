"""`ondeck setup claude-code`: everything Claude Code needs on this machine, in one step, and
its `--undo`.

    Claude Code 2.1.287 and later   the ondeck plugin (a mod, with ondeck's MCP server in its
                                    `.mcp.json`), from the marketplace that is the installed
                                    package's own plugin folder (read in place: an upgrade of
                                    ondeck upgrades it), its options set to this Python and
                                    this machine's owner socket; ondeck's settings hooks, if
                                    an earlier install put them in ~/.claude/settings.json,
                                    are taken out (one path per session) and put back by
                                    `--undo`
    older                           the settings hooks in ~/.claude/settings.json (as `ondeck
                                    hook install --user`) and `claude mcp add --scope user`

What was done is kept in `<data dir>/claude-code-setup.json`, so `--undo` removes exactly
that and nothing a person added. Claude Code's own commands do the plugin work (`claude
plugin marketplace add`, `claude plugin install --config`), so its files stay its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from ondeck.core.errors import InvalidInput
from ondeck.entrypoints.hooks import claude_settings

MODS_SINCE = (2, 1, 287)
PLUGIN = "ondeck@ondeck"
MARKETPLACE = "ondeck"
MCP_NAME = "ondeck"
STATE_NAME = "claude-code-setup.json"
TIMEOUT_S = 120


def plugin_dir() -> Path:
    """The plugin folder of the installed package (also its own one-plugin marketplace)."""
    return Path(str(files("ondeck").joinpath("claude_plugin")))


def version_of(text: str) -> tuple[int, int, int] | None:
    """`2.1.332 (Claude Code)` -> (2, 1, 332); None when it is not a version."""
    words = text.split()
    parts = words[0].split(".") if words else []
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


@dataclass
class Setup:
    """One machine's Claude Code: its `claude`, its settings file, ondeck's data directory."""

    claude: str
    settings: Path
    data_dir: Path
    python: str = field(default_factory=lambda: sys.executable)

    @property
    def state_path(self) -> Path:
        return self.data_dir / STATE_NAME

    def run(self, *args: str) -> str:
        try:
            done = subprocess.run(
                [self.claude, *args], capture_output=True, text=True, timeout=TIMEOUT_S
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InvalidInput(f"could not run {self.claude}: {exc}") from None
        if done.returncode != 0:
            said = " ".join((done.stderr or done.stdout).split())[-300:]
            raise InvalidInput(f"`claude {' '.join(args[:3])}` failed: {said}")
        return done.stdout

    def version(self) -> tuple[int, int, int]:
        found = version_of(self.run("--version"))
        if found is None:
            raise InvalidInput(f"{self.claude} --version does not name a version")
        return found


def install(setup: Setup, socket: str) -> list[str]:
    """Set Claude Code up; what was done, a line each. `socket`: the owner socket ("" in
    client mode, where the mod hands every event to `ondeck hook`)."""
    if setup.state_path.exists():
        return [
            f"ondeck is set up in Claude Code already ({setup.state_path}); nothing changed "
            "(`ondeck setup claude-code --undo` removes it)"
        ]
    version = setup.version()
    shown = ".".join(map(str, version))
    before = _load(setup.settings)
    state: dict[str, Any] = {"claude": setup.claude, "settings": str(setup.settings)}
    state["absent_keys"] = [
        k for k in ("enabledPlugins", "extraKnownMarketplaces", "pluginConfigs") if k not in before
    ]
    done: list[str] = []

    def did(key: str, value: Any) -> None:
        # Kept after each step: a step that fails leaves what came before it to `--undo`.
        state[key] = value
        setup.data_dir.mkdir(parents=True, exist_ok=True)
        setup.state_path.write_text(json.dumps(state, indent=2) + "\n")

    if version >= MODS_SINCE:
        folder = plugin_dir()
        setup.run("plugin", "marketplace", "add", str(folder))
        did("marketplace", MARKETPLACE)
        config = ["--config", f"python={setup.python}", "--config", f"socket={socket}"]
        setup.run("plugin", "install", PLUGIN, *config)
        did("plugin", PLUGIN)
        done.append(f"Claude Code {shown}: marketplace {MARKETPLACE} added ({folder})")
        done.append(
            f"plugin {PLUGIN} installed: the mod records sessions "
            + (f"through {socket}" if socket else "through `ondeck hook` (client mode)")
            + f", and its MCP server runs `{setup.python} -m ondeck mcp`"
        )
        if claude_settings.uninstall(setup.settings):
            did("hooks_removed", True)
            done.append(f"{setup.settings}: ondeck's settings hooks taken out (the mod has them)")
    else:
        claude_settings.install(setup.settings)
        did("hooks_added", True)
        done.append(f"Claude Code {shown} (no mods before 2.1.287): settings hooks in "
                    f"{setup.settings}")  # fmt: skip
        setup.run("mcp", "add", "--scope", "user", MCP_NAME, "--", setup.python, "-m", "ondeck",
                  "mcp")  # fmt: skip
        did("mcp", MCP_NAME)
        done.append(f"MCP server {MCP_NAME} added (user scope): {setup.python} -m ondeck mcp")
    done.append(f"`ondeck setup claude-code --undo` removes exactly this ({setup.state_path})")
    return done


def undo(setup: Setup) -> list[str]:
    """Remove what `install` did, as its state file says; what was done, a line each."""
    if not setup.state_path.exists():
        return [f"nothing to undo: no {setup.state_path}"]
    try:
        state = json.loads(setup.state_path.read_text())
    except ValueError as exc:
        raise InvalidInput(f"{setup.state_path} is not JSON ({exc}); nothing changed") from None
    setup.claude = str(state.get("claude") or setup.claude)
    settings = Path(state.get("settings") or setup.settings)
    done: list[str] = []
    if state.get("plugin"):
        setup.run("plugin", "uninstall", str(state["plugin"]))
        done.append(f"plugin {state['plugin']} uninstalled")
    if state.get("marketplace"):
        setup.run("plugin", "marketplace", "remove", str(state["marketplace"]))
        done.append(f"marketplace {state['marketplace']} removed")
    if state.get("mcp"):
        setup.run("mcp", "remove", "--scope", "user", str(state["mcp"]))
        done.append(f"MCP server {state['mcp']} removed")
    if state.get("hooks_added"):
        claude_settings.uninstall(settings)
        done.append(f"{settings}: ondeck's settings hooks removed")
    if state.get("hooks_removed"):
        claude_settings.install(settings)
        done.append(f"{settings}: ondeck's settings hooks put back")
    _drop_empty(settings, state.get("absent_keys") or [])
    setup.state_path.unlink()
    return done


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text() or "{}") if path.exists() else {}
    except ValueError as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc}); fix it first") from None
    return data if isinstance(data, dict) else {}


def _drop_empty(path: Path, keys: list[str]) -> None:
    """The keys Claude Code left empty that were not there before the setup."""
    data = _load(path)
    gone = [k for k in keys if isinstance(k, str) and data.get(k) == {}]
    if gone:
        for key in gone:
            del data[key]
        path.write_text(json.dumps(data, indent=2) + "\n")
