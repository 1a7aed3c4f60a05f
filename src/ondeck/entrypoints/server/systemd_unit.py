"""The systemd unit that runs `ondeck serve`, and its environment file, as text: pure.

Spelled as systemd reads them (systemd.syntax(7), systemd.service(5), systemd.exec(5)),
not as a shell would:
- in every unit value `%` starts a specifier, so a literal one is `%%`;
- `ExecStart=` is split into words at whitespace unless a word is in double quotes, inside
  which `\\` and `"` are escaped with a backslash; `$` starts a variable in an argument, so
  `$$` there (the executable's path is taken as written, and may hold no quote or
  backslash: `systemd-analyze verify` says "special characters");
- `EnvironmentFile=` and `User=` take the rest of the line as it is (no quotes); a leading
  `-` would make the file optional, and a path never starts with one;
- the environment file has systemd's own parser: a value in single quotes is taken as
  written; one holding a single quote goes in double quotes with `\\`, `"`, `$` and a
  backquote escaped.
A line break or another control character has no spelling in one unit line: refused, with
the name of what held it, as is a trailing backslash (it would join the next line).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from ondeck.core.errors import ConfigError

UNIT_NAME = "ondeck.service"
# The first line of both files: uninstall removes only files that start with it, and
# install replaces only those.
MARKER = "# Written by `ondeck service install`; `ondeck service uninstall` removes it."
# Long enough that a database coming back after a restart is not hammered, short enough
# that the dashboard is back before anyone wonders.
RESTART_SEC = 5
# Exit 2 is a setting that cannot be used (one line in the journal says which): restarting
# would repeat that line every few seconds without changing anything.
NO_RESTART_STATUS = 2

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_UNRUNNABLE = re.compile(r"[\\\"']")
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_@%+=:,./-]*")


class Scope(StrEnum):
    USER = "user"
    SYSTEM = "system"


@dataclass(frozen=True, slots=True, kw_only=True)
class Unit:
    """What the unit says: the command (an absolute executable, then its words), the
    environment file, and for a system unit the user it runs as."""

    scope: Scope
    command: tuple[str, ...]
    env_file: str
    user: str | None = None


@dataclass(frozen=True, slots=True)
class EnvEntry:
    """One variable; `shown` is what `--dry-run` prints instead of a secret value."""

    name: str
    value: str
    shown: str | None = None


def _line_safe(what: str, value: str) -> str:
    if _CONTROL.search(value):
        raise ConfigError(f"{what} {value!r:.80}: holds a line break or control character")
    if value.endswith("\\"):
        raise ConfigError(f"{what} {value!r:.80}: ends with a backslash")
    return value


def specifiers(value: str) -> str:
    """A literal value in a unit (`%` would start a specifier)."""
    return value.replace("%", "%%")


def exec_word(word: str, *, executable: bool = False) -> str:
    """One word of `ExecStart=`, quoted when it needs to be. Variables are expanded in the
    arguments only; systemd refuses an executable whose path holds a quote or backslash."""
    _line_safe("the command word", word)
    if executable and _UNRUNNABLE.search(word):
        raise ConfigError(
            f"the executable {word!r:.80}: systemd refuses a path holding a quote or a "
            "backslash (reach ondeck through a link whose path has none)"
        )
    word = specifiers(word) if executable else specifiers(word).replace("$", "$$")
    if _PLAIN_WORD.fullmatch(word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


def env_value(value: str) -> str:
    """A value of the environment file."""
    if _PLAIN_VALUE.fullmatch(value):
        return value
    if "'" not in value:
        return f"'{value}'"
    escaped = re.sub(r'([\\"$`])', r"\\\1", value)
    return f'"{escaped}"'


def render_unit(unit: Unit) -> str:
    if not unit.command or not unit.command[0].startswith("/"):
        raise ConfigError(f"the command {unit.command!r:.80}: needs an absolute executable")
    if not unit.env_file.startswith("/"):
        raise ConfigError(f"the environment file {unit.env_file!r:.80}: not an absolute path")
    env_file = specifiers(_line_safe("the environment file", unit.env_file))
    lines = [
        MARKER,
        "[Unit]",
        "Description=ondeck memory server (API, dashboard, MCP and the jobs loop)",
    ]
    if unit.scope is Scope.SYSTEM:
        # A user manager has no network-online.target: only a system unit can wait for it.
        lines += ["Wants=network-online.target", "After=network-online.target"]
    lines += [
        "",
        "[Service]",
        # exec: started means the executable ran, so a missing one fails the start itself.
        "Type=exec",
        "ExecStart="
        + " ".join(exec_word(word, executable=not n) for n, word in enumerate(unit.command)),
        f"EnvironmentFile={env_file}",
    ]
    if unit.scope is Scope.SYSTEM:
        if not unit.user:
            raise ConfigError("a system unit needs the user it runs as")
        lines.append(f"User={specifiers(_line_safe('the user', unit.user))}")
    lines += [
        "Restart=on-failure",
        f"RestartSec={RESTART_SEC}",
        f"RestartPreventExitStatus={NO_RESTART_STATUS}",
        "",
        "[Install]",
        "WantedBy=" + ("multi-user.target" if unit.scope is Scope.SYSTEM else "default.target"),
    ]
    return "\n".join(lines) + "\n"


def render_env(entries: Sequence[EnvEntry], *, shown: bool = False) -> str:
    """The environment file; `shown` writes secrets as they are shown (for `--dry-run`)."""
    lines = [MARKER, "# Mode 0600: it may hold the token."]
    for entry in entries:
        value = _line_safe(entry.name, entry.value)
        if shown and entry.shown is not None:
            lines.append(f"{entry.name}={entry.shown}")
        else:
            lines.append(f"{entry.name}={env_value(value)}")
    return "\n".join(lines) + "\n"


def systemctl_commands(scope: Scope, *verbs: tuple[str, ...]) -> list[list[str]]:
    """`systemctl [--user] VERB…` for each verb."""
    flag = ["--user"] if scope is Scope.USER else []
    return [["systemctl", *flag, *verb] for verb in verbs]
