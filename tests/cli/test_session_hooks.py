"""The Claude Code hooks as real processes, fed the payloads of tests/fixtures/hooks, in a real
git repository: a whole session, the same event twice, and a database that goes away and
comes back (the spool). Both stores."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from ondeck.core import clock
from ondeck.core.errors import NotFound
from ondeck.db.engine import reading
from ondeck.db.tables import events, hook_receipts, session_compactions, sessions
from ondeck.sessions import records as svc
from ondeck.work import backlog, backlog_leases
from support.hooks import SESSION_ID, commit_file, git, new_repo, payload, run_hook, serverless_env
from support.pg import free_port

# The keys Claude Code reads in a hook's JSON output, by event (its hooks reference: the
# common fields, and each event's own); anything else it logs as "unrecognized keys".
COMMON_KEYS = {"continue", "stopReason", "suppressOutput", "systemMessage"}
CLAUDE_CODE_KEYS = {
    "session-start": COMMON_KEYS | {"hookSpecificOutput"},
    "stop": COMMON_KEYS | {"decision", "reason"},
    "post-compact": COMMON_KEYS,
    "session-end": COMMON_KEYS,
}


class Session:
    """One Claude Code session's hooks, as Claude Code runs them."""

    def __init__(self, tmp_path: Path, db_url: str, repo: Path) -> None:
        self.repo = repo
        self.data = tmp_path / "data"
        self.transcript = tmp_path / "transcript.jsonl"
        self.transcript.write_text("")
        self.env = serverless_env(db_url, self.data)

    def hook(self, verb: str, name: str, **changes: Any) -> Any:
        # Claude Code writes the turn to the transcript before it runs the turn's hooks.
        with self.transcript.open("a") as handle:
            handle.write(json.dumps({"turn": name, **changes}) + "\n")
        data = payload(name, cwd=str(self.repo), transcript_path=str(self.transcript), **changes)
        return self.replay(verb, data)

    def replay(self, verb: str, data: dict[str, Any]) -> Any:
        done = run_hook(verb, data, self.env)
        assert done.returncode == 0, done.stderr
        self.last = data
        said = json.loads(done.stdout) if done.stdout.strip() else None
        if said is not None:
            unknown = set(said) - CLAUDE_CODE_KEYS[verb]
            assert not unknown, f"hook {verb} printed keys Claude Code does not read: {unknown}"
        return said

    def spooled(self) -> list[str]:
        spool = self.data / "spool"
        return [
            line
            for name in ("events.jsonl", "draining.jsonl")
            if (spool / name).exists()
            for line in (spool / name).read_text().splitlines()
            if line.strip()
        ]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = new_repo(tmp_path / "site")
    commit_file(repo, "README.md", "site\n", "start")
    return repo


def counts(engine: Engine) -> dict[str, int]:
    with reading(engine) as conn:  # a reader: it does not wait for a writer's lock
        return {
            t.name: conn.execute(select(func.count()).select_from(t)).scalar_one()
            for t in (sessions, session_compactions, hook_receipts, events)
        }


