"""The one command line that starts ondeck from another program: an agent's hooks and MCP
server, the Claude Code plugin, a systemd unit. Every installer writes it and nothing else.

Those programs start ondeck in the folder a session runs in, which is often a repository
someone else wrote. A bare `-m ondeck` there would put that folder first on `sys.path`, and
a repository holding `ondeck/__init__.py`, `ondeck.py` or `sitecustomize.py` would run its
own code as the person. The interpreter's `-I` (isolated mode) keeps the current folder off
`sys.path`, ignores every `PYTHON*` variable (a `PYTHONPATH` from a project's agent
settings cannot choose the code either) and the user's site folder; the venv's own
site-packages, where ondeck is installed (uv tool, pipx, `pip install -e`), stay on it.
The installed console script is not used: it honours `PYTHONPATH`. `ONDECK_*` variables
reach ondeck as before.

The Claude Code plugin cannot call this: its `.mcp.json` and its mod build the same line
from the interpreter `ondeck setup claude-code` gives it (ISOLATED after it), and
tests/security/test_hostile_repository_launch.py holds them to this module.
"""

from __future__ import annotations

import re
import shlex
import sys

# Isolated mode: no current folder or script folder on sys.path, no PYTHON* variables, no
# user site. Never a bare `-m ondeck` (see the module's words).
ISOLATED = "-I"


def ondeck_argv(python: str | None = None) -> list[str]:
    """This very ondeck, started so that the folder and the environment cannot choose its
    code. `python`: the interpreter ondeck is installed in (this one by default; a venv's
    python is kept as it is, since resolving its link would leave the venv)."""
    return [python or sys.executable, ISOLATED, "-m", "ondeck"]


def ondeck_command(python: str | None = None) -> str:
    """`ondeck_argv` as a shell command line (the agents' hook settings take one)."""
    return " ".join(shlex.quote(word) for word in ondeck_argv(python))


# `-m ondeck` with no isolating flag among the interpreter's options before it: -I, or -P
# (safe path) with -E (no PYTHON* variables), alone or in a cluster such as `-IB`.
_M_ONDECK = re.compile(r"(?:^|\s)((?:-[A-Za-z]+\s+)*)-m\s*['\"]?ondeck\b")


def is_isolated(command: str) -> bool:
    """False when `command` starts ondeck with `-m ondeck` and no `-I` (nor `-P` with `-E`)
    before it; True otherwise (a command that does not run `-m ondeck` at all included)."""
    for match in _M_ONDECK.finditer(command):
        flags = "".join(word.lstrip("-") for word in match.group(1).split())
        if "I" not in flags and not ("P" in flags and "E" in flags):
            return False
    return True
