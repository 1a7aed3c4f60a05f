"""`ondeck session import claude-code` on a client machine (issue 36 item 8): the transcripts
in the client's own ~/.claude/projects are read and classified there (its folders, its
rules, as its hooks do), and the records go to the server through the hooks' intake
(`POST /api/v1/sessions/records`), filed by the server's rules: a side the server does not
know sends the session to its inbox. The counts printed are a local import's; twice
changes nothing. A real server process and the real CLI in client mode, both stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.machines import Machine, Server

SERVER_SIDES = """
[sides]
work = ["~/work"]
personal = ["~/personal"]
"""
CLIENT_SIDES = """
[projects]
"~/work/survey" = "survey"

[sides]
work = ["~/work"]
personal = ["~/personal"]
lab = ["~/lab"]
"""
TOKEN = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
WORK = "5e1f0c2a-7b3d-4e8f-9a60-1c2d3e4f5a6b"
LAB = "6f2a1d3b-8c4e-4f90-a1b2-c3d4e5f6a7b8"


def configured(home: Path, text: str) -> None:
    (home / ".config" / "ondeck").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "ondeck" / "config.toml").write_text(text)


@pytest.fixture
def server(tmp_path: Path, db_url: str):  # type: ignore[no-untyped-def]
    home = tmp_path / "server"
    configured(home, SERVER_SIDES)
    with Server.start(home, database_url=db_url) as running:
        yield running


def entry(sid: str, minute: int, cwd: str, text: str, *, sidechain: bool = False) -> str:
    return json.dumps(
        {
            "type": "assistant",
            "sessionId": sid,
            "timestamp": f"2026-12-01T10:{minute:02d}:00Z",
            "cwd": cwd,
            "gitBranch": "main",
            "isSidechain": sidechain,
            "version": "2.1.332",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        }
    )


def transcripts(home: Path, second: str = "lab/x") -> None:
    """A work session whose subagent ran in the personal folder, and one in `second`."""
    for place in ("work/survey", "personal/일기", second):
        (home / place).mkdir(parents=True, exist_ok=True)
    work, personal, lab = (str(home / p) for p in ("work/survey", "personal/일기", second))
    folder = home / ".claude" / "projects" / "-work-survey"
    folder.mkdir(parents=True)
    (folder / f"{WORK}.jsonl").write_text(
        "\n".join(
            [
                entry(WORK, 0, work, "시작"),
                "[1, 2]",  # a line that is no entry: refused, the rest read
                entry(WORK, 1, personal, "서브에이전트", sidechain=True),
                entry(WORK, 2, work, f"끝났어요 {TOKEN} \ud800"),
            ]
        )
        + "\n"
    )
    (folder / f"{LAB}.jsonl").write_text(entry(LAB, 0, lab, "실험") + "\n")


def imported(server: Server) -> dict[str, dict[str, Any]]:
    found = server.json("session", "list", "--json", "--limit", "50")
    return {s["external_id"]: s for s in found}


def test_a_client_imports_its_own_transcripts_through_the_server(
    server: Server, tmp_path: Path
) -> None:
    home = tmp_path / "laptop"
    configured(home, CLIENT_SIDES)
    transcripts(home)
    laptop: Machine = server.client(home, server.token("laptop"))
    done = laptop.ondeck("session", "import", "claude-code")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "recorded 2, completed 0, unchanged 0, skipped 0, refused 0" in done.stdout
    assert "refused: 1 line of " in done.stdout and "(line 2 is not a JSON object)" in done.stdout
    found = imported(server)
    assert set(found) == {WORK, LAB}
    work = server.json("session", "show", str(found[WORK]["id"]), "--json")
    # Filed where it was launched (the client's folder, by the client's rules), not where
    # its subagent ran; its text scrubbed, the lone surrogate mended.
    assert (work["side"], work["project"], work["unclassified"]) == ("work", "survey", False)
    assert work["cwd"] == str(home / "work" / "survey") and work["imported"] is True
    assert work["last_word"].startswith("끝났어요") and TOKEN not in work["last_word"]
    assert work["last_word"].endswith("\ufffd") and work["agent_version"] == "2.1.332"
    assert work["imported_from"].endswith(f"{WORK}.jsonl")
    # A side the server does not know: its inbox, as a hook's record of it would be.
    lab = found[LAB]
    assert lab["unclassified"] is True and lab["side"] is None
    again = laptop.ondeck("session", "import", "claude-code", "--json")
    assert again.returncode == 0, again.stderr
    counts = json.loads(again.stdout)
    assert (counts["sessions"], counts["unchanged"], counts["refused_lines"]) == (0, 2, 1)
    assert set(imported(server)) == {WORK, LAB}


def test_a_client_import_the_server_cannot_take_is_refused_per_session(
    server: Server, tmp_path: Path
) -> None:
    # A token held to one side records that side's sessions only: a personal one is refused
    # alone, with the server's reason, and the run goes on.
    home = tmp_path / "laptop"
    configured(home, CLIENT_SIDES)
    transcripts(home, "personal/실험")
    done = server.ondeck("token", "create", "work-laptop", "--scope", "write", "--side", "work")
    assert done.returncode == 0, done.stderr
    laptop = server.client(home, done.stdout.strip())
    ran = laptop.ondeck("session", "import", "claude-code")
    assert ran.returncode == 0, (ran.stdout, ran.stderr)
    assert "recorded 1, completed 0, unchanged 0, skipped 0, refused 1" in ran.stdout
    assert "the server: " in ran.stdout and "records side 'work' only" in ran.stdout
    assert set(imported(server)) == {WORK}


def test_a_client_import_never_files_into_another_database_than_its_hooks(
    server: Server, tmp_path: Path
) -> None:
    """The laptop's hooks capture for one database (the id the first server met answered
    with); a server at that address now serving another refuses the import (409) in one
    line (exit 3, a conflict) and stores nothing: a session is never split between two stores."""
    from ondeck.host.channel import write_known

    home = tmp_path / "laptop"
    configured(home, CLIENT_SIDES)
    transcripts(home)
    laptop: Machine = server.client(home, server.token("laptop"))
    data = home / ".local" / "share" / "ondeck"
    write_known(str(data), f"server {server.url}", "0123456789abcdef0123456789abcdef")
    done = laptop.ondeck("session", "import", "claude-code")
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "another database" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert imported(server) == {}
