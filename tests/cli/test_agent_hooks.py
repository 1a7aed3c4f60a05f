"""Codex CLI's and Gemini CLI's hooks as real `ondeck hook VERB --agent …` processes, fed the
payloads captured from the real programs (tests/fixtures/hooks/codex, gemini-cli), on both
stores: the record carries the agent, is classified and scrubbed, the brief comes back as
`hookSpecificOutput.additionalContext`, a lease the session held is released at its end,
what the agent did not send is said (never guessed), and stdout holds JSON only."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from ondeck.core import clock
from ondeck.db.tables import events, session_compactions, sessions, tasks
from ondeck.work import backlog, backlog_leases
from support.hooks import FIXTURES, ONDECK, new_repo, serverless_env

SESSION = "01a235aa-7bea-7882-ad24-c72bd6cd8948"
KEY = "AKIA" + "QRSTUVWXYZ234567"
# Each agent: its hook events as `ondeck hook` verbs, and the answer's field in its payload.
AGENTS = {
    "codex": {
        "start": ("session-start", "SessionStart"),
        "stop": ("stop", "Stop"),
        "compact": ("post-compact", "PostCompact"),
        "end": ("session-end", "SessionEnd"),
        "answer": "last_assistant_message",
    },
    "gemini-cli": {
        "start": ("session-start", "SessionStart"),
        "stop": ("stop", "AfterAgent"),
        "end": ("session-end", "SessionEnd"),
        "answer": "prompt_response",
    },
}


def hook(
    agent: str, step: str, env: dict[str, str], repo: Path, **changes: Any
) -> tuple[str, dict[str, Any] | None]:
    verb, event = AGENTS[agent][step]
    data = json.loads((FIXTURES / agent / f"{event}.json").read_text())
    data.update(session_id=SESSION, cwd=str(repo), transcript_path=str(repo / "none.jsonl"))
    data.update(changes)
    done = subprocess.run(
        [ONDECK, "hook", verb, "--agent", agent],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        timeout=60,
        env=env if "HOME" in env else {**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    assert "session context from the database" not in done.stderr, done.stderr
    # Gemini reads a hook's stdout as JSON only; Codex refuses fields it does not know.
    out = json.loads(done.stdout) if done.stdout.strip() else None
    assert out is None or set(out) <= {"hookSpecificOutput", "systemMessage"}, out
    return done.stdout, out


@pytest.mark.parametrize("agent", list(AGENTS))
def test_a_whole_session_of_another_agent(
    agent: str, engine: Engine, db_url: str, tmp_path: Path
) -> None:
    repo = new_repo(tmp_path / "agent-site")
    env = serverless_env(db_url, tmp_path / "data")
    with engine.begin() as conn:
        backlog.create_task(conn, clock.now(), title="브리핑에 나올 일", actor="cli")
    _, started = hook(agent, "start", env, repo)
    assert started is not None
    context = started["hookSpecificOutput"]["additionalContext"]
    assert started["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert context.startswith("# On deck") and "브리핑에 나올 일" in context
    with engine.begin() as conn:
        task = backlog.create_task(conn, clock.now(), title="held by the session", actor="cli")
        backlog_leases.claim_task(
            conn, clock.now(), task.id, owner=f"claude:{SESSION}", actor="cli"
        )
    answer = AGENTS[agent]["answer"]
    assert hook(agent, "stop", env, repo, **{answer: f"다 했어요; key {KEY} rotated."})[1] is None
    if "compact" in AGENTS[agent]:
        assert hook(agent, "compact", env, repo)[1] is None
    stdout, ended = hook(agent, "end", env, repo)
    assert ended is None, stdout  # the leases released are in the record, not on stdout

    with engine.connect() as conn:
        row = conn.execute(select(sessions)).mappings().one()
        kinds = list(conn.scalars(select(events.c.kind).order_by(events.c.id)))
        details = list(conn.scalars(select(events.c.details).order_by(events.c.id)))
        compactions = list(conn.execute(select(session_compactions)).mappings())
        held = conn.execute(select(tasks.c.status).where(tasks.c.id == task.id)).scalar_one()
    assert (row["agent"], row["external_id"], row["status"]) == (agent, SESSION, "ended")
    assert row["project"] == "agent-site" and row["branch"] == "main"
    assert row["last_word"] == "다 했어요; key [redacted:aws_key_id] rotated."
    assert row["redactions"] == 1
    assert held == "READY" and "task.released" in kinds
    if agent == "codex":  # a compaction, said to come without its summary
        assert [c["summary"] for c in compactions] == [None]
        said = [d for d in details if isinstance(d, dict) and d.get("input")]
        assert any("no summary" in note for d in said for note in d["input"]), details
    # What ondeck does not read of the payload is not kept: Gemini's prompt held the brief.
    assert "hook_context" not in json.dumps([str(d) for d in details])


def test_an_empty_answer_is_not_a_last_word(engine: Engine, db_url: str, tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "site")
    env = serverless_env(db_url, tmp_path / "data")
    hook("codex", "start", env, repo)
    hook("codex", "stop", env, repo, last_assistant_message=None)
    with engine.connect() as conn:
        row = conn.execute(select(sessions)).mappings().one()
        said = conn.execute(
            select(events.c.details).where(events.c.kind == "session.no_answer")
        ).scalar_one()
    assert row["last_word"] is None and row["agent"] == "codex"
    assert said["input"] == ["codex sent no answer for this turn"]


@pytest.mark.parametrize(
    "changes",
    [
        {"session_id": "x" * 5000},
        {"session_id": ["not", "text"]},
        {"session_id": "bad\nid"},
    ],
)
def test_a_hostile_payload_records_nothing_and_fails_nothing(
    changes: dict[str, Any], tmp_path: Path, sqlite_template: Path
) -> None:
    import shutil

    shutil.copyfile(sqlite_template, tmp_path / "o.db")
    db_url = f"sqlite:///{tmp_path / 'o.db'}"
    repo = new_repo(tmp_path / "site")
    env = serverless_env(db_url, tmp_path / "data")
    for step in ("start", "stop", "end"):
        hook("gemini-cli", step, env, repo, **changes)
    from sqlalchemy import create_engine, func

    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(sessions)).scalar_one() == 0
    finally:
        engine.dispose()


def test_an_unknown_agent_is_refused_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [ONDECK, "hook", "stop", "--agent", "cursor"],
        input="{}",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ONDECK_DATA_DIR": str(tmp_path)},
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "cursor" in done.stderr


def test_through_this_machine_s_server_and_in_client_mode(db_url: str, tmp_path: Path) -> None:
    """The server path (the owner socket: the server makes the record from the payload the
    hook sends) and client mode (the hook makes it, the server checks it) keep the agent."""
    from support.machines import HomeServer, home_env

    server = HomeServer(tmp_path / "server-home", db_url)
    server.start()
    try:
        repo = new_repo(tmp_path / "served-site")
        local = {**server.env, "ONDECK_DATABASE_URL": db_url, "ONDECK_DEBUG": "1"}
        _, started = hook("codex", "start", local, repo)
        assert started is not None
        assert started["hookSpecificOutput"]["additionalContext"].startswith("# On deck")
        hook("codex", "stop", local, repo, last_assistant_message="서버로 보냈어요.")
        hook("codex", "end", local, repo)

        token = server.ondeck("token", "create", "laptop")
        laptop = home_env(tmp_path / "laptop", server_url=server.url, token=token)
        other = "0abd1f53-2f95-46a5-9d8f-a4c34d38d945"
        _, started = hook("gemini-cli", "start", laptop, repo, session_id=other)
        assert started is not None and "unavailable" not in json.dumps(started)
        hook("gemini-cli", "stop", laptop, repo, session_id=other, prompt_response="랩톱에서.")
        hook("gemini-cli", "end", laptop, repo, session_id=other)
        listed = {s["external_id"]: s for s in server.get("/api/v1/sessions")}
        codex = server.get("/api/v1/sessions?agent=codex")
        assert [s["agent"] for s in codex] == ["codex"]
    finally:
        server.stop()
    assert listed[SESSION]["agent"] == "codex" and listed[SESSION]["status"] == "ended"
    assert listed[SESSION]["last_word_preview"] == "서버로 보냈어요."
    assert listed[other]["agent"] == "gemini-cli" and listed[other]["status"] == "ended"
    assert listed[other]["last_word_preview"] == "랩톱에서."


def test_a_payload_cannot_say_it_is_another_agent_s(tmp_path: Path, sqlite_template: Path) -> None:
    """Whose a payload is comes from the hook's `--agent`, never from its input."""
    import shutil

    from sqlalchemy import create_engine

    from support.hooks import payload, run_hook

    shutil.copyfile(sqlite_template, tmp_path / "o.db")
    db_url = f"sqlite:///{tmp_path / 'o.db'}"
    env = serverless_env(db_url, tmp_path / "data")
    repo = new_repo(tmp_path / "site")
    claimed = payload("start", session_id=SESSION, cwd=str(repo), ondeck_agent="codex")
    assert run_hook("session-start", claimed, env).returncode == 0
    hook("gemini-cli", "start", env, repo, ondeck_agent="codex")
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            agents = sorted(conn.scalars(select(sessions.c.agent)))
    finally:
        engine.dispose()
    assert agents == ["claude-code", "gemini-cli"]


