"""CLI tables at 80 columns: one line a row, no date or id broken across lines; long titles
(Korean, two cells a character, too) are cut with an ellipsis instead."""

from __future__ import annotations

import re

import pytest
from rich.cells import cell_len

LONG_KOREAN = "배포 준비 — 한국어와 English 제목이 아주 길어서 한 줄에 다 들어가지 않는 작업입니다"
LONG_ENGLISH = "Write the release notes for version 0.2.0 with every change since 0.1.0, twice"
HOLDER = "claude:3f1c2d3e-5b6a-4c7d-8e9f-0123456789ab"

# The layout is the terminal's, whatever the store: SQLite alone (the lists themselves are
# tested on both stores by the commands' own tests).
pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def _rows(out: str) -> list[str]:
    """The table's body rows (after the header's rule)."""
    lines = out.splitlines()
    [rule] = [n for n, line in enumerate(lines) if line.strip() and set(line) <= set("━╇")]
    return lines[rule + 1 :]


def _fits(out: str, width: int = 80) -> None:
    for line in out.splitlines():
        assert cell_len(line) <= width, f"{cell_len(line)} cells: {line!r}"


@pytest.mark.parametrize("columns", ["80", "60", "200"])
def test_the_task_list_keeps_a_row_on_one_line(
    ondeck, monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", columns)
    assert ondeck("task", "add", LONG_KOREAN, "--project", "site", "--due", "2026-06-18")[0] == 0
    assert ondeck("task", "add", LONG_ENGLISH, "--due", "2026-06-19")[0] == 0
    assert ondeck("task", "add", "짧은 제목", "--due", "2026-06-20")[0] == 0
    assert ondeck("task", "claim", "1", "--owner", HOLDER)[0] == 0
    code, out, err = ondeck("task", "list")
    assert code == 0, err
    if columns != "60":  # at 60 the dates and ids alone take more: the rows run longer
        _fits(out, int(columns))
    rows = _rows(out)
    assert len(rows) == 3, out
    dues = ["2026-06-18", "2026-06-19", "2026-06-20"]
    for number, (row, due) in enumerate(zip(rows, dues, strict=True), 1):
        assert re.match(rf"^{number} ", row) and due in row, row
    # The titles give way first: the holder is an id and a date.
    assert ("짧은 제목" in rows[2]) == (columns == "200")
    if columns == "200":
        assert LONG_KOREAN in rows[0] and LONG_ENGLISH in rows[1] and HOLDER in rows[0]
    else:
        assert "…" in rows[0] and "…" in rows[1]
        assert LONG_KOREAN[:3] in rows[0] and LONG_ENGLISH[:5] in rows[1]


def test_schedules_notes_and_events_fit_80_columns(ondeck, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "80")
    assert ondeck("schedule", "add", LONG_KOREAN, "--rule", "weekly:MON,THU")[0] == 0
    assert ondeck("note", "add", LONG_KOREAN + " " + LONG_ENGLISH, "--project", "site")[0] == 0
    assert ondeck("task", "add", LONG_KOREAN + " " + LONG_ENGLISH)[0] == 0
    assert ondeck("task", "claim", "1", "--owner", HOLDER)[0] == 0

    code, out, _ = ondeck("schedule", "list")
    assert code == 0
    _fits(out)
    [row] = _rows(out)
    assert "weekly:MON,THU" in row and re.search(r"\d{4}-\d\d-\d\d", row) and "…" in row, row

    code, out, _ = ondeck("note", "list", "--project", "site")
    assert code == 0
    _fits(out)
    [row] = _rows(out)
    assert row.startswith("1 ") and "…" in row, row

    code, out, _ = ondeck("task", "show", "1")
    assert code == 0
    lines = _rows(out)
    _fits("\n".join(lines))
    # An event's details fold onto more lines; its instant stays whole on the first.
    instant = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d ")
    assert len([line for line in lines if instant.match(line)]) == 2, out
    assert all(instant.match(line) or line.startswith(" ") for line in lines), out
