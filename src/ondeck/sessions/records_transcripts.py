"""Before the jobs tick records a silent session lost, its transcript has its say: a session
whose end never came (the terminal closed, the machine slept) was often active after the
last hook ondeck heard, and answered something no Stop brought. When a hook named the
session's transcript (`transcript_path`, checked on the hook's machine), the record takes
the transcript's last activity and last answer, as the session-end hook reads them
(sessions/capture/transcript_tail.py: one reader). A session active within the grace after all stays
open; the others are recorded lost as before (records_tick.mark_lost).

The path is read again as untrusted: only a file of this user's ~/.claude/projects, by its
real path (transcript.owned_transcript). A jobs loop running as another user, or on
another machine than the session's, reads nothing and changes nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, select, update

from ondeck.core.clock import aware
from ondeck.core.session_terms import SessionStatus
from ondeck.db import predicates
from ondeck.db.tables import sessions
from ondeck.sessions.records import shown, status_is
from ondeck.system import events as event_log

# Sessions read a tick: those past it are recorded lost unread (a backlog of hundreds of
# silent sessions is a first tick after a long outage, not a day's work).
BATCH = 500


def read_before_lost(
    conn: Connection, now: datetime, grace: timedelta, *, actor: str = "jobs"
) -> list[int]:
    """Open sessions presumed lost that have a transcript take its last activity and answer.
    The ids of the sessions that changed."""
    from ondeck.sessions.capture.events import LAST_WORD_MAX, scrubbed
    from ondeck.sessions.capture.transcript_tail import (
        last_activity,
        last_message,
        owned_transcript,
    )

    now = aware(now)
    cutoff = predicates.lost_before(now, grace)
    rows = conn.execute(
        select(sessions)
        .where(shown(predicates.SESSION_PRESUMED_LOST, cutoff))
        .where(sessions.c.transcript_path.is_not(None))
        .order_by(sessions.c.id)
        .limit(BATCH)
        .with_for_update(skip_locked=True)
    ).mappings()
    changed: list[int] = []
    for row in list(rows):
        path = owned_transcript(row["transcript_path"])
        if path is None or not row["capture"]:
            continue
        payload = {"transcript_path": path}
        values: dict[str, Any] = {}
        seen = _instant(last_activity(payload), now)
        if seen is not None and seen > aware(row["last_seen_at"]):
            values["last_seen_at"] = seen
        answer = last_message(payload)
        said = _instant(answer.get("at"), now) if answer else None
        if answer and said is not None:
            known = row["last_word_at"]
            if row["last_word"] is None or (known is not None and said > aware(known)):
                text = scrubbed(answer["text"], LAST_WORD_MAX)
                values.update(last_word=text["value"], last_word_at=said)
                if text["redactions"]:
                    values["redactions"] = row["redactions"] + text["redactions"]
                    kinds = dict(row["redaction_kinds"] or {})
                    for kind, n in text["kinds"].items():
                        kinds[kind] = int(kinds.get(kind, 0)) + n
                    values["redaction_kinds"] = kinds
        if not values:
            continue
        done = conn.execute(
            update(sessions)
            .where(
                sessions.c.id == row["id"],
                status_is(SessionStatus.OPEN),
                sessions.c.last_seen_at == row["last_seen_at"],
            )
            .values(**values, updated_at=now)
        ).rowcount
        if not done:
            continue  # a hook was heard meanwhile: it knows better
        details: dict[str, Any] = {"added": sorted(k for k in values if k in _SHOWN)}
        if "last_seen_at" in values:
            details["last_seen_at"] = values["last_seen_at"].isoformat()
        event_log.record(
            conn,
            now,
            actor=actor,
            kind="session.transcript_read",
            subject=f"session:{row['id']}",
            details=details,
        )
        changed.append(int(row["id"]))
    return changed


_SHOWN = ("last_seen_at", "last_word")


def _instant(value: Any, now: datetime) -> datetime | None:
    """A transcript's instant, not after now (a clock ahead says nothing of when)."""
    if not isinstance(value, str):
        return None
    try:
        at = aware(datetime.fromisoformat(value))
    except ValueError:
        return None
    return at if at <= now else None