def test_with_the_database_gone_the_events_wait_in_the_spool_with_their_agent(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    repo = new_repo(tmp_path / "site")
    gone = serverless_env("postgresql+psycopg://x@127.0.0.1:1/none", tmp_path / "data")
    _, started = hook("gemini-cli", "start", gone, repo)
    assert started is not None  # still JSON only, saying what happened
    assert "kept in the spool" in started["hookSpecificOutput"]["additionalContext"]
    _, stopped = hook("gemini-cli", "stop", gone, repo, prompt_response="기다렸다가 저장됨")
    assert stopped is not None and "spool" in stopped["systemMessage"]
    back = serverless_env(db_url, tmp_path / "data")
    hook("gemini-cli", "end", back, repo)  # stores its own event, then drains the spool
    with engine.connect() as conn:
        row = conn.execute(select(sessions)).mappings().one()
    assert (row["agent"], row["status"]) == ("gemini-cli", "ended")
    assert row["last_word"] == "기다렸다가 저장됨" and row["start_source"] == "startup"


def test_a_session_whose_end_never_came_is_presumed_lost_by_the_same_rule(
    engine: Engine,
) -> None:
    """Gemini does not wait for its SessionEnd hook: a session it never came for is lost
    once silent past the grace, as a Claude Code session is; nothing invents an end."""
    from datetime import UTC, datetime, timedelta

    from ondeck.sessions import records as svc
    from ondeck.sessions.intake import apply_record
    from support.hooks import record

    start = datetime(2026, 12, 1, 9, tzinfo=UTC)
    for agent, session in (("gemini-cli", SESSION), ("claude-code", "c-1")):
        made = record("start", start, session_id=session, ondeck_agent=agent)
        with engine.begin() as conn:
            apply_record(conn, made["at"], made)
    with engine.connect() as conn:
        within = svc.list_sessions(conn, lost_before=start - timedelta(minutes=1))
        past = svc.list_sessions(conn, lost_before=start + timedelta(hours=1))
    assert {(s.agent, s.status) for s in within} == {
        ("gemini-cli", "open"),
        ("claude-code", "open"),
    }
    assert {(s.agent, s.status) for s in past} == {("gemini-cli", "lost"), ("claude-code", "lost")}
    assert all(s.ended_at is None and s.end_reason is None for s in past)
