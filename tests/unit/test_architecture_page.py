"""docs/architecture.md's "Where each concept lives" names every module of `src/ondeck`, and
no module that is gone: a newcomer's map that cannot fall behind the tree."""

from __future__ import annotations

import re
from pathlib import Path

import ondeck

SRC = Path(ondeck.__file__).parent
PAGE = Path(__file__).parents[2] / "docs" / "architecture.md"


def modules() -> set[str]:
    """Every module a reader could look for: packages' `__init__.py` only where they hold
    more than a docstring, no migration revisions (a frozen history, listed by Alembic)."""
    found = set()
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("migrations/versions/"):
            continue
        if path.name == "__init__.py" and _docstring_only(path):
            continue
        found.add(rel)
    return found


def _docstring_only(path: Path) -> bool:
    import ast

    body = ast.parse(path.read_text(encoding="utf-8")).body
    return all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body)


def rows(page: str) -> set[str]:
    """The modules named in the first cell of the section's table rows."""
    section = page.split("## Where each concept lives", 1)[1].split("\n## ", 1)[0]
    named = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            named.update(re.findall(r"`([\w/]+\.py)`", first))
    return named


def test_every_module_has_its_row() -> None:
    missing = sorted(modules() - rows(PAGE.read_text(encoding="utf-8")))
    assert not missing, f"modules with no row in docs/architecture.md: {missing}"


def test_every_row_names_a_module_that_exists() -> None:
    gone = sorted(m for m in rows(PAGE.read_text(encoding="utf-8")) if not (SRC / m).exists())
    assert not gone, f"rows of docs/architecture.md naming no module: {gone}"


def test_the_check_reads_the_rows_it_is_given() -> None:
    page = (
        "## Where each concept lives\n\n| `core/clock.py` | now |\n| x | `a/b.py` |\n\n## After\n"
    )
    assert rows(page) == {"core/clock.py"}
