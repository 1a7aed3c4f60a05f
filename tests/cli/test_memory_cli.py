"""`ondeck note …`, `ondeck handoff`, `ondeck recall`: the side is the directory's (as the
hooks decide it) unless given; every failure one line with its exit code, nothing changed."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import time_machine
from sqlalchemy import func, select

from ondeck.db.engine import make_engine
from ondeck.db.tables import events, notes
from ondeck.entrypoints.cli import run
from support.hooks import new_repo
from support.memory import make_session

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


@pytest.fixture
def ondeck(db_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ONDECK_TZ", "UTC")

    def call(*args: str, at: datetime = NOW, cwd: Path | None = None) -> tuple[int, str, str]:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        with time_machine.travel(at, tick=False):
            code = run(["--db", db_url, *args])
        out, err = capsys.readouterr()
        return code, out, err

    return call


def ok_json(ondeck: Any, *args: str, **kw: Any) -> Any:
    code, out, err = ondeck(*args, "--json", **kw)
    assert code == 0, err
    return json.loads(out)


def count(db_url: str) -> tuple[int, int]:
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            return (
                conn.execute(select(func.count()).select_from(notes)).scalar_one(),
                conn.execute(select(func.count()).select_from(events)).scalar_one(),
            )
    finally:
        engine.dispose()


def test_a_note_s_life_from_the_command_line(ondeck: Any, tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "ondeck")
    added = ok_json(
        ondeck, "note", "add", "배포는 목요일까지", "--kind", "decision", "--pin", cwd=repo
    )
    assert (added["kind"], added["project"], added["pinned"]) == ("decision", "ondeck", True)
    wide = ok_json(ondeck, "note", "add", "lint before commit", "--whole-side", cwd=repo)
    assert wide["project"] is None
    listed = ok_json(ondeck, "note", "list")
    assert [n["id"] for n in listed] == [wide["id"], added["id"]]
    replaced = ok_json(ondeck, "note", "supersede", str(added["id"]), "배포는 수요일까지")
    assert replaced["superseded"]["status"] == "superseded"
    assert replaced["note"]["supersedes"] == added["id"]
    wrong = ok_json(ondeck, "note", "wrong", str(wide["id"]), "--reason", "we lint in CI")
    assert wrong["status"] == "wrong"
    assert [n["id"] for n in ok_json(ondeck, "note", "list")] == [replaced["note"]["id"]]
    assert len(ok_json(ondeck, "note", "list", "--all")) == 3
    shown = ok_json(ondeck, "note", "show", str(added["id"]))
    assert [e["kind"] for e in shown["history"]] == ["note.added", "note.superseded"]
    code, out, _ = ondeck("note", "show", str(added["id"]))
    assert code == 0 and "SUPERSEDED by note" in out and "배포는 목요일까지" in out
    code, out, _ = ondeck("recall", "배포")
    assert code == 0 and f"[note {replaced['note']['id']}]" in out and "목요일" not in out
    code, out, _ = ondeck("recall", "배포", "--all")
    assert "SUPERSEDED" in out and "목요일" in out
    edited = ok_json(ondeck, "note", "edit", str(replaced["note"]["id"]), "--expires", "2026-07-01")
    assert edited["expires_on"] == "2026-07-01"
    pinned = ok_json(ondeck, "note", "unpin", str(replaced["note"]["id"]))
    assert pinned["pinned"] is False


def test_a_query_word_may_start_with_a_dash(ondeck: Any) -> None:
    """`ondeck recall -minus` searches for "-minus" (recall has no short options), unquoted
    words make one query, and recall's own options still work among them."""
    note = ok_json(ondeck, "note", "add", "git log -minus 배포 option")
    for words in (["-minus"], ["git", "-minus"], ["-minus", "--limit", "5"], ["--", "-minus"]):
        code, out, err = ondeck("recall", "--json", *words)
        assert code == 0, err
        assert [r["id"] for r in json.loads(out)["results"]] == [note["id"]], words
    code, _, err = ondeck("recall")
    assert code == 2 and "Missing argument" in err


