"""In client mode, events go only to the store they were captured for. A
real `ondeck serve` restarted on another database with the same token gets none of them:
they wait in the spool, the hook says why, and they go once the server serves their store
again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from cli.test_hook_client import ADMIN, SESSION, Client, Server
from ondeck.db.engine import make_engine
from ondeck.db.tables import sessions

pytestmark = pytest.mark.slow


def _sessions(url: str) -> list[tuple[str, str]]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(sessions.c.external_id, sessions.c.status)).all()
            return [(r.external_id, r.status) for r in rows]
    finally:
        engine.dispose()


def test_a_server_restarted_on_another_database_gets_none_of_the_spool(
    db_url: str, tmp_path: Path
) -> None:
    server = Server(tmp_path / "server-home")
    server.env["ONDECK_DATABASE_URL"] = server.db_url = db_url
    other = f"sqlite:///{tmp_path / 'other.db'}"
    # The admin token, which both databases' server takes: only the store tells them apart.
    client = Client(tmp_path / "laptop-home", server, ADMIN)
    try:
        server.start()
        client.hook("session-start", "start")
        assert _sessions(db_url) == [(SESSION, "open")]
        server.stop()
        server.env["ONDECK_DATABASE_URL"] = other  # same port, same token
        server.start()
        out, _, _ = client.hook("stop", "stop", last_assistant_message="다 했습니다")
        said = json.loads(out)["systemMessage"]
        assert "now serves another database" in said and "wait" in said
        client.hook("session-end", "end")
        assert client.spooled() == 3  # the stop, the end and its git changes
        assert _sessions(other) == []  # the new database got nothing: no end that never began
        start, _, _ = client.hook("session-start", "resume")
        context = json.loads(start)["hookSpecificOutput"]["additionalContext"]
        assert "now serves another database" in context  # the context says why
        assert _sessions(other) == []
        server.stop()
        server.env["ONDECK_DATABASE_URL"] = db_url
        server.start()
        client.hook("stop", "stop")
        assert client.spooled() == 0
        assert _sessions(db_url) == [(SESSION, "open")]  # resumed after its end, then a turn
        assert _sessions(other) == []
    finally:
        server.stop()
