"""One path per session: while the ondeck mod has a Claude Code session it sets ONDECK_MOD=1
in Claude Code's environment, and a settings hook (which inherits it) stands down, writing
nothing; the mod's own hand-over to `ondeck hook` sets it empty and is recorded. Both
stores."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, func, select

from ondeck.db.tables import sessions
from support.hooks import payload, run_hook, serverless_env


def test_a_settings_hook_stands_down_while_the_mod_has_the_session(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    env = serverless_env(db_url, tmp_path / "data")
    start = payload("start", cwd=str(tmp_path))
    standing_down = run_hook("session-start", start, {**env, "ONDECK_MOD": "1"})
    assert standing_down.returncode == 0 and standing_down.stdout == ""
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(sessions)) == 0
    handed = run_hook("session-start", start, {**env, "ONDECK_MOD": ""})
    assert handed.returncode == 0 and "On deck" in handed.stdout
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(sessions)) == 1