def test_recall_explain_says_which_words_matched_in_which_form_and_the_score(
    ondeck: Any,
) -> None:
    ok_json(ondeck, "note", "add", "We deployed the billing service on Thursday")
    ok_json(ondeck, "note", "add", "배포는 목요일에 한다")
    code, out, err = ondeck("recall", "deploying", "billing", "--explain")
    assert code == 0, err
    whys = [line.strip() for line in out.splitlines() if line.strip().startswith("why:")]
    assert len(whys) == 2, out
    # The English note first: it matched both words, each in the form the note has it.
    assert whys[0].startswith("why: score ")
    assert "deploying → deployed (+" in whys[0] and "billing → billing (+" in whys[0]
    # The Korean one by the glossary (배포 is deploy), one word only.
    assert "deploying → 배포는 (+" in whys[1] and "billing" not in whys[1]
    score = [float(w.split("score ")[1].split(":")[0]) for w in whys]
    assert score[0] > score[1] > 0
    code, out, _ = ondeck("recall", "deploying", "billing")
    assert code == 0 and "why:" not in out, "only with --explain"


def test_delete_asks_and_without_a_terminal_needs_yes(ondeck: Any, db_url: str) -> None:
    note = ok_json(ondeck, "note", "add", "temporary")
    before = count(db_url)
    code, _, err = ondeck("note", "delete", str(note["id"]))
    assert code == 2 and "--yes" in err and err.count("\n") == 1
    assert count(db_url) == before
    gone = ok_json(ondeck, "note", "delete", str(note["id"]), "--yes")
    assert gone["id"] == note["id"]
    assert count(db_url) == (before[0] - 1, before[1] + 1)


