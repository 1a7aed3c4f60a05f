"""ondeck's entries in an agent's hook settings, added and removed without touching any other.

Claude Code, Codex and Gemini CLI keep hooks in the same shape: `hooks.<Event>` is a list of
groups, each with a list of `{"type": "command", "command": …}` entries. Only entries that
`is_ours` recognises are ever added, updated or removed (claude_settings.py, agent_settings.py
say which are, and what each event runs).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ondeck.core.errors import InvalidInput
from ondeck.host.launch import is_isolated

IsOurs = Callable[[Any], bool]


class Wanted:
    """One event's entry: its command line, the options it carries, and how to know it."""

    def __init__(self, event: str, line: str, options: dict[str, Any], is_ours: IsOurs) -> None:
        self.event = event
        self.line = line
        self.options = options
        self.is_ours = is_ours


def add(data: dict[str, Any], path: Path, wanted: list[Wanted]) -> list[str]:
    """Add each wanted entry `data` lacks, and the options an earlier one lacks; returns what
    changed. A file of another shape is refused before anything in `data` is changed."""
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput(f"{path}: 'hooks' is not an object; nothing changed")
    for w in wanted:
        if not isinstance(hooks.get(w.event, []), list):
            raise InvalidInput(f"{path}: hooks.{w.event} is not a list; nothing changed")
    changes = []
    for w in wanted:
        groups = hooks.setdefault(w.event, [])
        ours = [h for h in _entries(groups) if w.is_ours(h)]
        for hook in ours:
            if not is_isolated(str(hook.get("command", ""))):
                # An earlier ondeck's bare `-m ondeck`: a repository's own `ondeck` would
                # run in its place (host/launch.py), so the line becomes today's.
                changes.append(f"updated hooks.{w.event}: {hook['command']} -> {w.line}")
                hook["command"] = w.line
            missing = {k: v for k, v in w.options.items() if hook.get(k) != v}
            if missing:
                hook.update(missing)
                shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in missing.items())
                changes.append(f"updated hooks.{w.event}: {hook['command']} ({shown})")
        if ours:
            continue
        groups.append({"hooks": [{"type": "command", "command": w.line, **w.options}]})
        extra = "".join(f", {k}={json.dumps(v)}" for k, v in w.options.items())
        changes.append(f"added hooks.{w.event}: {w.line}{extra}")
    return changes


def remove(data: dict[str, Any], ours: list[tuple[str, IsOurs]]) -> list[str]:
    """Take out every entry `is_ours` recognises under its event (and the groups and events
    left empty); returns what changed."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    changes = []
    for event, is_ours in ours:
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept_groups.append(group)
                continue
            kept = [h for h in group["hooks"] if not is_ours(h)]
            changes += [
                f"removed hooks.{event}: {h['command']}" for h in group["hooks"] if is_ours(h)
            ]
            if kept:
                kept_groups.append({**group, "hooks": kept})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del data["hooks"]
    return changes


def _entries(groups: list[Any]) -> list[Any]:
    return [
        h
        for g in groups
        if isinstance(g, dict) and isinstance(g.get("hooks"), list)
        for h in g["hooks"]
    ]


def write(path: Path, text: str) -> None:
    """An agent's settings file written whole or not at all, the owner's alone as it was
    (0600 when new); a place that cannot be written is refused in one line."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot be written ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise InvalidInput(f"{path}: cannot be written ({exc.strerror or exc})") from None
        raise
