"""Open forever without a jobs loop: hooks only, no
`ondeck serve`, real `ondeck` processes with their clock moved by libfaketime. A session
silent for 3 days is lost in the next session's brief and in `session list`, before any
tick; the tick then records it once. Both stores."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from support.hooks import ONDECK, new_repo, payload
from support.pg import free_port
from support.procs import at_time, ondeck_env, run_ondeck

T0 = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
OLD = "1a1c2d3e-5b6a-4c7d-8e9f-0123456789ab"
NEW = "2b1c2d3e-5b6a-4c7d-8e9f-0123456789ab"


def _hook(env: dict[str, str], at: datetime, verb: str, data: dict[str, Any]) -> str:
    done = subprocess.run(
        [ONDECK, "hook", verb],
        input=json.dumps(data),
        env=at_time(env, at),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _json(env: dict[str, str], at: datetime, *args: str) -> Any:
    done = run_ondeck(*args, "--json", env=at_time(env, at))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_session_silent_for_three_days_is_lost_with_hooks_only(
    db_url: str, tmp_path: Path
) -> None:
    repo = new_repo(tmp_path / "site")
    env = ondeck_env(db_url, tmp_path, ONDECK_PORT=str(free_port()), ONDECK_SESSION_GRACE="12h")
    env["ONDECK_CONFIG"] = str(tmp_path / "no-config.toml")
    _hook(env, T0, "session-start", payload("start", session_id=OLD, cwd=str(repo)))
    stop = payload("stop", session_id=OLD, cwd=str(repo), last_assistant_message="다 했어요")
    _hook(env, T0 + timedelta(minutes=5), "stop", stop)
    three_days = T0 + timedelta(days=3)
    out = _hook(env, three_days, "session-start", payload("start", session_id=NEW, cwd=str(repo)))
    brief = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    old_line = next(
        line for line in brief.splitlines() if "다 했어요" in line or "session 1" in line
    )
    assert "still open" not in brief, brief
    assert "lost" in old_line, brief
    listed = {s["external_id"]: s for s in _json(env, three_days, "session", "list")}
    assert (listed[OLD]["status"], listed[OLD]["presumed_lost"]) == ("lost", True)
    assert listed[NEW]["status"] == "open"
    assert [
        s["external_id"] for s in _json(env, three_days, "session", "list", "--status", "open")
    ] == [NEW]
    assert _json(env, three_days, "session", "show", OLD)["status"] == "lost"
    # The tick records what every reader already said: one session.lost, and nothing new.
    done = run_ondeck("jobs", "--once", env=at_time(env, three_days))
    assert done.returncode == 0, done.stderr
    shown = _json(env, three_days, "session", "show", OLD)
    assert (shown["status"], shown["presumed_lost"]) == ("lost", False)
    kinds = [e["kind"] for e in shown["history"]]
    assert kinds.count("session.lost") == 1
