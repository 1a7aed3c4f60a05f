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
    """Newest first; `before_id` pages back. Of every side for the owner who names none; of
    the caller's own side for one held to a side (the inbox refused)."""
    view = at.access.reader(at.settings.sides, side, inbox=status == "unclassified", required=False)
    found = records.list_sessions(
        conn,
        status=status,
        side=view.side,
        project=project,
        agent=agent,
        before_id=before_id,
        limit=limit,
        lost_before=records.lost_before(at.now(), at.settings),
    )
    return [_reached(at, s, s.id).summary_json(at.settings.zone) for s in found]


def _reached(at: Caller, session: records.Session, ref: str | int) -> records.Session:
    """`session`, if the caller reaches its side (an unclassified one is the inbox's); else
    not found: every session these calls return passes here."""
    side = None if session.unclassified else session.side
    at.access.check_reaches(at.settings.sides, side, f"session {str(ref)[:80]!r}")
    return session


def get_session(conn: Connection, at: Caller, ref: str | int) -> dict[str, Any]:
    """Everything a session's record holds, by its number or its agent's id."""
    cutoff = records.lost_before(at.now(), at.settings)
    _reached(at, records.find_session(conn, ref, lost_before=cutoff), ref)
    return records.session_detail(conn, ref, lost_before=cutoff).to_json(at.settings.zone)


def move_session(
    conn: Connection, at: Caller, ref: str | int, *, side: str | None, project: str | None
) -> dict[str, Any]:
    """Reclassify a session by hand (recorded as `session.moved`); a caller held to a side
    moves only its own side's sessions, within it."""
    at.access.may_write()
    _reached(at, records.find_session(conn, ref), ref)
    moved = records_move.move_session(
        conn,
        at.now(),
        ref,
        side=at.access.own(side),
        project=project,
        sides=at.settings.sides,
        actor=at.actor,
    )
    return _reached(at, moved, ref).summary_json(at.settings.zone)
