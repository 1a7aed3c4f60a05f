"""A session's commits and files, and git facts that do not mislead, with real
hook processes, real git and a real server stopped between a start and an end."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from ondeck.sessions import records as svc
from support.hooks import (
    ONDECK,
    SESSION_ID,
    commit_file,
    git,
    new_repo,
    payload,
    run_hook,
    serverless_env,
)
from support.machines import HomeServer, home_env


class Served(HomeServer):
    def session(self, ref: str = SESSION_ID) -> dict[str, Any]:
        found: dict[str, Any] = self.get(f"/api/v1/sessions/{ref}")
        return found


def hook(verb: str, name: str, repo: Path, env: dict[str, str], **changes: Any) -> Any:
    transcript = repo.parent / "transcript.jsonl"
    with transcript.open("a") as handle:
        handle.write(json.dumps({"turn": name}) + "\n")
    data = payload(name, cwd=str(repo), transcript_path=str(transcript), **changes)
    done = run_hook(verb, data, env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path / "server-home")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def client_machine(served: Served, tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """A laptop in client mode with its token for `served`: its home, its hooks'
    environment and a repository of two commits."""
    token = served.ondeck("token", "create", "laptop")
    laptop = tmp_path / "laptop"
    env = home_env(laptop, server_url=served.url, token=token)
    return laptop, env, new_repo(laptop / "site", commits=2)


# --- an end spooled after its start was stored ---------------------------------------------


@pytest.mark.slow
def test_client_mode_server_down_at_the_end_still_records_the_commits_and_files(
    served: Served, tmp_path: Path
) -> None:
    laptop, env, repo = client_machine(served, tmp_path)
    hook("session-start", "start", repo, env)
    commit_file(repo, "deploy.py", "retry = 3\n", "배포 재시도 (retry deploys)")
    (repo / "draft.md").write_text("not committed\n")
    served.stop()
    ended = hook("session-end", "end", repo, env)
    assert "kept in the spool" in ended["systemMessage"]
    served.start()
    hook("stop", "stop", repo, {**env}, session_id="another-session")  # drains the spool
    s = served.session()
    assert s["status"] == "ended"
    assert [c[1] for c in s["commits"]["items"]] == ["배포 재시도 (retry deploys)"], s
    assert s["files"]["paths"] == ["deploy.py", "draft.md"]
    assert "not known" not in (s["git_note"] or "")
    assert not list((laptop / ".local" / "share" / "ondeck" / "session-starts").iterdir())


def local_env(tmp_path: Path, url: str) -> dict[str, str]:
    return serverless_env(url, tmp_path / "data")


def the_session(engine: Engine) -> Any:
    with engine.connect() as conn:
        return svc.find_session(conn, SESSION_ID)


@pytest.mark.slow
def test_local_mode_database_away_at_the_end_still_records_the_commits_and_files(
    engine: Engine, tmp_path: Path, outage: tuple[str, Any, Any]
) -> None:
    url, cut, restore = outage
    env = local_env(tmp_path, url)
    repo = new_repo(tmp_path / "site", commits=2)
    hook("session-start", "start", repo, env)
    commit_file(repo, "jobs.py", "x = 1\n", "작업 추가 (add jobs)")
    cut()
    ended = hook("session-end", "end", repo, env)
    assert "kept in the spool" in ended["systemMessage"]
    restore()
    hook("stop", "stop", repo, env, session_id="another-session")  # drains the spool
    s = the_session(engine)
    assert s.status == "ended" and s.commits is not None, s.git_note
    assert [c[1] for c in s.commits["items"]] == ["작업 추가 (add jobs)"]
    assert s.files == {"paths": ["jobs.py"], "total": 1, "private": 0}


# --- git facts that mislead ----------------------------------------------------------------


def old_commit(repo: Path, name: str, message: str, days_ago: int) -> None:
    """A commit made days before the session (main's history, fetched later)."""
    when = f"@{int(time.time()) - days_ago * 86_400} +0000"
    (repo / name).write_text(f"{message}\n")
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    for args in (["add", name], ["commit", "-q", "-m", message]):
        subprocess.run(
            ["git", "-C", str(repo), "-c", "user.email=o@example.org", "-c", "user.name=o", *args],
            env=env,
            check=True,
            capture_output=True,
        )


def test_after_a_rebase_onto_main_only_the_sessions_commit_is_credited_and_it_says_so(
    engine: Engine, tmp_path: Path
) -> None:
    env = local_env(tmp_path, str(engine.url.render_as_string(hide_password=False)))
    repo = new_repo(tmp_path / "site")
    git(repo, "checkout", "-q", "-b", "feature")
    old_commit(repo, "f.txt", "feature work before the session", 3)
    git(repo, "checkout", "-q", "main")
    for n in range(6):
        old_commit(repo, f"m{n}.txt", f"main {n}", 2)
    git(repo, "checkout", "-q", "feature")
    hook("session-start", "start", repo, env)
    commit_file(repo, "s.txt", "mine\n", "세션의 커밋 (the session's commit)")
    git(repo, "rebase", "-q", "main")
    hook("session-end", "end", repo, env)
    s = the_session(engine)
    assert s.commits is not None, s.git_note
    assert [c[1] for c in s.commits["items"]] == ["세션의 커밋 (the session's commit)"], s.commits
    assert s.commits["total"] == 1
    assert "history was rewritten" in (s.git_note or "")


def test_main_brought_in_under_an_unmoved_start_is_not_credited(
    engine: Engine, tmp_path: Path
) -> None:
    """The start commit stays an ancestor (a branch with no commit of its own yet, rebased
    onto main): main's older commits come into start..HEAD all the same."""
    env = local_env(tmp_path, str(engine.url.render_as_string(hide_password=False)))
    repo = new_repo(tmp_path / "site")
    git(repo, "branch", "feature")
    for n in range(4):
        old_commit(repo, f"m{n}.txt", f"main {n}", 2)
    git(repo, "checkout", "-q", "feature")
    hook("session-start", "start", repo, env)
    git(repo, "rebase", "-q", "main")
    commit_file(repo, "s.txt", "mine\n", "the session's commit")
    hook("session-end", "end", repo, env)
    s = the_session(engine)
    assert [c[1] for c in s.commits["items"]] == ["the session's commit"]
    assert "4 commits made before the session began are not counted" in s.git_note


def slow_git(tmp_path: Path, seconds: float) -> str:
    """A PATH whose `git` answers after `seconds` (a hung network filesystem, a huge repo)."""
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    folder = tmp_path / "slow-bin"
    folder.mkdir()
    wrapper = folder / "git"
    wrapper.write_text(f'#!/bin/sh\nsleep {seconds}\nexec {real.stdout.strip()} "$@"\n')
    wrapper.chmod(0o755)
    return f"{folder}:{os.environ['PATH']}"


def test_a_slow_git_says_git_did_not_answer_and_keeps_the_project(
    engine: Engine, tmp_path: Path
) -> None:
    env = local_env(tmp_path, str(engine.url.render_as_string(hide_password=False)))
    env["PATH"] = slow_git(tmp_path, 3)
    repo = new_repo(tmp_path / "site")
    began = time.monotonic()
    hook("session-start", "start", repo, env)
    assert time.monotonic() - began < 10
    s = the_session(engine)
    reason = s.classification["reason"]
    assert "no rule applies" not in reason and "git did not answer" in reason, reason
    assert (s.project, s.project_rule, s.git_root, s.branch) == ("site", "git", str(repo), "main")


def test_a_worktree_is_its_main_checkouts_project_and_shares_its_handoff(
    engine: Engine, tmp_path: Path
) -> None:
    env = local_env(tmp_path, str(engine.url.render_as_string(hide_password=False)))
    repo = new_repo(tmp_path / "site", commits=2)
    tree = tmp_path / "site-hotfix"
    git(repo, "worktree", "add", "-q", "-b", "hotfix", str(tree))

    def handoff(session: str, text: str) -> None:
        done = subprocess.run(
            [ONDECK, "handoff", text, "--session", session],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr

    def context(cwd: Path, session: str) -> str:
        started = hook("session-start", "start", cwd, env, session_id=session)
        return str(started["hookSpecificOutput"]["additionalContext"])

    context(repo, "in-the-main-checkout")
    handoff("in-the-main-checkout", "다음: 배포 확인 (next: check the deploy)")
    assert "다음: 배포 확인" in context(tree, SESSION_ID)
    handoff(SESSION_ID, "핫픽스 완료 (the hotfix is done)")
    assert "핫픽스 완료" in context(repo, "back-in-the-main-checkout")
    s = the_session(engine)
    assert (s.project, s.project_rule, s.git_root) == ("site", "git", str(tree))
    assert s.classification["project"]["source"] == f"{repo} (worktree {tree})"


def test_a_directory_deleted_before_the_end_is_said_to_be_gone(
    engine: Engine, tmp_path: Path
) -> None:
    import shutil

    env = local_env(tmp_path, str(engine.url.render_as_string(hide_password=False)))
    repo = new_repo(tmp_path / "scratch", commits=2)
    hook("session-start", "start", repo, env)
    shutil.rmtree(repo)
    hook("session-end", "end", repo, env)
    s = the_session(engine)
    assert s.status == "ended" and s.commits is None
    assert s.git_note and "no longer exists" in s.git_note and str(repo) in s.git_note
    assert "no git HEAD" not in s.git_note


# --- a start spooled, its end stored (the start arrives after the end) -----------------------


def read(session: dict[str, Any]) -> bool:
    """Whether what git says the session did has been stored (or why it could not be)."""
    return session["commits"] is not None or bool(session["git_note"])


@pytest.mark.slow
def test_local_mode_database_away_at_the_start_still_records_the_commits_and_files(
    engine: Engine, tmp_path: Path, outage: tuple[str, Any, Any]
) -> None:
    """The start waits in the spool; the end is stored first and drains it: what git says
    the session did is read from the start's HEAD all the same (issue 36 item 2)."""
    url, cut, restore = outage
    env = local_env(tmp_path, url)
    repo = new_repo(tmp_path / "site", commits=2)
    cut()
    started = hook("session-start", "start", repo, env)
    assert "kept in the spool" in json.dumps(started, ensure_ascii=False)
    restore()
    commit_file(repo, "jobs.py", "x = 1\n", "작업 추가 (add jobs)")
    hook("session-end", "end", repo, env)
    s = the_session(engine)
    assert s.status == "ended" and s.start_head, s.git_note
    assert s.commits is not None, s.git_note
    assert [c[1] for c in s.commits["items"]] == ["작업 추가 (add jobs)"]
    assert s.files == {"paths": ["jobs.py"], "total": 1, "private": 0}


@pytest.mark.slow
def test_client_mode_server_down_at_the_start_still_records_the_commits_and_files(
    served: Served, tmp_path: Path
) -> None:
    _, env, repo = client_machine(served, tmp_path)
    served.stop()
    started = hook("session-start", "start", repo, env)
    assert "kept in the spool" in json.dumps(started, ensure_ascii=False)
    served.start()
    commit_file(repo, "deploy.py", "retry = 3\n", "배포 재시도 (retry deploys)")
    hook("session-end", "end", repo, env)
    deadline = time.monotonic() + 30
    while not read(s := served.session()) and time.monotonic() < deadline:
        time.sleep(0.2)  # the commits go after the end's answer
    assert s["status"] == "ended" and s["start_head"], s
    assert s["commits"] is not None, s["git_note"]
    assert [c[1] for c in s["commits"]["items"]] == ["배포 재시도 (retry deploys)"], s
    assert s["files"]["paths"] == ["deploy.py"]


@pytest.mark.slow
def test_local_server_takes_the_end_of_a_session_whose_start_waits_in_the_spool(
    tmp_path: Path,
) -> None:
    """The hooks' own server stores the end and reads git for it, while the start still
    waits in this machine's spool (the database was locked at the start): the server reads
    from the start this machine kept, not "no git HEAD"."""
    import sqlite3

    server = Served(tmp_path / "home")
    env = server.env
    repo = new_repo(tmp_path / "home" / "site", commits=2)
    hook("stop", "stop", repo, env, session_id="an-earlier-session")  # the store's id
    holder = sqlite3.connect(server.db_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    started = hook("session-start", "start", repo, env)
    holder.close()
    assert "kept in the spool" in json.dumps(started, ensure_ascii=False)
    server.start()
    try:
        commit_file(repo, "jobs.py", "x = 1\n", "작업 추가 (add jobs)")
        transcript = repo.parent / "transcript.jsonl"
        data = payload("end", cwd=str(repo), transcript_path=str(transcript))
        ended = run_hook("session-end", data, {**env, "ONDECK_DEBUG": "1"})
        assert "session-end stored through" in ended.stderr, ended.stderr  # the server took it
        deadline = time.monotonic() + 30
        while not read(s := server.session()) and time.monotonic() < deadline:
            time.sleep(0.2)  # git is read after the end's answer
    finally:
        server.stop()
    assert s["status"] == "ended" and s["start_head"], s
    assert s["commits"] is not None, s["git_note"]
    assert [c[1] for c in s["commits"]["items"]] == ["작업 추가 (add jobs)"], s
