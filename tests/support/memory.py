"""Session rows and notes for the memory tests (and bench/memory.py): sessions written
straight into their table with the values the hooks would have stored, so a test can set
side, project, status and times exactly."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, insert, null

from ondeck.db.tables import session_compactions, sessions


def make_session(
    conn: Connection,
    at: datetime,
    *,
    external_id: str,
    side: str | None = None,
    project: str | None = None,
    status: str = "ended",
    minutes: int = 30,
    last_word: str | None = None,
    unclassified: bool = False,
    capture: bool = True,
    cwd: str | None = None,
    branch: str | None = None,
    start_head: str | None = None,
    end_head: str | None = None,
    commits: list[tuple[str, str]] | None = None,
    end_reason: str | None = "prompt_input_exit",
    agent: str = "claude-code",
) -> int:
    """A session row; returns its id. `at` is its start; it lasted `minutes`."""
    end = at + timedelta(minutes=minutes)
    values: dict[str, Any] = {
        "agent": agent,
        "external_id": external_id,
        "status": status,
        "started_at": at,
        "last_seen_at": end,
        "ended_at": end if status == "ended" else None,
        "end_reason": end_reason if status == "ended" else None,
        "start_source": "startup",
        "cwd": cwd if capture else None,
        "git_root": cwd if capture else None,
        "branch": branch if capture else None,
        "start_head": start_head if capture else None,
        "end_head": end_head if capture else None,
        "capture": capture,
        "side": None if unclassified else side,
        "project": None if unclassified else project,
        "side_rule": "path" if side and not unclassified else "none",
        "project_rule": "git" if project and not unclassified else "none",
        "unclassified": unclassified,
        "classification": {"unclassified": unclassified, "reason": "made by a test"},
        "disagreements": [],
        "last_word": last_word if capture else None,
        "last_word_at": end if last_word and capture else None,
        "commits": (
            {"items": [list(c) for c in commits], "total": len(commits)}
            if commits is not None and capture
            else null()  # SQL NULL: a JSON column given None stores the JSON `null`
        ),
        "redaction_kinds": {},
        "created_at": at,
        "updated_at": end,
    }
    return int(
        conn.execute(insert(sessions).values(**values).returning(sessions.c.id)).scalar_one()
    )


def add_compaction(conn: Connection, session_id: int, at: datetime, summary: str) -> int:
    return int(
        conn.execute(
            insert(session_compactions)
            .values(
                session_id=session_id,
                at=at,
                trigger="auto",
                summary=summary,
                chars=len(summary),
                redactions=0,
            )
            .returning(session_compactions.c.id)
        ).scalar_one()
    )
