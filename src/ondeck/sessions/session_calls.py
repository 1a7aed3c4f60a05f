"""Session records, one function per operation, each returning the API route's JSON.

The route (`entrypoints/api/sessions.py`) and the CLI's command on this machine's database
(`entrypoints/cli/sessions.py`) both call these, in the transaction they open, so both show
an open session gone silent as lost by the same cutoff.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ondeck.sessions import records, records_move

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ondeck.system.caller import Caller


def list_sessions(
    conn: Connection,
    at: Caller,
    *,
    status: str | None = None,
    side: str | None = None,
    project: str | None = None,
    agent: str | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """Newest first; `before_id` pages back."""
    found = records.list_sessions(
        conn,
        status=status,
        side=side,
        project=project,
        agent=agent,
        before_id=before_id,
        limit=limit,
        lost_before=records.lost_before(at.now(), at.settings),
    )
    return [s.summary_json(at.settings.zone) for s in found]


def get_session(conn: Connection, at: Caller, ref: str | int) -> dict[str, Any]:
    """Everything a session's record holds, by its number or its agent's id."""
    cutoff = records.lost_before(at.now(), at.settings)
    return records.session_detail(conn, ref, lost_before=cutoff).to_json(at.settings.zone)


def move_session(
    conn: Connection, at: Caller, ref: str | int, *, side: str | None, project: str | None
) -> dict[str, Any]:
    """Reclassify a session by hand (recorded as `session.moved`)."""
    moved = records_move.move_session(
        conn,
        at.now(),
        ref,
        side=side,
        project=project,
        sides=at.settings.sides,
        actor=at.actor,
    )
    return moved.summary_json(at.settings.zone)
