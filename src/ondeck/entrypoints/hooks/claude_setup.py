"""`ondeck setup claude-code`: everything Claude Code needs on this machine, in one step, and
its `--undo`.

    Claude Code 2.1.287 and later   the ondeck plugin (a mod, with ondeck's MCP server in its
                                    `.mcp.json`), from the marketplace that is the installed
                                    package's own plugin folder (read in place: an upgrade of
                                    ondeck upgrades it), its options set to this Python and
                                    this machine's owner socket; ondeck's settings hooks, if
                                    an earlier install put them in ~/.claude/settings.json,
                                    are taken out (one path per session) and put back by
                                    `--undo`; the settings' `env` gets the mod's session
                                    end more time (END_BUDGET_ENV)
    older                           the settings hooks in ~/.claude/settings.json (as `ondeck
                                    hook install --user`) and `claude mcp add --scope user`

What was done is kept in `<data dir>/claude-code-setup.json`, so `--undo` removes exactly
that and nothing a person added (a step that fails takes back the ones before it: see
`install`). Claude Code's own commands do the plugin work (`claude
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
from ondeck.host.launch import ondeck_argv, ondeck_command

MODS_SINCE = (2, 1, 287)
PLUGIN = "ondeck@ondeck"
MARKETPLACE = "ondeck"
MCP_NAME = "ondeck"
STATE_NAME = "claude-code-setup.json"
TIMEOUT_S = 120
# Keys of Claude Code's settings that setup may leave empty: dropped by `--undo` when setup
# found them absent.
SETTINGS_KEYS = ("enabledPlugins", "extraKnownMarketplaces", "pluginConfigs", "env")
# What install may have done, by its state file's keys.
STEPS = ("marketplace", "plugin", "hooks_removed", "env", "hooks_added", "mcp")
# Claude Code gives the mod's `session.end` 1.5 s unless this variable says more. Over the
# owner socket the end takes milliseconds, but with the server away the mod hands it to
# `ondeck hook session-end` (Python's start, a locked database up to 5 s, git 1 s): the
# settings hooks' SessionEnd bound, so either path gets the same time, and Claude Code
# waits that long only when the server is away.
END_BUDGET_ENV = "CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS"
END_BUDGET_MS = str(claude_settings.SESSION_END_TIMEOUT_S * 1000)


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


def install(setup: Setup, socket: str, *, store: str = "") -> list[str]:
    """Set Claude Code up; what was done, a line each. `store`: the id of the hooks'
    database, for the mod to send with its events ("" when not known: the mod learns it from
    its first `ondeck hook`). `socket`: the owner socket ("" in
    client mode, where the mod hands every event to `ondeck hook`).

    A step that fails takes back the steps before it (in reverse, as `--undo` would) and
    setup stops with one line saying so: rather than a half-set-up machine and a state file
    to read, the person gets the machine as it was and can run setup again once the cause is
    mended. Only when taking back fails too is the rest left, in the state file, for
    `--undo`, and the line says that."""
    if setup.state_path.exists():
        if _read_state(setup).get("complete") is False:
            raise InvalidInput(
                f"an earlier setup stopped partway ({setup.state_path}): "
                "`ondeck setup claude-code --undo` removes what it did; then set up again"
            )
        return [
            f"ondeck is set up in Claude Code already ({setup.state_path}); nothing changed "
            "(`ondeck setup claude-code --undo` removes it)"
        ]
    version = setup.version()
    before = claude_settings.load(setup.settings)
    state: dict[str, Any] = {
        "claude": setup.claude,
        "settings": str(setup.settings),
        "absent_keys": [k for k in SETTINGS_KEYS if k not in before],
        "complete": False,
    }
    _save_state(setup, state)  # a data directory that cannot be written stops setup here
    try:
        done = _steps(setup, socket, version, state, store)
    except InvalidInput as exc:
        raise _taken_back(setup, state, exc) from None
    state["complete"] = True
    _save_state(setup, state)
    done.append(f"`ondeck setup claude-code --undo` removes exactly this ({setup.state_path})")
    return done


def _steps(
    setup: Setup,
    socket: str,
    version: tuple[int, int, int],
    state: dict[str, Any],
    store: str = "",
) -> list[str]:
    def did(key: str, value: Any) -> None:
        # Kept after each step, so what came before a failure is known to the taking back.
        state[key] = value
        _save_state(setup, state)

    shown = ".".join(map(str, version))
    done: list[str] = []
    if version < MODS_SINCE:
        claude_settings.install(setup.settings)
        did("hooks_added", True)
        done.append(f"Claude Code {shown} (no mods before 2.1.287): settings hooks in "
                    f"{setup.settings}")  # fmt: skip
        setup.run("mcp", "add", "--scope", "user", MCP_NAME, "--", *ondeck_argv(setup.python),
                  "mcp")  # fmt: skip
        did("mcp", MCP_NAME)
        done.append(f"MCP server {MCP_NAME} added (user scope): {ondeck_command(setup.python)} mcp")
        return done
    folder = plugin_dir()
    setup.run("plugin", "marketplace", "add", str(folder))
    did("marketplace", MARKETPLACE)
    config = ["--config", f"python={setup.python}", "--config", f"socket={socket}"]
    if store:
        config += ["--config", f"store={store}"]
    setup.run("plugin", "install", PLUGIN, *config)
    did("plugin", PLUGIN)
    done.append(f"Claude Code {shown}: marketplace {MARKETPLACE} added ({folder})")
    done.append(
        f"plugin {PLUGIN} installed: the mod records sessions "
        + (f"through {socket}" if socket else "through `ondeck hook` (client mode)")
        + f", and its MCP server runs `{ondeck_command(setup.python)} mcp`"
    )
    if claude_settings.uninstall(setup.settings):
        did("hooks_removed", True)
        done.append(f"{setup.settings}: ondeck's settings hooks taken out (the mod has them)")
    if claude_settings.set_env(setup.settings, END_BUDGET_ENV, END_BUDGET_MS):
        did("env", {END_BUDGET_ENV: END_BUDGET_MS})
        done.append(
            f"{setup.settings}: env {END_BUDGET_ENV}={END_BUDGET_MS}, so the mod's session end "
            "has 10 s, not 1.5 s, when it must hand the end to `ondeck hook`"
        )
    else:
        done.append(f"{setup.settings}: env {END_BUDGET_ENV} is set already, left as it is")
    return done


def _taken_back(setup: Setup, state: dict[str, Any], exc: InvalidInput) -> InvalidInput:
    """The one line a failed setup ends with, once what it had done is taken back."""
    if not any(state.get(step) for step in STEPS):
        setup.state_path.unlink(missing_ok=True)
        return InvalidInput(f"{exc}; setup stopped there, nothing changed")
    try:
        taken = _take_out(setup, state)
    except InvalidInput as again:
        return InvalidInput(
            f"{exc}; setup stopped there, and taking back what it had done failed too "
            f"({again}): `ondeck setup claude-code --undo` removes what is left, as "
            f"{setup.state_path} says"
        )
    return InvalidInput(
        f"{exc}; setup stopped there and took back what it had done ({'; '.join(taken)}): "
        "nothing of it is left"
    )


def undo(setup: Setup) -> list[str]:
    """Remove what `install` did, as its state file says; what was done, a line each."""
    if not setup.state_path.exists():
        return [f"nothing to undo: no {setup.state_path}"]
    return _take_out(setup, _read_state(setup))


def _take_out(setup: Setup, state: dict[str, Any]) -> list[str]:
    """Each step of `state` undone, and dropped from the state file as it goes:
    one that fails leaves the file naming exactly what is still there."""
    setup.claude = str(state.get("claude") or setup.claude)
    settings = Path(state.get("settings") or setup.settings)
    done: list[str] = []

    def undid(key: str, line: str) -> None:
        del state[key]
        _save_state(setup, state)
        done.append(line)

    # Claude Code's own parts first: while one of them cannot be taken out, the settings
    # still match it (the mod has the sessions, its end has its time).
    if state.get("plugin"):
        setup.run("plugin", "uninstall", str(state["plugin"]))
        undid("plugin", f"plugin {state['plugin']} uninstalled")
    if state.get("marketplace"):
        setup.run("plugin", "marketplace", "remove", str(state["marketplace"]))
        undid("marketplace", f"marketplace {state['marketplace']} removed")
    if state.get("mcp"):
        setup.run("mcp", "remove", "--scope", "user", str(state["mcp"]))
        undid("mcp", f"MCP server {state['mcp']} removed")
    if state.get("hooks_added"):
        claude_settings.uninstall(settings)
        undid("hooks_added", f"{settings}: ondeck's settings hooks removed")
    if state.get("hooks_removed"):
        claude_settings.install(settings)
        undid("hooks_removed", f"{settings}: ondeck's settings hooks put back")
    if isinstance(state.get("env"), dict):
        said = []
        for name, value in state["env"].items():
            gone = claude_settings.unset_env(settings, str(name), str(value))
            said.append(f"env {name} " + ("removed" if gone else
                        f"no longer holds {value}: the person's now, left as it is"))  # fmt: skip
        undid("env", f"{settings}: {', '.join(said)}")
    _drop_empty(settings, state.get("absent_keys") or [])
    setup.state_path.unlink()
    return done


def _read_state(setup: Setup) -> dict[str, Any]:
    try:
        state = json.loads(setup.state_path.read_text())
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"{setup.state_path} cannot be read ({exc}); nothing changed") from None
    if not isinstance(state, dict):
        raise InvalidInput(f"{setup.state_path} does not hold a JSON object; nothing changed")
    return state


def _save_state(setup: Setup, state: dict[str, Any]) -> None:
    try:
        setup.data_dir.mkdir(parents=True, exist_ok=True)
        setup.state_path.write_text(json.dumps(state, indent=2) + "\n")
    except OSError as exc:
        raise InvalidInput(
            f"{setup.state_path}: cannot be written ({exc.strerror or exc})"
        ) from None


def _drop_empty(path: Path, keys: list[str]) -> None:
    """The keys Claude Code or setup left empty that were not there before the setup."""
    data = claude_settings.load(path)
    gone = [k for k in keys if isinstance(k, str) and data.get(k) == {}]
    if gone:
        for key in gone:
            del data[key]
        claude_settings.save(path, data)
