"""Client mode for the session and memory commands: `ondeck note …`, `handoff`,
`recall`, `session list|show|move`, `export`/`import` on a machine with only
ONDECK_SERVER_URL and a device token print the same `--json` as the same command on the
server's machine; sides never mix; a read token reads but cannot write; the client imports
no database machinery."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.hooks import payload, run_hook
from support.machines import Machine, Server

CONFIG = """
[projects]
"~/work/site" = "site"

[sides]
work = ["~/work"]
personal = ["~/personal"]
"""
SESSION = "5a1c2d3e-5b6a-4c7d-8e9f-0123456789ab"


def configured(home: Path) -> None:
    folder = home / ".config" / "ondeck"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(CONFIG)
    for place in ("work/site", "personal/diary"):
        (home / place).mkdir(parents=True, exist_ok=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    home = tmp_path_factory.mktemp("server")
    configured(home)
    with Server.start(home) as running:
        start = payload("start", session_id=SESSION, cwd=str(home / "work" / "site"))
        done = run_hook("session-start", start, running.env)
        assert done.returncode == 0, done.stderr
        stop = payload("stop", session_id=SESSION, cwd=str(home / "work" / "site"))
        assert run_hook("stop", stop, running.env).returncode == 0
        yield running


@pytest.fixture(scope="module")
def laptop(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Machine:
    home = tmp_path_factory.mktemp("laptop")
    configured(home)
    return server.client(home, server.token("laptop"))


def at(machine: Machine, place: str, *args: str) -> subprocess.CompletedProcess[str]:
    return machine.ondeck(*args, cwd=machine.home / place)


def js(machine: Machine, place: str, *args: str) -> Any:
    done = at(machine, place, *args, "--json")
    assert done.returncode == 0, (args, done.stderr)
    return json.loads(done.stdout)


def test_a_note_s_life_from_the_client(server: Server, laptop: Machine) -> None:
    made = js(laptop, "work/site", "note", "add", "deploys only Mon-Thu", "--kind", "decision")
    assert (made["side"], made["project"], made["origin"]) == ("work", "site", "person")
    note = str(made["id"])
    assert js(server, ".", "note", "show", note, "--side", "work")["text"] == made["text"]
    pinned = js(laptop, "work/site", "note", "pin", note)
    assert pinned["pinned"] is True
    listed = js(laptop, "work/site", "note", "list")
    assert listed == js(server, ".", "note", "list", "--side", "work")
    assert note in [str(n["id"]) for n in listed]
    replaced = js(laptop, "work/site", "note", "supersede", note, "deploys only Mon-Wed")
    new = str(replaced["note"]["id"])
    assert replaced["superseded"]["superseded_by"] == replaced["note"]["id"]
    wrong = js(laptop, "work/site", "note", "wrong", new, "--reason", "no freeze this year")
    assert wrong["status"] == "wrong"
    shown = js(laptop, "work/site", "note", "show", f"#{new}")
    assert shown == js(server, ".", "note", "show", new, "--side", "work")
    decisions = js(laptop, "work/site", "note", "list", "--kind", "Decision", "--all")
    assert {n["kind"] for n in decisions} == {"decision"} and len(decisions) == 2
    assert [e["kind"] for e in shown["history"]][-1] == "note.wrong"
    # The human lines are the server's too.
    here = at(laptop, "work/site", "note", "show", new)
    there = server.ondeck("note", "show", new, "--side", "work")
    assert here.returncode == 0 and here.stdout.splitlines()[:3] == there.stdout.splitlines()[:3]
    # A refusal keeps its exit code: the note is not active any more.
    again = at(laptop, "work/site", "note", "wrong", new, "--reason", "twice")
    assert again.returncode == 3 and again.stderr.count("\n") == 1, again.stderr
    empty = at(laptop, "work/site", "note", "wrong", note)
    assert empty.returncode != 0 and "Traceback" not in empty.stderr


def test_a_handoff_from_the_client(server: Server, laptop: Machine) -> None:
    written = js(laptop, "work/site", "handoff", "next: wire the brief", "--session", SESSION)
    assert written["kind"] == "handoff" and written["project"] == "site"
    again = at(laptop, "work/site", "handoff", "next: the docs", "--session", SESSION[:8])
    assert again.returncode == 0 and again.stdout.startswith("replaced the handoff of session")
    shown = js(server, ".", "note", "show", str(written["id"]), "--side", "work")
    assert shown["text"] == "next: the docs"


def _without_age(found: dict[str, Any]) -> dict[str, Any]:
    return {**found, "results": [{**r, "age": None} for r in found["results"]]}


def test_recall_from_the_client_keeps_sides_apart(server: Server, laptop: Machine) -> None:
    for place, text in (
        ("work/site", "배포 준비 끝남: the deploy checklist is done"),
        ("personal/diary", "배포 말고 휴가 계획"),
    ):
        assert at(laptop, place, "note", "add", text).returncode == 0
    for query in ("배포", "deploy checklist"):
        here = js(laptop, "work/site", "recall", query)
        there = js(server, ".", "recall", query, "--side", "work")
        assert _without_age(here) == _without_age(there)
        assert here["results"] and all(r["side"] == "work" for r in here["results"])
        # Why each matched crosses the API too (its model once dropped these fields).
        assert all(r["score"] > 0 and r["matched"] for r in here["results"])
        assert not any("휴가" in r["snippet"] for r in here["results"])
    personal = js(laptop, "personal/diary", "recall", "배포")
    assert [r["snippet"] for r in personal["results"]] == ["배포 말고 휴가 계획"]
    lines = at(laptop, "work/site", "recall", "배포")
    assert lines.returncode == 0 and "준비 끝남" in lines.stdout and "휴가" not in lines.stdout


def test_sessions_from_the_client(server: Server, laptop: Machine) -> None:
    listed = js(laptop, ".", "session", "list")
    assert listed == js(server, ".", "session", "list")
    assert [s["external_id"] for s in listed] == [SESSION]
    shown = js(laptop, ".", "session", "show", SESSION[:8])
    assert shown == js(server, ".", "session", "show", SESSION[:8])
    assert shown["side"] == "work" and shown["project"] == "site"
    table = at(laptop, ".", "session", "show", SESSION[:8])
    assert table.stdout == server.ondeck("session", "show", SESSION[:8]).stdout
    moved = at(laptop, ".", "session", "move", SESSION[:8], "--side", "personal")
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.strip().endswith("work/site -> personal/site"), moved.stdout
    assert js(server, ".", "session", "list")[0]["side"] == "personal"
    back = js(laptop, ".", "session", "move", SESSION[:8], "--side", "work")
    assert back == js(server, ".", "session", "list")[0]
    missing = at(laptop, ".", "session", "show", "no-such-session")
    assert missing.returncode == 4 and missing.stderr.count("\n") == 1, missing.stderr


def test_export_then_import_through_the_client(server: Server, laptop: Machine) -> None:
    # U+2028 inside a text: JSON keeps it as it is, and the export's lines break at "\n" only.
    made = at(
        laptop, "work/site", "note", "add", "exported: 배포\u2028runbook", "--kind", "decision"
    )
    assert made.returncode == 0, made.stderr
    out = laptop.home / "memory.jsonl"
    done = at(laptop, ".", "export", "--format", "jsonl", "--out", str(out), "--all-sides")
    assert done.returncode == 0, done.stderr
    mine = out.read_text().split("\n")[:-1]
    assert any("\u2028" in line for line in mine)
    theirs = server.ondeck("export", "--format", "jsonl", "--all-sides").stdout.split("\n")[:-1]
    # The same records (the header's time, and so the end line's digest, differ).
    assert mine[1:-1] == theirs[1:-1] and len(mine) >= 3
    folder = laptop.home / "md"
    md = at(laptop, ".", "export", "--format", "markdown", "--out", str(folder), "--all-sides")
    assert md.returncode == 0, md.stderr
    assert (folder / "work" / "site.md").is_file()
    first = next(json.loads(line) for line in mine if '"type": "note"' in line)
    gone = at(laptop, ".", "note", "delete", str(first["id"]), "--side", first["side"], "--yes")
    assert gone.returncode == 0, gone.stderr
    notes_in_file = sum('"type": "note"' in line for line in mine)
    counts = js(laptop, ".", "import", str(out))
    assert counts == {
        "notes": 1,
        "sessions": 0,
        "skipped": notes_in_file - 1,
        "updated": 0,
        "changed": {"wrong": [], "superseded": [], "expired": [], "updated": []},
        "kept": [],
        "warnings": [],
    }
    again = js(laptop, ".", "import", str(out))
    assert again == {
        "notes": 0,
        "sessions": 0,
        "skipped": notes_in_file,
        "updated": 0,
        "changed": {"wrong": [], "superseded": [], "expired": [], "updated": []},
        "kept": [],
        "warnings": [],
    }
    bad = laptop.home / "bad.jsonl"
    bad.write_text("\n".join([*mine, "{not json"]) + "\n")
    refused = at(laptop, ".", "import", str(bad))
    assert refused.returncode == 2 and f"line {len(mine) + 1}:" in refused.stderr
    # The server takes a request body of 1 MiB at most: a bigger file is refused, one line.
    big = laptop.home / "big.jsonl"
    big.write_text("\n".join([*mine, *([" " * 1000] * 1200)]) + "\n")
    refused = at(laptop, ".", "import", str(big))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "1 MiB" in refused.stderr


def test_a_read_token_reads_but_cannot_write(server: Server, tmp_path: Path) -> None:
    configured(tmp_path)
    reader = server.client(tmp_path, server.token("reader", "read"))
    assert at(reader, "work/site", "recall", "deploy").returncode == 0
    assert at(reader, "work/site", "note", "list").returncode == 0
    assert at(reader, ".", "session", "list").returncode == 0
    refused = at(reader, "work/site", "note", "add", "not allowed")
    assert refused.returncode == 6 and refused.stderr.count("\n") == 1, refused.stderr


def test_client_recall_imports_no_database_machinery(laptop: Machine) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ondeck", "recall", "배포", "--json"],
        env=laptop.env,
        cwd=laptop.home / "work" / "site",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert modules, "no import times"
    loaded = {name.split(".")[0] for name in modules}
    assert not loaded & {"sqlalchemy", "psycopg", "sqlite3", "_sqlite3"}, sorted(
        loaded & {"sqlalchemy", "psycopg", "sqlite3", "_sqlite3"}
    )


@pytest.mark.parametrize(
    "args",
    [
        ("note", "show", "abc"),
        ("note", "list", "--kind", "bogus"),
        ("note", "add", "x", "--kind", "handoff"),
        ("note", "edit", "1", "--expires", "someday"),
        ("recall", "   "),
        ("recall", "x", "--kind", "bogus"),
        ("session", "move", SESSION[:8], "--side", "elsewhere"),
        ("session", "list", "--status", "bogus"),
        ("export", "--format", "jsonl", "--side", "elsewhere"),
        ("import", "/nonexistent.jsonl"),
    ],
)
def test_bad_input_from_the_client_is_one_line(laptop: Machine, args: tuple[str, ...]) -> None:
    done = at(laptop, "work/site", *args)
    assert done.returncode == 2, (args, done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr


def test_an_id_with_slashes_reaches_no_other_route(laptop: Machine) -> None:
    done = at(laptop, "work/site", "note", "delete", "../../tasks/1", "--yes")
    assert done.returncode in (2, 4) and done.stderr.count("\n") == 1, done.stderr


def test_edit_unpin_and_delete_from_the_client(server: Server, laptop: Machine) -> None:
    made = js(laptop, "work/site", "note", "add", "VPN: split tunnel", "--pin")
    note = str(made["id"])
    edited = js(
        laptop, "work/site", "note", "edit", note, "--text", "VPN: full tunnel",
        "--expires", "2099-01-01",
    )  # fmt: skip
    assert (edited["text"], edited["expires_on"]) == ("VPN: full tunnel", "2099-01-01")
    cleared = js(laptop, "work/site", "note", "edit", note, "--expires", "none", "--whole-side")
    assert (cleared["expires_on"], cleared["project"]) == (None, None)
    assert js(laptop, "work/site", "note", "unpin", note)["pinned"] is False
    moved = js(laptop, "work/site", "note", "edit", note, "--to-side", "personal")
    shown = js(server, ".", "note", "show", note, "--side", "personal")
    assert moved["side"] == "personal"
    assert moved == {k: v for k, v in shown.items() if k != "history"}
    assert at(laptop, "work/site", "note", "show", note).returncode == 4  # another side now
    gone = js(laptop, "personal/diary", "note", "delete", note, "--yes")
    assert gone["id"] == made["id"]
    asked = at(laptop, "personal/diary", "note", "delete", note)
    assert asked.returncode == 4 and asked.stderr.count("\n") == 1
