"""Every text a hook brings is stored scrubbed, on both of its ways in.

- The real hooks (`ondeck hook …`, subprocesses, the bare driver's path) of a session in a
  real git repository whose folder (the project taken from the path), branch, commit
  subjects and file names hold secrets, with a secret in every text field of each payload.
- The server's `POST /api/v1/sessions/records` and `/hook-events`, sent records and payloads
  that no client scrubbed.
The database is then read back, every table and column, with raw SQL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from ondeck.core import clock
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings
from ondeck.sessions.capture.events import new_record
from ondeck.sessions.classify import Facts, Rules, classify
from support.hooks import commit_file, git, new_repo, payload, run_hook, serverless_env
from support.scrub_walk import leaks, markers, password, text_for, token

PRIVATE = "door code 4711"


def _payload(kind: str, repo: Path, transcript: Path, label: str, **fields: Any) -> dict[str, Any]:
    data = payload(kind, cwd=str(repo), transcript_path=str(transcript))
    data.update(permission_mode=text_for(f"{label} permission_mode"), **fields)
    return data


def test_a_session_s_every_text_is_stored_scrubbed_on_the_hooks_own_path(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    folder = token("hook folder")
    repo = new_repo(tmp_path / folder)
    git(repo, "checkout", "-q", "-b", f"feature/{token('hook branch')}")
    commit_file(repo, "README.md", "x\n", "start")
    transcript = tmp_path / f"t-{token('hook transcript')}.jsonl"
    transcript.write_text("")
    env = serverless_env(db_url, tmp_path / "data")
    labels = ["hook folder", "hook branch", "hook transcript", "hook commit", "hook file"]

    def hook(verb: str, kind: str, **fields: Any) -> None:
        with transcript.open("a") as handle:
            handle.write(json.dumps({"turn": verb}) + "\n")
        label = f"hook {verb}"
        labels.extend([label, f"{label} permission_mode", *(f"{label} {k}" for k in fields)])
        texts = {k: v(f"{label} {k}") for k, v in fields.items()}
        done = run_hook(verb, _payload(kind, repo, transcript, label, **texts), env)
        assert done.returncode == 0, done.stderr

    hook("session-start", "start", source=token, model=token)
    commit_file(repo, f"src/{token('hook file')}.py", "x = 1\n", text_for("hook commit"))
    hook(
        "stop",
        "stop",
        last_assistant_message=lambda n: f"{text_for(n)} <private>{PRIVATE}</private>",
    )
    hook("post-compact", "compact", trigger=token, compact_summary=text_for)
    hook("session-end", "end", reason=token)

    secrets = [s for label in labels for s in (token(label), password(label))]
    # (not "4711" alone: a fingerprint's hex may hold it by chance)
    assert not leaks(engine, [*secrets, PRIVATE, "code 4711"])
    assert markers(engine) >= 8  # stored, scrubbed: not dropped
    with engine.connect() as conn:
        from sqlalchemy import text

        row = conn.execute(text("SELECT commits, files, git_root, cwd FROM sessions")).one()
    assert "[redacted:github_token]" in str(row.commits) and "[redacted:" in str(row.files)
    assert "[redacted:github_token]" in row.git_root


def _dirty_record(kind: str, label: str, **changes: Any) -> dict[str, Any]:
    """A record as a client that scrubs nothing would send it."""
    place = f"/home/me/{token(label + ' cwd')}"
    facts = Facts(cwd=place, git_root=place, branch=token(label + " branch"))
    classification = classify(facts, Rules())
    record = new_record(
        kind,
        payload(kind, **changes),
        at=clock.now(),
        facts={"cwd": place, "git_root": place, "branch": facts.branch, "head": None},
        classification=classification,
    )
    if "text" in record:
        raw = text_for(label + " text")
        record["text"] = {"value": raw, "chars": len(raw), "redactions": 0, "kinds": {}}
    return record


def test_the_server_stores_what_it_is_sent_scrubbed(
    engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    labels = ["api start", "api stop", "api compact"]
    records = [
        _dirty_record("start", "api start"),
        _dirty_record("stop", "api stop"),
        _dirty_record("compact", "api compact"),
    ]
    raw_payload = payload(
        "stop",
        session_id="a1b2c3d4-0000-4000-8000-000000000001",
        cwd=str(tmp_path / token("api event cwd")),
        last_assistant_message=text_for("api event"),
    )
    with TestClient(create_app(settings, engine)) as client:
        sent = client.post("/api/v1/sessions/records", json={"records": records})
        assert sent.status_code == 200, sent.text
        assert [r["outcome"] for r in sent.json()["results"]] == ["applied"] * 3, sent.text
        event = {"hook": "stop", "payload": raw_payload}
        sent = client.post("/api/v1/sessions/hook-events", json={"events": [event], "rules": {}})
        assert sent.status_code < 500, sent.text
    secrets = [
        s
        for label in labels
        for part in ("cwd", "branch", "text")
        for s in (token(f"{label} {part}"), password(f"{label} {part}"))
    ]
    secrets += [token("api event cwd"), token("api event"), password("api event")]
    assert not leaks(engine, secrets)
    assert markers(engine) >= 6
