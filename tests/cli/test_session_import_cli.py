"""`ondeck session import claude-code` as a person runs it: a real process, its transcripts
in the machine's ~/.claude/projects, its sides in its config file. A session is filed where
it was launched (its subagent ran in the personal folder); a line that cannot be read is
refused and counted with its file, the rest imported, exit 0; a run that could read nothing
exits 2 with one line; what the output shows of a transcript (a folder's name) is shown,
not obeyed, by a terminal. Both stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.machines import Machine, home_env

SID = "5e1f0c2a-7b3d-4e8f-9a60-1c2d3e4f5a6b"
SIDES = """
[sides]
work = ["~/work"]
personal = ["~/personal"]
"""


def machine(tmp_path: Path, db_url: str) -> Machine:
    home = tmp_path / "home"
    (home / ".config" / "ondeck").mkdir(parents=True)
    (home / ".config" / "ondeck" / "config.toml").write_text(SIDES)
    for place in ("work/survey", "personal/일기"):
        (home / place).mkdir(parents=True)
    return Machine(home=home, env=home_env(home, database_url=db_url))


def entry(minute: int, cwd: str, *, sidechain: bool = False) -> str:
    return json.dumps(
        {
            "type": "assistant",
            "sessionId": SID,
            "timestamp": f"2026-12-01T10:{minute:02d}:00Z",
            "cwd": cwd,
            "isSidechain": sidechain,
            "version": "2.1.332",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "답 \ud800"}]},
        }
    )


def transcript(home: Path, folder: str, name: str, lines: list[str]) -> Path:
    path = home / ".claude" / "projects" / folder / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def listed(laptop: Machine) -> list[dict[str, Any]]:
    found = laptop.json("session", "list", "--status", "imported", "--json")
    assert isinstance(found, list)
    return found


def test_import_files_by_launch_folder_refuses_lines_and_exits_0(
    tmp_path: Path, db_url: str
) -> None:
    laptop = machine(tmp_path, db_url)
    work, personal = str(laptop.home / "work/survey"), str(laptop.home / "personal/일기")
    # The folder's name holds an escape sequence: the output shows it, a terminal runs none.
    transcript(
        laptop.home,
        "-work-\x1b[2J",
        SID,
        [entry(0, work), "[1]", "{cut", entry(1, personal, sidechain=True)],
    )
    done = laptop.ondeck("session", "import", "claude-code")
    assert done.returncode == 0, done.stderr
    assert "recorded 1, completed 0, unchanged 0, skipped 0, refused 0" in done.stdout
    assert "refused: 2 lines of " in done.stdout and "\x1b" not in done.stdout
    assert "-work-\\x1b[2J" in done.stdout
    assert "(line 2 is not a JSON object; line 3 is not JSON)" in done.stdout
    [session] = listed(laptop)
    assert (session["side"], session["cwd"]) == ("work", work)
    again = laptop.json("session", "import", "claude-code", "--json")
    assert (again["unchanged"], again["refused_lines"]) == (1, 2)


def test_an_import_that_could_read_nothing_exits_2_and_stores_nothing(
    tmp_path: Path, db_url: str
) -> None:
    laptop = machine(tmp_path, db_url)
    transcript(laptop.home, "-w", SID, ["[]", "{not json", "7"])
    done = laptop.ondeck("session", "import", "claude-code")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "no line of it could be read" in done.stdout
    [line] = done.stderr.strip().splitlines()
    assert "nothing could be read: 1 file refused" in line and "Traceback" not in done.stderr
    assert listed(laptop) == []
