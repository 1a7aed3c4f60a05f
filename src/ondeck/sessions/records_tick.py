"""What the jobs tick does for sessions: drain the spool into the store, let the transcripts
of silent sessions say when they were last active (records_transcripts.py), then record as
lost the open sessions silent past ONDECK_SESSION_GRACE.

Every reader already shows such a session lost (db/predicates.SESSION_STATUS): recording it
gives it its `session.lost` event and lets the partial index of open sessions forget it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, select, update

from ondeck.core import logs
from ondeck.core.clock import aware
from ondeck.core.durations import format_duration
from ondeck.core.session_terms import SessionStatus
from ondeck.db import predicates
from ondeck.db.engine import writing
from ondeck.db.tables import sessions
from ondeck.sessions.capture.events_check import parse_record
from ondeck.sessions.records import shown, status_is
from ondeck.sessions.records_transcripts import read_before_lost
from ondeck.system import events as event_log

if TYPE_CHECKING:
    from ondeck.host.settings import Settings

log = logs.logger("ondeck.sessions")


def sessions_step(engine: Engine, now: datetime, settings: Settings) -> dict[str, Any]:
    """The jobs tick's sessions step: drain the spool, then mark silent sessions lost."""
    from sqlalchemy.exc import DBAPIError

    from ondeck.core.errors import Unavailable
    from ondeck.sessions.capture import spool
    from ondeck.sessions.intake import apply_alone

    def apply(batch: list[dict[str, Any]]) -> list[str | None]:
        answers: list[str | None] = []
        for record in batch:
            try:
                result = apply_alone(
                    engine, now, record, grace=settings.session_grace, sides=settings.sides
                )
            except (Unavailable, DBAPIError) as exc:
                # The store takes nothing now: the rest waits, the step goes on.
                if answers:
                    return answers
                raise spool.StoreGone(" ".join(str(exc).split())[:300]) from exc
            answers.append(result["reason"] if result.get("outcome") == "rejected" else None)
        return answers

    drained = spool.drain(settings.spool_dir, apply, parse_record, wait_s=0.0)
    with writing(engine) as conn:
        # A transcript may show the session active, or its last answer, after its last hook.
        read = read_before_lost(conn, now, settings.session_grace)
        lost = mark_lost(conn, now, settings.session_grace)
    if drained.applied or drained.rejected:
        log.info("spool: %d applied, %d rejected", drained.applied, drained.rejected)
    if read:
        log.info("read the transcripts of %d silent sessions: ids %s", len(read), read[:50])
    if lost:
        log.info("marked %d silent sessions lost: ids %s", len(lost), lost[:50])
    return {
        "drained": drained.applied,
        "rejected": drained.rejected,
        "waiting": drained.left,
        **({"why": drained.why} if drained.left and drained.why else {}),
        "transcripts_read": len(read),
        "lost": len(lost),
        "ids": lost[:50],
    }


def mark_lost(
    conn: Connection, now: datetime, grace: timedelta, *, actor: str = "jobs"
) -> list[int]:
    """Every open session silent (no hook event) for longer than `grace` becomes `lost`."""
    cutoff = predicates.lost_before(aware(now), grace)
    # What every reader already shows (db/predicates.py); ix_sessions_open_seen: open
    # sessions by last_seen_at.
    candidates = conn.execute(
        select(sessions.c.id, sessions.c.last_seen_at)
        .where(shown(predicates.SESSION_PRESUMED_LOST, cutoff))
        .order_by(sessions.c.id)
        .with_for_update(skip_locked=True)
    ).all()
    lost: list[int] = []
    for session_id, seen in candidates:
        row = conn.execute(
            update(sessions)
            # A hook heard between the read and this write keeps the session open.
            .where(
                sessions.c.id == session_id,
                status_is(SessionStatus.OPEN),
                sessions.c.last_seen_at == seen,
            )
            .values(status=SessionStatus.LOST.value, updated_at=aware(now))
            .returning(sessions.c.id)
        ).first()
        if row is None:
            continue
        event_log.record(
            conn,
            now,
            actor=actor,
            kind="session.lost",
            subject=f"session:{session_id}",
            details={"last_seen_at": aware(seen).isoformat(), "grace": format_duration(grace)},
        )
        lost.append(session_id)
    return lost
