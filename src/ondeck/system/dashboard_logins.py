"""Dashboard sessions: begun by a login, ended by a logout (or their age), on the server.

The session cookie is signed (web/auth.py) and carries a random id; the store keeps only its
SHA-256, as it does for device tokens, so a copy of the database opens no session. A cookie
counts only while its row is there: logging out deletes it, and every copy of that cookie is
refused from the next request on.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, insert, select

from ondeck.core.clock import aware
from ondeck.db.tables import dashboard_sessions


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


def begin(conn: Connection, now: datetime, session_id: str, lasts: timedelta) -> None:
    """A new session; sessions already past their end are dropped on the way."""
    now = aware(now)
    conn.execute(delete(dashboard_sessions).where(dashboard_sessions.c.expires_at <= now))
    conn.execute(
        insert(dashboard_sessions).values(
            hash=_digest(session_id), created_at=now, expires_at=now + lasts
        )
    )


def live(conn: Connection, now: datetime, session_id: str) -> bool:
    found = conn.execute(
        select(dashboard_sessions.c.id).where(
            dashboard_sessions.c.hash == _digest(session_id),
            dashboard_sessions.c.expires_at > aware(now),
        )
    ).first()
    return found is not None


def end(conn: Connection, session_id: str) -> bool:
    """End the session; False when it had already ended."""
    done = conn.execute(
        delete(dashboard_sessions).where(dashboard_sessions.c.hash == _digest(session_id))
    )
    return bool(done.rowcount)
