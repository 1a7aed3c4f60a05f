"""Claude Code hook payloads (tests/fixtures/hooks), temporary git repositories, and the
records ondeck makes of them, for the session record tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ondeck.sessions.capture.events import new_record
from ondeck.sessions.capture.events_check import parse_record
from ondeck.sessions.classify import Facts, Rules, classify

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
ONDECK = str(Path(sys.executable).with_name("ondeck"))
SESSION_ID = "3f1c2d3e-5b6a-4c7d-8e9f-0123456789ab"
KINDS = {"start": "session_start_startup", "stop": "stop", "compact": "post_compact"}
KINDS.update(end="session_end", resume="session_start_resume")


def payload(name: str, **changes: Any) -> dict[str, Any]:
    """A fixture payload (`start`, `resume`, `stop`, `compact`, `end`), with changes."""
    data = json.loads((FIXTURES / f"{KINDS.get(name, name)}.json").read_text())
    data.update(changes)
    return data


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@example.org", "-c", "user.name=t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def new_repo(path: Path, *, commits: int = 1) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for n in range(commits):
        git(path, "commit", "-q", "--allow-empty", "-m", f"commit {n}")
    return path


def commit_file(repo: Path, name: str, text: str, message: str) -> str:
    target = repo / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def record(
    kind: str,
    at: datetime,
    *,
    rules: Rules | None = None,
    facts: Facts | None = None,
    **changes: Any,
) -> dict[str, Any]:
    """A checked record of a fixture payload, classified in-process (no git)."""
    data = payload(kind, **changes)
    facts = facts or Facts(cwd=data.get("cwd"))
    classification = classify(facts, rules or Rules())
    shown = {"cwd": facts.cwd, "git_root": facts.git_root, "branch": facts.branch}
    shown["head"] = facts.head
    made = new_record(
        "start" if kind == "resume" else kind,
        data,
        at=at,
        facts=shown,
        classification=classification,
    )
    return parse_record(made)


def later(at: datetime, **delta: float) -> datetime:
    return at + timedelta(**delta)


def serverless_env(db_url: str, data: Path) -> dict[str, str]:
    """The settings of hooks with no server to reach: a port nothing listens on, so they
    store through the database themselves, in UTC, with `data` as their data folder."""
    from support.pg import free_port

    return {
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_DATA_DIR": str(data),
        "ONDECK_TZ": "UTC",
        "ONDECK_PORT": str(free_port()),
    }


def run_hook(
    verb: str, data: dict[str, Any], env: dict[str, str], *, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ONDECK, "hook", verb],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
        check=False,
    )
