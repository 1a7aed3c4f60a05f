"""A module holds one concept: none of `src/ondeck` is over 550 lines (migration revisions
aside: a released one is frozen as it was written)."""

from __future__ import annotations

from pathlib import Path

import ondeck

SRC = Path(ondeck.__file__).parent
MOST = 550


def test_no_module_is_over_550_lines() -> None:
    sizes = {
        path.relative_to(SRC).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in SRC.rglob("*.py")
        if "migrations/versions" not in path.as_posix()
    }
    over = {name: lines for name, lines in sorted(sizes.items()) if lines > MOST}
    assert not over, f"modules over {MOST} lines: {over}"
    assert len(sizes) > 100  # the walk found the tree