def session_kinds(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(
            conn.execute(
                select(events.c.kind)
                .where(events.c.kind.startswith("session."))
                .order_by(events.c.id)
            ).scalars()
        )


def test_a_whole_session_from_real_hook_payloads(
    engine: Engine, db_url: str, tmp_path: Path, repo: Path
) -> None:
    session = Session(tmp_path, db_url, repo)
    start_head = git(repo, "rev-parse", "HEAD")
    started = session.hook("session-start", "start")
    context = started["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("# On deck") and "project site" in context
    with engine.begin() as conn:
        task = backlog.create_task(conn, clock.now(), title="retry uploads", actor="cli")
        backlog_leases.claim_task(
            conn, clock.now(), task.id, owner=f"claude:{SESSION_ID}", actor="cli"
        )

    assert session.hook("stop", "stop", last_assistant_message="first turn") is None
    commit_file(repo, "jobs/upload.py", "retry = 3\n", "업로드 재시도 (retry uploads)")
    commit_file(repo, ".env", "API_KEY=abc\n", "config")
    (repo / "notes.txt").write_text("not committed yet\n")
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    assert session.hook("stop", "stop", last_assistant_message=f"Done; key {key} rotated.") is None
    assert session.hook("post-compact", "compact") is None
    assert session.hook("session-end", "end") is None, "an end that went well says nothing"

    with engine.connect() as conn:
        detail = svc.session_detail(conn, SESSION_ID)
    s = detail.session
    assert (s.status, s.start_source, s.end_reason) == ("ended", "startup", "prompt_input_exit")
    assert (s.project, s.project_rule, s.git_root, s.branch) == ("site", "git", str(repo), "main")
    assert s.start_head == start_head and s.end_head == git(repo, "rev-parse", "HEAD")
    assert s.last_word == "Done; key [redacted:aws_key_id] rotated." and key not in str(s)
    assert s.redactions == 1 and s.redaction_kinds == {"aws_key_id": 1}
    assert detail.compactions[0].summary.startswith("The user asked for a retry")
    assert s.commits == {
        "items": [
            [git(repo, "rev-parse", "HEAD"), "config"],
            [git(repo, "rev-parse", "HEAD~1"), "업로드 재시도 (retry uploads)"],
        ],
        "total": 2,
    }
    assert s.files == {"paths": ["jobs/upload.py", "notes.txt"], "total": 2, "private": 1}
    assert [(t.task_id, [k for k, _ in t.actions]) for t in detail.tasks] == [
        (task.id, ["task.claimed", "task.released"])
    ]
    assert session_kinds(engine) == [
        "session.started",
        "session.last_word",
        "session.last_word",
        "session.compacted",
        "session.ended",
        "session.changes_read",
    ]


def test_the_same_event_twice_changes_nothing(
    engine: Engine, db_url: str, tmp_path: Path, repo: Path
) -> None:
    session = Session(tmp_path, db_url, repo)
    session.hook("session-start", "start")
    before = counts(engine)
    session.replay("session-start", session.last)
    assert counts(engine) == before
    for verb, name in (("stop", "stop"), ("post-compact", "compact"), ("session-end", "end")):
        session.hook(verb, name)
        before = counts(engine)
        with engine.connect() as conn:
            row = conn.execute(select(sessions)).one()
        again = session.replay(verb, session.last)
        assert counts(engine) == before
        with engine.connect() as conn:
            assert conn.execute(select(sessions)).one() == row
        assert again is None


def test_the_hooks_never_fail_a_session_on_garbage(tmp_path: Path, db_url: str, repo: Path) -> None:
    session = Session(tmp_path, db_url, repo)
    for verb in ("stop", "post-compact", "session-end"):
        for data in ({}, {"session_id": 12}, {"session_id": "x" * 500}, {"session_id": "s\x00"}):
            done = run_hook(verb, data, session.env)
            assert done.returncode == 0, done.stderr
        done = run_hook(verb, {}, session.env)
        assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_database_unreachable_then_back_nothing_lost_or_doubled(
    engine: Engine, tmp_path: Path, repo: Path, outage: tuple[str, Any, Any]
) -> None:
    url, cut, restore = outage
    session = Session(tmp_path, url, repo)
    session.hook("session-start", "start")
    cut()
    spooled = session.hook("stop", "stop", last_assistant_message="said while it was down")
    assert "kept in the spool" in spooled["systemMessage"]
    session.hook("post-compact", "compact")
    kept = session.spooled()
    assert len(kept) == 2
    assert counts(engine)["session_compactions"] == 0
    restore()
    session.hook("stop", "stop", last_assistant_message="said once it was back")
    assert session.spooled() == []
    with engine.connect() as conn:
        s = svc.find_session(conn, SESSION_ID)
    assert s.last_word == "said once it was back" and s.compactions == 1
    # The hook stored its own event first, then the spool: the older
    # last word arrived after the newer one, which stays.
    assert session_kinds(engine) == [
        "session.started",
        "session.last_word",
        "session.compacted",
    ]
    # Draining twice changes nothing: the lines a drain that died before forgetting them
    # would leave behind are applied again, and find their receipts.
    before = counts(engine)
    (session.data / "spool" / "draining.jsonl").write_text("".join(f"{x}\n" for x in kept))
    done = run_hook("stop", session.last, session.env)
    assert done.returncode == 0 and session.spooled() == []
    assert counts(engine) == before


def test_a_session_start_with_the_database_gone_is_spooled_and_said(
    tmp_path: Path, repo: Path
) -> None:
    session = Session(tmp_path, "postgresql+psycopg://x@127.0.0.1:1/none", repo)
    started = session.hook("session-start", "start")
    context = started["hookSpecificOutput"]["additionalContext"]
    assert "could not read its database" in context
    assert "kept in the spool (1 event waiting" in context
    assert len(session.spooled()) == 1


@pytest.mark.slow
def test_with_a_server_of_the_same_database_the_hooks_send_it_their_records(
    engine: Engine, db_url: str, tmp_path: Path, repo: Path
) -> None:
    """The warm path: records go to the running server (the spool drained through it first);
    a server of another database is never sent anything."""
    import time

    from ondeck.sessions.capture import spool
    from support.hooks import record as make_record
    from support.served import serving

    session = Session(tmp_path, db_url, repo)
    port = free_port()
    session.env.update(ONDECK_PORT=str(port), ONDECK_DEBUG="1")
    waiting = make_record("start", clock.now())
    spool.append(
        session.data / "spool",
        {**waiting, "session": "spooled-before", "at": waiting["at"].isoformat()},
    )
    with serving({**os.environ, **session.env}, "--no-jobs", url=f"http://127.0.0.1:{port}"):
        for verb, name in (("session-start", "start"), ("stop", "stop"), ("session-end", "end")):
            done = run_hook(
                verb,
                payload(name, cwd=str(repo), transcript_path=str(session.transcript)),
                session.env,
            )
            assert done.returncode == 0
            assert f"/run/server-{port}.sock" in done.stderr, done.stderr  # the socket
        assert session.spooled() == []
        with engine.connect() as conn:
            assert svc.find_session(conn, "spooled-before").start_source == "startup"
            assert svc.find_session(conn, SESSION_ID).status == "ended"
        # The server reads git once it has answered: the hook does not wait for it.
        for _ in range(300):
            with engine.connect() as conn:
                s = svc.find_session(conn, SESSION_ID)
            if s.commits is not None:
                break
            time.sleep(0.1)
        assert s.commits == {"items": [], "total": 0}
        other = {**session.env, "ONDECK_DATABASE_URL": f"sqlite:///{tmp_path / 'other.db'}"}
        # A hook asks no server before it knows its own database's id (it learns
        # it where it stores), and then finds the server serves another database.
        done = run_hook("stop", payload("stop", cwd=str(repo), session_id="elsewhere"), other)
        assert "id of this database is not known here yet" in done.stderr
        assert "stored in the database" in done.stderr
        done = run_hook("stop", payload("stop", cwd=str(repo), session_id="elsewhere"), other)
        assert "server: it serves another database" in done.stderr
        assert "stored in the database" in done.stderr
        with engine.connect() as conn, pytest.raises(NotFound):
            svc.find_session(conn, "elsewhere")


def test_settings_that_cannot_be_used_are_said_not_a_traceback(
    tmp_path: Path, db_url: str, repo: Path
) -> None:
    session = Session(tmp_path, db_url, repo)
    session.env["ONDECK_SIDES"] = "{not json"
    started = session.hook("session-start", "start")["hookSpecificOutput"]["additionalContext"]
    assert "could not use its settings (ONDECK_SIDES: not valid JSON" in started
    assert "this session is not recorded" in started
    stopped = session.hook("stop", "stop")
    assert "ONDECK_SIDES: not valid JSON" in stopped["systemMessage"]
