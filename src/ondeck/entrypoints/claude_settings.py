"""Writing ondeck's hooks into Claude Code's `settings.json`, merging, never clobbering.

Only entries whose command is ondeck's own are ever added or removed; every other key, hook
and matcher in the file stays as it was.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from ondeck.core.errors import InvalidInput

EVENTS = {"SessionStart": "session-start", "SessionEnd": "session-end"}


def ondeck_command() -> str:
    """How Claude Code should call ondeck: this very executable, so a venv install works."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "ondeck" and argv0.exists():
        return shlex.quote(str(argv0.resolve()))
    return f"{shlex.quote(sys.executable)} -m ondeck"


def settings_path(project_dir: Path | None, user: bool) -> Path:
    if user:
        return Path("~/.claude/settings.json").expanduser()
    return (project_dir or Path.cwd()) / ".claude" / "settings.json"


def _load(path: Path) -> dict[str, Any]:
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


def _save(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".settings-", suffix=".json")
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
    os.replace(tmp, path)


def _is_ours(hook: Any, verb: str) -> bool:
    command = hook.get("command", "") if isinstance(hook, dict) else ""
    return "ondeck" in command and command.rstrip().endswith(f"hook {verb}")


def install(path: Path, command: str | None = None) -> list[str]:
    """Add ondeck's SessionStart and SessionEnd hooks; returns what changed (empty: nothing)."""
    command = command or ondeck_command()
    data = _load(path)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput(f"{path}: 'hooks' is not an object; nothing changed")
    changes = []
    for event, verb in EVENTS.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InvalidInput(f"{path}: hooks.{event} is not a list; nothing changed")
        present = any(
            _is_ours(h, verb) for g in groups if isinstance(g, dict) for h in g.get("hooks", [])
        )
        if present:
            continue
        groups.append({"hooks": [{"type": "command", "command": f"{command} hook {verb}"}]})
        changes.append(f"added hooks.{event}: {command} hook {verb}")
    if changes:
        _save(path, data)
    return changes


def uninstall(path: Path) -> list[str]:
    """Remove exactly the entries `install` adds; returns what changed."""
    data = _load(path)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    changes = []
    for event, verb in EVENTS.items():
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept_groups.append(group)
                continue
            kept = [h for h in group["hooks"] if not _is_ours(h, verb)]
            for h in group["hooks"]:
                if _is_ours(h, verb):
                    changes.append(f"removed hooks.{event}: {h['command']}")
            if kept:
                kept_groups.append({**group, "hooks": kept})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del data["hooks"]
    if changes:
        _save(path, data)
    return changes
