"""Writing ondeck's hooks into Claude Code's `settings.json`, merging, never clobbering.

Only entries whose command is ondeck's own are ever added or removed; every other key, hook
and matcher in the file stays as it was.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

from ondeck.core.errors import InvalidInput
from ondeck.entrypoints.hooks import settings_hooks
from ondeck.host.launch import ondeck_command

EVENTS = {
    "SessionStart": "session-start",
    "Stop": "stop",
    "PostCompact": "post-compact",
    "SessionEnd": "session-end",
}
# Claude Code gives SessionEnd hooks 1.5 s in all unless a hook sets its own timeout (in
# seconds): the end's hook may wait for a locked database (5 s) and reads git (1 s).
SESSION_END_TIMEOUT_S = 10
# What each entry carries besides its command. Stop runs at the end of every turn: async,
# so the turn never waits for it.
OPTIONS: dict[str, dict[str, Any]] = {
    "Stop": {"async": True},
    "SessionEnd": {"timeout": SESSION_END_TIMEOUT_S},
}


def settings_path(project_dir: Path | None, user: bool) -> Path:
    if user:
        return Path("~/.claude/settings.json").expanduser()
    return (project_dir or Path.cwd()) / ".claude" / "settings.json"


def load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text() or "{}")
    except ValueError as exc:
        raise InvalidInput(
            f"{path} is not valid JSON ({exc}); fix it first, nothing changed"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; nothing changed")
    return data


def save(path: Path, data: dict[str, Any]) -> None:
    settings_hooks.write(path, json.dumps(data, indent=2) + "\n")


def _is_ours(hook: Any, *, verb: str) -> bool:
    command = hook.get("command", "") if isinstance(hook, dict) else ""
    return "ondeck" in command and command.rstrip().endswith(f"hook {verb}")


def install(path: Path, command: str | None = None) -> list[str]:
    """Add ondeck's hooks (EVENTS, with their OPTIONS); returns what changed (empty:
    nothing). An entry of an earlier install gets the options it lacks."""
    command = command or ondeck_command()
    data = load(path)
    wanted = [
        settings_hooks.Wanted(
            event, f"{command} hook {verb}", OPTIONS.get(event, {}), partial(_is_ours, verb=verb)
        )
        for event, verb in EVENTS.items()
    ]
    changes = settings_hooks.add(data, path, wanted)
    if changes:
        save(path, data)
    return changes


def uninstall(path: Path) -> list[str]:
    """Remove exactly the entries `install` adds; returns what changed."""
    data = load(path)
    changes = settings_hooks.remove(
        data, [(event, partial(_is_ours, verb=verb)) for event, verb in EVENTS.items()]
    )
    if changes:
        save(path, data)
    return changes


def set_env(path: Path, name: str, value: str) -> bool:
    """`env.<name> = value` in the settings, unless `env` already names it (the person's
    value, whatever it is, stays); True when it was written."""
    data = load(path)
    env = data.setdefault("env", {})
    if not isinstance(env, dict):
        raise InvalidInput(f"{path}: 'env' is not an object; nothing changed")
    if name in env:
        return False
    env[name] = value
    save(path, data)
    return True


def unset_env(path: Path, name: str, value: str) -> bool:
    """Take `env.<name>` out only while it still holds `value` (the one ondeck wrote: a value
    changed since is the person's); True when it was taken out."""
    data = load(path)
    env = data.get("env")
    if not isinstance(env, dict) or env.get(name) != value:
        return False
    del env[name]
    save(path, data)
    return True
