"""Writing ondeck's hooks and MCP server into Codex CLI's and Gemini CLI's settings, merging,
never clobbering (as claude_settings does for Claude Code).

- Codex: hooks in `hooks.json` (`~/.codex`, or `$CODEX_HOME`, or a project's `.codex/`),
  timeouts in seconds; the MCP server as `[mcp_servers.ondeck]` in `config.toml` beside it.
  Codex runs a new or changed hook only once the person trusted it (`/hooks` in codex): that
  decision is theirs, and ondeck never writes it.
- Gemini: hooks and `mcpServers.ondeck` in `settings.json` (`~/.gemini` or a project's
  `.gemini/`), timeouts in milliseconds.

Only what `install` adds is ever removed: entries whose command is ondeck's own hook for that
agent, and the `ondeck` MCP server when it runs ondeck's `mcp`. Every other key, hook and
server stays as it was; a file that does not parse is refused, and nothing changes.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from ondeck.core.errors import InvalidInput
from ondeck.entrypoints.hooks import settings_hooks
from ondeck.host.launch import is_isolated, ondeck_argv, ondeck_command
from ondeck.sessions.capture.agents import CODEX, GEMINI

# Each agent's hook events → `ondeck hook VERB`, and what each entry carries besides its
# command. Codex cuts a SessionEnd hook at 3 s (and warns at every start when asked for
# more); Gemini does not wait for its SessionEnd at all (its hook still runs to the end).
EVENTS = {
    CODEX: {
        "SessionStart": "session-start",
        "Stop": "stop",
        "PostCompact": "post-compact",
        "SessionEnd": "session-end",
    },
    GEMINI: {
        "SessionStart": "session-start",
        "AfterAgent": "stop",
        "SessionEnd": "session-end",
    },
}
OPTIONS: dict[str, dict[str, dict[str, Any]]] = {
    CODEX: {"SessionStart": {"timeout": 30}, "Stop": {"timeout": 30}, "SessionEnd": {"timeout": 3}},
    GEMINI: {
        "SessionStart": {"name": "ondeck-session-start", "timeout": 30_000},
        "AfterAgent": {"name": "ondeck-stop", "timeout": 30_000},
        "SessionEnd": {"name": "ondeck-session-end", "timeout": 10_000},
    },
}
MCP_NAME = "ondeck"


def codex_home(project_dir: Path | None, user: bool) -> Path:
    if user:
        return Path(os.environ.get("CODEX_HOME") or "~/.codex").expanduser()
    return (project_dir or Path.cwd()) / ".codex"


def gemini_settings(project_dir: Path | None, user: bool) -> Path:
    if user:
        return Path("~/.gemini/settings.json").expanduser()
    return (project_dir or Path.cwd()) / ".gemini" / "settings.json"


def install(agent: str, place: Path, command: str | None = None) -> list[str]:
    """Add ondeck's hooks and MCP server for `agent` (`place`: Codex's folder, Gemini's
    settings file); returns what changed (empty: nothing)."""
    command = command or ondeck_command()
    if agent == CODEX:
        return _codex(
            place,
            lambda data, hooks_file: _add_hooks(agent, data, hooks_file, command),
            _add_codex_mcp,
        )
    data = _load_json(place)
    changes = _add_hooks(agent, data, place, command)
    added = _add_gemini_mcp(data, place)
    changes += [added] if added else []
    if changes:
        _save(place, _json_text(data))
    return _with_path(place, changes)


def uninstall(agent: str, place: Path) -> list[str]:
    """Remove exactly what `install` adds; returns what changed."""
    if agent == CODEX:
        return _codex(place, lambda data, _: _remove_hooks(agent, data), _remove_codex_mcp)
    data = _load_json(place)
    changes = _remove_hooks(agent, data)
    servers = data.get("mcpServers")
    if isinstance(servers, dict) and _is_our_server(servers.get(MCP_NAME)):
        del servers[MCP_NAME]
        if not servers:
            del data["mcpServers"]
        changes.append(f"removed mcpServers.{MCP_NAME}")
    if changes:
        _save(place, _json_text(data))
    return _with_path(place, changes)


def _codex(
    place: Path,
    hooks_change: Callable[[dict[str, Any], Path], list[str]],
    mcp_change: Callable[[Path, Any], tuple[str, str] | None],
) -> list[str]:
    """Codex's two files, `hooks.json` and `config.toml`, changed together: both are made
    before either is written, so a refusal of one changes nothing."""
    hooks_file, config = place / "hooks.json", place / "config.toml"
    data = _load_json(hooks_file)
    changes = _with_path(hooks_file, hooks_change(data, hooks_file))
    toml = mcp_change(config, _load_toml(config))
    if changes:
        _save(hooks_file, _json_text(data))
    if toml is None:
        return changes
    _save(config, toml[0])
    return [*changes, f"{config}: {toml[1]}"]


def _with_path(path: Path, changes: list[str]) -> list[str]:
    return [f"{path}: {line}" for line in changes]


# --- hooks (the same shape in both agents' files) -----------------------------------------


def _hook_command(command: str, agent: str, verb: str) -> str:
    return f"{command} hook {verb} --agent {agent}"


def _is_ours(hook: Any, *, agent: str, verb: str) -> bool:
    command = hook.get("command", "") if isinstance(hook, dict) else ""
    return (
        isinstance(command, str)
        and "ondeck" in command
        and command.rstrip().endswith(f"hook {verb} --agent {agent}")
    )


def _add_hooks(agent: str, data: dict[str, Any], path: Path, command: str) -> list[str]:
    wanted = [
        settings_hooks.Wanted(
            event,
            _hook_command(command, agent, verb),
            OPTIONS[agent].get(event, {}),
            partial(_is_ours, agent=agent, verb=verb),
        )
        for event, verb in EVENTS[agent].items()
    ]
    return settings_hooks.add(data, path, wanted)


def _remove_hooks(agent: str, data: dict[str, Any]) -> list[str]:
    return settings_hooks.remove(
        data,
        [
            (event, partial(_is_ours, agent=agent, verb=verb))
            for event, verb in EVENTS[agent].items()
        ],
    )


# --- the MCP server ------------------------------------------------------------------------


def _server() -> dict[str, Any]:
    argv = ondeck_argv()
    return {"command": argv[0], "args": [*argv[1:], "mcp"]}


def _is_our_server(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    command, args = entry.get("command"), entry.get("args")
    words = [command, *(args if isinstance(args, list) else [])]
    return (
        isinstance(command, str)
        and "ondeck" in " ".join(str(w) for w in words)
        and isinstance(args, list)
        and args[-1:] == ["mcp"]
    )


def _add_gemini_mcp(data: dict[str, Any], path: Path) -> str | None:
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise InvalidInput(f"{path}: 'mcpServers' is not an object; nothing changed")
    if _is_bare(servers.get(MCP_NAME)):
        servers[MCP_NAME] = _server()
        return f"updated mcpServers.{MCP_NAME}: {_shown(servers[MCP_NAME])}"
    if MCP_NAME in servers:  # ondeck's already, or a server of the person's own: left alone
        return None
    servers[MCP_NAME] = _server()
    return f"added mcpServers.{MCP_NAME}: {_shown(servers[MCP_NAME])}"


def _is_bare(entry: Any) -> bool:
    """An MCP server an earlier ondeck wrote as a bare `-m ondeck` (host/launch.py says why
    it is replaced)."""
    return _is_our_server(entry) and not is_isolated(
        " ".join([entry["command"], *(str(a) for a in entry["args"])])
    )


def _shown(server: dict[str, Any]) -> str:
    return " ".join([server["command"], *server["args"]])


_HEADER = f"[mcp_servers.{MCP_NAME}]"


def _toml_string(value: str) -> str:
    # A TOML basic string: JSON's escapes are TOML's (\", \\, \n, \uXXXX).
    return json.dumps(value, ensure_ascii=True)


def _add_codex_mcp(path: Path, toml: dict[str, Any]) -> tuple[str, str] | None:
    """config.toml with ondeck's MCP server added, and the line that says so (None: there
    is one of that name already)."""
    servers = toml.get("mcp_servers")
    text = path.read_text() if path.exists() else ""
    said = "added"
    if isinstance(servers, dict) and _is_bare(servers.get(MCP_NAME)):
        # An earlier ondeck's bare `-m ondeck`: taken out, and today's line added.
        try:
            removed = _remove_codex_mcp(path, toml)
        except InvalidInput:
            return None  # the block holds more than ondeck wrote: the person's, left alone
        if removed is None:
            return None
        text, said = removed[0], "updated"
        toml = _parse_toml(text, path) or {}
        servers = toml.get("mcp_servers")
    if isinstance(servers, dict) and MCP_NAME in servers:
        return None  # ondeck's already, or a server of the person's own: left alone
    server = _server()
    args = ", ".join(_toml_string(a) for a in server["args"])
    block = f"{_HEADER}\ncommand = {_toml_string(server['command'])}\nargs = [{args}]\n"
    new = text + ("\n" if text and not text.endswith("\n") else "") + ("\n" if text else "")
    new += block
    parsed = _parse_toml(new, path)
    if parsed is None or parsed.get("mcp_servers", {}).get(MCP_NAME) != server:
        raise InvalidInput(
            f"{path}: ondeck cannot add {_HEADER} to this file (its mcp_servers is not a "
            "table); add it by hand, nothing changed"
        )
    return new, f"{said} mcp_servers.{MCP_NAME}: {_shown(server)}"


def _remove_codex_mcp(path: Path, toml: dict[str, Any]) -> tuple[str, str] | None:
    """config.toml without the MCP server `install` added (None: it is not there)."""
    servers = toml.get("mcp_servers")
    entry = servers.get(MCP_NAME) if isinstance(servers, dict) else None
    if not _is_our_server(entry):
        return None
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip() == _HEADER), None)
    if start is None:
        raise InvalidInput(
            f"{path}: mcp_servers.{MCP_NAME} is not written as {_HEADER}; remove it by "
            "hand, nothing changed"
        )
    end = next(
        (i for i in range(start + 1, len(lines)) if re.match(r"\s*\[", lines[i])), len(lines)
    )
    while start > 0 and not lines[start - 1].strip():
        start -= 1  # the blank line install put before it
    new = "".join(lines[:start] + lines[end:])
    expected = dict(toml)
    expected["mcp_servers"] = {k: v for k, v in servers.items() if k != MCP_NAME}  # type: ignore[union-attr]
    if not expected["mcp_servers"] and "[mcp_servers]" not in new:
        del expected["mcp_servers"]
    if _parse_toml(new, path) != expected:
        raise InvalidInput(
            f"{path}: {_HEADER} holds more than ondeck wrote; remove it by hand, nothing changed"
        )
    return new, f"removed mcp_servers.{MCP_NAME}"


# --- files ------------------------------------------------------------------------------------


def _load_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text() or "{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            f"{path} is not valid JSON ({' '.join(str(exc).split())[:200]}); fix it first, "
            "nothing changed"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; nothing changed")
    return data


def _load_toml(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text; fix it first, nothing changed") from None
    parsed = _parse_toml(text, path)
    if parsed is None:
        import tomllib

        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InvalidInput(
                f"{path} is not valid TOML ({' '.join(str(exc).split())[:200]}); fix it "
                "first, nothing changed"
            ) from None
    return parsed or {}


def _parse_toml(text: str, path: Path) -> dict[str, Any] | None:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def _json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _save(path: Path, text: str) -> None:
    settings_hooks.write(path, text)
