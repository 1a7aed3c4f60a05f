"""One compaction heard by two doors is one compaction: the hook's record (stored at once, or
spooled and drained later) and the import of the session's transcript both tell of it, in
either order. This is the rule that says two are the same, for every door that stores one.

The two do not carry the same words: the PostCompact hook gives Claude's summary, the
transcript keeps it inside Claude Code's own preamble ("This session is being continued
from a previous conversation…"), both scrubbed and capped. Nor the same instant: the
transcript's entry is written as the summary is made, the hook runs right after. So the
same compaction is one whose summary holds the other's opening words, or one heard within
`SAME_WITHIN` of the other (a session cannot fill its context again in two minutes).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ondeck.db.plain import Db, instant_out, run

SAME_WITHIN = timedelta(minutes=2)
OPENING = 200  # characters of a summary that say which it is


def _opening(text: str) -> str:
    return " ".join(text.split())[:OPENING]


def same(a_at: datetime, a_summary: str | None, b_at: datetime, b_summary: str | None) -> bool:
    """Whether two compactions of one session are the same one."""
    if abs(a_at - b_at) <= SAME_WITHIN:
        return True
    if not a_summary or not b_summary:
        return False
    if len(a_summary) > len(b_summary):
        a_summary, b_summary = b_summary, a_summary
    opening = _opening(a_summary)
    return bool(opening) and opening in " ".join(b_summary.split())


def held(db: Db, session_id: int, at: datetime, summary: str | None) -> bool:
    """Whether the session's record already holds this compaction (from another door)."""
    rows = run(
        db,
        "SELECT at, summary FROM session_compactions WHERE session_id = :session_id",
        {"session_id": session_id},
    )
    for row in rows:
        known = instant_out(row["at"])
        if known is not None and same(known, row["summary"], at, summary):
            return True
    return False