@pytest.mark.parametrize(
    "args, code, words",
    [
        (("note", "add", ""), 2, "must not be empty"),
        (("note", "add", "x" * 8001), 2, "at most 8000"),
        (("note", "add", "x", "--kind", "memo"), 2, "not one of"),
        (("note", "add", "x", "--kind", "handoff"), 2, "ondeck handoff"),
        (("note", "add", "x", "--expires", "2026-13-01"), 2, "not a date"),
        (("note", "add", "x", "--expires", "2020-01-01"), 2, "before today"),
        (("note", "add", "x", "--project", "no spaces"), 2, "not valid"),
        (("note", "add", "x", "--side", "work"), 2, "no sides are configured"),
        (("note", "show", "abc"), 2, "not valid"),
        (("note", "show", "99999999999999999999999"), 2, "not valid"),
        (("note", "show", "42"), 4, "no note 42"),
        (("note", "wrong", "42"), 2, "reason"),
        (("handoff", "words", "--session", "nope-nope-nope"), 4, "no session"),
        (("recall", "the"), 2, "nothing to look for"),
        (("recall", "x" * 300), 2, "at most 200"),
        (("recall", "deploy", "--kind", "memo"), 2, "not one of"),
        (("recall", "deploy", "--limit", "0"), 2, "limit"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    ondeck: Any, db_url: str, args: tuple[str, ...], code: int, words: str
) -> None:
    before = count(db_url)
    got, out, err = ondeck(*args)
    assert got == code, err
    assert words in err and err.count("\n") == 1 and err.startswith("ondeck: error:")
    assert "Traceback" not in err + out
    assert count(db_url) == before


def test_sides_come_from_the_directory_and_never_mix(
    ondeck: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, own = tmp_path / "work", tmp_path / "own"
    api, blog = new_repo(work / "api"), new_repo(own / "blog")
    monkeypatch.setenv("ONDECK_SIDES", json.dumps({"work": [str(work)], "personal": [str(own)]}))
    w = ok_json(ondeck, "note", "add", "deploy at 10", cwd=api)
    p = ok_json(ondeck, "note", "add", "deploy the blog", cwd=blog)
    assert (w["side"], w["project"], p["side"], p["project"]) == ("work", "api", "personal", "blog")
    found = ok_json(ondeck, "recall", "deploy", cwd=api)
    assert [r["id"] for r in found["results"]] == [w["id"]]
    found = ok_json(ondeck, "recall", "deploy", "--side", "personal", cwd=api)
    assert [r["id"] for r in found["results"]] == [p["id"]]
    code, _, err = ondeck("note", "show", str(p["id"]), cwd=api)
    assert code == 4 and "in side work" in err
    code, _, err = ondeck("recall", "deploy", cwd=tmp_path)
    assert code == 2 and "belongs to no side" in err and "--unclassified" in err
    code, _, err = ondeck("note", "add", "x", cwd=tmp_path)
    assert code == 2 and "give --side" in err


def test_handoff_is_written_for_the_session_with_the_head_it_was_written_at(
    ondeck: Any, db_url: str, tmp_path: Path
) -> None:
    from support.hooks import git

    repo = new_repo(tmp_path / "ondeck", commits=2)
    engine = make_engine(db_url)
    with engine.begin() as conn:
        make_session(conn, NOW, external_id="abcdef12-session", project="ondeck", status="open")
    engine.dispose()
    first = ok_json(ondeck, "handoff", "next: the brief", "--session", "abcdef12", cwd=repo)
    assert first["kind"] == "handoff" and first["origin"] == "agent:abcdef12-session"
    assert first["head"] == git(repo, "rev-parse", "HEAD") and first["branch"] == "main"
    again = ok_json(ondeck, "handoff", "next: recall", "--session", "abcdef12", cwd=repo)
    assert again["id"] == first["id"] and again["text"] == "next: recall"
    code, out, _ = ondeck("handoff", "once more", "--session", "abcdef12", cwd=repo)
    assert code == 0 and out.startswith("replaced the handoff of session")


def test_the_session_start_hook_briefs_the_next_session_of_the_project(
    db_url: str, tmp_path: Path
) -> None:
    """Real hooks in a real repository: a session writes its handoff, ends; a commit lands;
    the next session's start hook shows the handoff, its age, HEAD and the commit on top,
    within the 9,000 characters."""
    import os

    from support.hooks import commit_file, git, payload, run_hook
    from support.pg import free_port

    repo = new_repo(tmp_path / "api", commits=2)
    env = {
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_PORT": str(free_port()),  # no server: the hook reads the database
        "ONDECK_TZ": "UTC",
        "ONDECK_DATA_DIR": str(tmp_path / "data"),
    }
    first = payload("start", session_id="first-session-0001", cwd=str(repo))
    done = run_hook("session-start", first, env)
    assert done.returncode == 0, done.stderr
    code = subprocess_ondeck(
        ["handoff", "next: finish the brief", "--session", "first-session-0001"], env, repo
    )
    assert code.returncode == 0, code.stderr
    ended = payload("end", session_id="first-session-0001", cwd=str(repo))
    assert run_hook("session-end", ended, env).returncode == 0
    commit_file(repo, "brief.py", "x", "add the brief")
    second = payload("start", session_id="second-session-0002", cwd=str(repo))
    done = run_hook("session-start", second, env)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) < 9_000
    text = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    head = git(repo, "rev-parse", "HEAD~1")
    assert "## Memory" in text and "next: finish the brief" in text
    assert f"at main {head[:12]}" in text and "1 commit on top" in text
    assert "add the brief" in text
    assert "This session: session 2 (second-session-0002)" in text
    assert os.environ.get("ONDECK_DATABASE_URL") != db_url


def subprocess_ondeck(args: list[str], env: dict[str, str], cwd: Path):  # type: ignore[no-untyped-def]
    import os
    import subprocess

    from support.hooks import ONDECK

    return subprocess.run(
        [ONDECK, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
        cwd=cwd,
        check=False,
    )


def test_export_and_import_from_the_command_line(ondeck: Any, db_url: str, tmp_path: Path) -> None:
    # Outside any repository: the notes have no project.
    ok_json(ondeck, "note", "add", "배포 노트", "--pin", cwd=tmp_path)
    ok_json(ondeck, "note", "add", "a decision", "--kind", "decision")
    code, out, err = ondeck("export", "--format", "jsonl")
    assert code == 0, err
    lines = out.splitlines()
    assert json.loads(lines[0])["format"] == "ondeck-memory" and len(lines) == 4
    assert json.loads(lines[-1]) == {"type": "end", "sessions": 0, "notes": 2,
                                     "sha256": json.loads(lines[-1])["sha256"]}  # fmt: skip
    target = tmp_path / "memory.jsonl"
    code, _, err = ondeck("export", "--format", "jsonl", "--out", str(target))
    assert code == 0 and target.read_text(encoding="utf-8").splitlines() == lines
    assert not (tmp_path / "memory.jsonl.partial").exists()
    code, _, err = ondeck("export", "--format", "jsonl", "--out", str(target))
    assert code == 2 and "exists" in err
    code, _, err = ondeck("export", "--format", "markdown")
    assert code == 2 and "--out DIR" in err
    code, out, err = ondeck("export", "--format", "markdown", "--out", str(tmp_path / "md"))
    assert code == 0, err
    assert "a decision" in (tmp_path / "md" / "_side-wide.md").read_text(encoding="utf-8")
    again = ok_json(ondeck, "import", str(target))
    assert again == {"notes": 0, "sessions": 0, "skipped": 2, "updated": 0, "warnings": [],
                     "changed": {"wrong": [], "superseded": [], "expired": [], "updated": []},
                     "kept": []}  # fmt: skip
    before = count(db_url)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"format": "ondeck-memory", "version": 1}\n\xff\xfe\n')
    for path, words in (
        (bad, "not UTF-8"),
        (tmp_path, "not a file"),
        (tmp_path / "nope.jsonl", "not a file"),
    ):
        code, _, err = ondeck("import", str(path))
        assert code == 2 and words in err and err.count("\n") == 1, err
    assert count(db_url) == before


def test_the_hook_gets_the_same_brief_from_a_running_server(
    db_url: str, tmp_path: Path, engine: Any
) -> None:
    """With sides configured and a server of the same database running, the hook asks the
    server: the brief it gets is its side's and project's, not "no side is known"."""
    import os
    from zoneinfo import ZoneInfo

    from ondeck.memory import notes as notes_svc
    from support.hooks import payload, run_hook
    from support.pg import free_port
    from support.served import serving

    work = tmp_path / "work"
    repo = new_repo(work / "api")
    sides = {"work": [str(work)], "personal": [str(tmp_path / "own")]}
    with engine.begin() as conn:
        notes_svc.add_note(
            conn, NOW, text="work: deploy at ten", side="work", project="api", sides=sides,
            zone=ZoneInfo("UTC"), pinned=True, actor="t",
        )  # fmt: skip
        notes_svc.add_note(
            conn, NOW, text="personal: dentist", side="personal", project="api", sides=sides,
            zone=ZoneInfo("UTC"), pinned=True, actor="t",
        )  # fmt: skip
    port = free_port()
    env = {
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_PORT": str(port),
        "ONDECK_TZ": "UTC",
        "ONDECK_DATA_DIR": str(tmp_path / "data"),
        "ONDECK_SIDES": json.dumps(sides),
        "ONDECK_DEBUG": "1",
    }
    url = f"http://127.0.0.1:{port}"
    with serving({**os.environ, **env}, "--port", str(port), "--no-jobs", url=url):
        done = run_hook(
            "session-start", payload("start", session_id="srv-0001", cwd=str(repo)), env
        )
    assert done.returncode == 0 and ".sock\n" in done.stderr, (
        done.stderr
    )  # the server, by its socket
    text = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "work: deploy at ten" in text and "dentist" not in text
    assert "no side is known" not in text


def test_an_export_from_a_directory_holds_that_directorys_side_only(
    ondeck: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every side only with --all-sides; from a directory of no side, the
    export says how to choose."""
    work, own = tmp_path / "work", tmp_path / "own"
    api, blog = new_repo(work / "api"), new_repo(own / "blog")
    monkeypatch.setenv("ONDECK_SIDES", json.dumps({"work": [str(work)], "personal": [str(own)]}))
    ok_json(ondeck, "note", "add", "deploy at 10", "--pin", cwd=api)
    ok_json(ondeck, "note", "add", "이혼 변호사에게 전화", "--pin", cwd=blog)

    def exported(*args: str, cwd: Path) -> list[dict[str, Any]]:
        code, out, err = ondeck("export", "--format", "jsonl", *args, cwd=cwd)
        assert code == 0, err
        return [json.loads(line) for line in out.splitlines()]

    from_work = exported(cwd=api)
    assert from_work[0]["side"] == "work"
    assert [d["text"] for d in from_work if d.get("type") == "note"] == ["deploy at 10"]
    from_home = [d["text"] for d in exported(cwd=blog) if d.get("type") == "note"]
    assert from_home == ["이혼 변호사에게 전화"]
    every = [d["text"] for d in exported("--all-sides", cwd=api) if d.get("type") == "note"]
    assert sorted(every) == ["deploy at 10", "이혼 변호사에게 전화"]
    named = [d["text"] for d in exported("--side", "personal", cwd=api) if d.get("type") == "note"]
    assert named == ["이혼 변호사에게 전화"]
    code, _, err = ondeck("export", "--format", "jsonl", cwd=tmp_path)
    assert code == 2 and "belongs to no side" in err and "--all-sides" in err
    code, _, err = ondeck("export", "--format", "markdown", "--out", str(tmp_path / "md"), cwd=api)
    assert code == 0, err
    assert [p.name for p in (tmp_path / "md").iterdir()] == ["work"]
    code, _, err = ondeck("export", "--format", "jsonl", "--side", "work", "--all-sides", cwd=api)
    assert code == 2 and "either --side or --all-sides" in err
