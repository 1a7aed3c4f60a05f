"""Moving a session by hand: to another side or project, out of the inbox (`session move`,
the Sessions page, the API). The record keeps what it was classified as, the signals and the
disagreements; `session.moved` says from where, to where and who moved it; its handoff and
notes follow it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, update

from ondeck.core.clock import aware
from ondeck.core.errors import Conflict, InvalidInput
from ondeck.core.sides import configured
from ondeck.core.validation import check_project
from ondeck.db.tables import sessions
from ondeck.sessions.records import Session, find_session, session_from_row
from ondeck.system import events as event_log


def move_session(
    conn: Connection,
    now: datetime,
    ref: str | int,
    *,
    side: str | None,
    project: str | None,
    sides: Mapping[str, Any],
    actor: str,
) -> Session:
    """Reclassify a session by hand: `session.moved` names from, to and who. Its former
    classification, the signals and the disagreements stay in the record."""
    if side is not None:
        side = side.strip()
    if project is not None:
        project = check_project(project.strip() or None)
    if sides:
        if not side:
            raise InvalidInput(f"give the side to move it to: one of {', '.join(sorted(sides))}")
        configured(sides, side)
    elif side:
        raise InvalidInput("no sides are configured (one pool): give only --project")
    elif project is None:
        raise InvalidInput("give the project to move it to")
    before = find_session(conn, ref)
    new_side = side if sides else None
    new_project = project if project is not None else before.project
    if (
        before.side == new_side
        and before.project == new_project
        and not before.unclassified
        and (project is None or before.project_rule == "moved")
        and (not sides or before.side_rule == "moved")
    ):
        raise InvalidInput(f"session {before.id} is already there: nothing to change")
    values: dict[str, Any] = {
        "side": new_side,
        "project": new_project,
        "unclassified": False,
        "updated_at": aware(now),
    }
    if sides:
        values["side_rule"] = "moved"
    if project is not None:
        values["project_rule"] = "moved"
    row = conn.execute(
        update(sessions)
        # Guarded by what was read: a hook that changed the row meanwhile is not overwritten.
        .where(sessions.c.id == before.id, sessions.c.updated_at == before.updated_at)
        .values(**values)
        .returning(*sessions.c)
    ).first()
    if row is None:
        raise Conflict(f"session {before.id} changed while this request ran; nothing was changed")
    from ondeck.memory.notes import follow_session

    # Its handoff and notes live where it does.
    follow_session(conn, now, before.id, side=new_side, project=new_project, actor=actor)
    event_log.record(
        conn,
        now,
        actor=actor,
        kind="session.moved",
        subject=f"session:{before.id}",
        details={
            "from": {
                "side": before.side,
                "project": before.project,
                "unclassified": before.unclassified,
            },
            "to": {"side": new_side, "project": new_project},
            "by": actor,
        },
    )
    return session_from_row(row)
