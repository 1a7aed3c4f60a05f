"""Counts read as English: "1 commit", "2 days", never "commit(s)" or "day(s)", in any text
ondeck shows (its strings and its templates)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from ondeck.core.humanize import counted

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "ondeck"
# A word with "(s)" glued on; `http(s)://` names two schemes, not a count.
HEDGED = re.compile(r"(?<!http)(?<=[A-Za-z])\(s\)")


def test_counted_says_one_or_many() -> None:
    assert counted(1, "commit") == "1 commit"
    assert counted(2, "commit") == "2 commits"
    assert counted(0, "day") == "0 days"
    assert counted(1, "secret or private span", "secrets or private spans") == (
        "1 secret or private span"
    )
    assert counted(3, "secret or private span", "secrets or private spans") == (
        "3 secrets or private spans"
    )


def _strings(path: Path) -> list[tuple[int, str]]:
    """The string literals of a module; of an f-string, its text without the code in {}."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [
        (
            t.start[0],
            re.sub(r"\{[^{}]*\}", "", t.string) if "f" in t.string[:2].lower() else t.string,
        )
        for t in tokens
        if t.type == tokenize.STRING
    ]


def test_no_text_of_ondeck_hedges_a_plural() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, string in _strings(path):
            if HEDGED.search(string) and not string.lstrip("rbf").startswith('"""'):
                found.append(f"{path.relative_to(PACKAGE)}:{line}: {string[:80]}")
    for path in sorted(PACKAGE.rglob("*.html")):
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if HEDGED.search(text):
                found.append(f"{path.relative_to(PACKAGE)}:{number}: {text.strip()[:80]}")
    assert not found, "say the count with core.humanize.counted (|counted in a template):\n" + (
        "\n".join(found)
    )


def test_the_check_finds_a_hedged_plural() -> None:
    assert HEDGED.search('f"{n} commit(s) on top"')
    assert not HEDGED.search('"write http(s)://host:port"')
    assert not HEDGED.search("signal (s)")
