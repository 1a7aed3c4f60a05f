"""Entry points reach transactions, the clock and the session context only through
`entrypoints/gateway.py`, so a new route, page, command or tool cannot quietly do it its own
way (a write transaction for a read, a second clock reading, a context format of its own).
Read from the source with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ondeck

ENTRYPOINTS = Path(ondeck.__file__).parent / "entrypoints"

# name -> the modules (relative to entrypoints/) that may use it, and why.
ONLY_IN: dict[str, tuple[set[str], str]] = {
    # The session hooks' database path runs without a Store: its settings are
    # hook_config.HookConfig (pydantic's import alone costs most of a hook's budget). It
    # writes the rare lease release at a session's end, and reads session-start's context
    # (gateway.hook_context) on SQLAlchemy when the database had to be created or migrated.
    "reading": ({"gateway.py"}, "open transactions with Call.read()/write()"),
    "writing": ({"gateway.py"}, "open transactions with Call.read()/write()"),
    "context_for": ({"gateway.py"}, "build the context with Call.context()"),
    "build_context": ({"gateway.py"}, "build the context with Call.context()"),
    "fit_markdown": ({"gateway.py"}, "build the context with Call.context()"),
    "to_markdown": ({"gateway.py"}, "render it with Call.context_text() or render()"),
    "now": (
        # The command's instant (a `rule check` needs "today" and no database), the jobs
        # loop's tick and a hook's event (sent to a server or the spool as it is), no Call;
        # and the instant a client hook's records leave (the server compares it with its own
        # clock: a drain sends them long after their events).
        {"gateway.py", "cli/common.py", "jobs/loop.py"},
        "take the instant from the Call (Call.now)",
    ),
}


def _uses(tree: ast.AST) -> set[tuple[str, int]]:
    """Names imported from ondeck modules, and `clock.now` (the clock module's name)."""
    found: set[tuple[str, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ondeck"):
            found.update((alias.name, node.lineno) for alias in node.names)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "clock"
        ):
            found.add((node.attr, node.lineno))
    return found


def misuses(root: Path) -> list[str]:
    wrong = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        for name, line in sorted(_uses(ast.parse(path.read_text(encoding="utf-8")))):
            allowed = ONLY_IN.get(name)
            if allowed is not None and where not in allowed[0]:
                wrong.append(f"{where}:{line} uses {name}: {allowed[1]}")
    return wrong


def test_entry_points_go_through_the_gateway_module() -> None:
    assert not misuses(ENTRYPOINTS), "\n".join(misuses(ENTRYPOINTS))


@pytest.mark.parametrize(
    "line",
    [
        "from ondeck.db.engine import writing",
        "from ondeck.core import clock\nx = clock.now()",
        "from ondeck.context.build import context_for",
        "from ondeck.context.render import to_markdown",
    ],
)
def test_a_route_that_goes_its_own_way_is_caught(tmp_path: Path, line: str) -> None:
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "new_route.py").write_text(line + "\n", encoding="utf-8")
    [found] = misuses(tmp_path)
    assert found.startswith("api/new_route.py:")
