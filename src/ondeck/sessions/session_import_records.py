"""A client machine's `session import`, on the server's side: each past session comes as an
import record (`"kind": "import"`, made by imported_session.SessionImport.to_record on the
machine where the transcripts and their folders are) through the same intake as the hooks'
records (`POST /sessions/records`, sessions/intake.py), and is stored as a local import
stores it (SessionImport.store: recorded, completed or unchanged, never duplicated).

Checked field by field as a hook's record is (events_check: the same limits, the same
classification check), its texts scrubbed again (the server trusts no client to have done
it), and filed by the server's rules as a hook's record is: a side the server does not know
sends the session to its inbox (rows.unknown_side), a side-limited token records its own
side's sessions only (intake's access check, before this).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from ondeck.core.clock import aware
from ondeck.db.engine import writing
from ondeck.db.locks import one_import_at_a_time
from ondeck.db.refusals import is_content
from ondeck.sessions.capture.events import (
    LAST_WORD_MAX,
    SUMMARY_MAX,
    VERSION,
    WORD_LIMITS,
    instant,
    word,
)
from ondeck.sessions.capture.events_check import (
    checked_classified,
    checked_facts,
    checked_text,
    checked_who,
    count_of,
    kinds_of,
)
from ondeck.sessions.imported_session import IMPORT_KIND, SessionImport
from ondeck.sessions.rows import to_inbox, unknown_side
from ondeck.sessions.transcript_read import AHEAD_MAX, SUMMARIES_MAX


def is_import(item: Any) -> bool:
    """Whether an item the intake was given is an import record (else a hook's)."""
    return isinstance(item, dict) and item.get("kind") == IMPORT_KIND


def parse_import(data: dict[str, Any], now: datetime) -> dict[str, Any]:
    """An import record checked field by field, its texts scrubbed again: the record as
    SessionImport.of_record takes it, or ValueError naming what is wrong."""

    if data.get("v") != VERSION:
        raise ValueError(f"record version {str(data.get('v'))[:10]!r} is not {VERSION}")
    agent, session = checked_who(data)
    at, started = instant(data.get("at")), instant(data.get("started_at"))
    if started > at:
        raise ValueError("record started_at is after at (its last activity)")
    if at > aware(now) + AHEAD_MAX:
        raise ValueError("record at is in the future")
    fp, capture, classification = checked_classified(data)
    version = data.get("version")
    if version is not None and word(version, 32) != version:
        raise ValueError("record version must be a short word (at most 32 characters)")
    text, summaries = data.get("text"), data.get("summaries") or []
    if not capture and (text is not None or summaries):
        raise ValueError("a session that does not capture carries no text")
    if not isinstance(summaries, list) or len(summaries) > SUMMARIES_MAX:
        raise ValueError(f"record summaries must be a list of at most {SUMMARIES_MAX}")
    said = data.get("text_at")
    return {
        "kind": IMPORT_KIND,
        "agent": agent,
        "session": session,
        "at": at,
        "started_at": started,
        "fingerprint": fp,
        "capture": capture,
        "classification": classification,
        "facts": checked_facts(data.get("facts"), capture),
        "version": version,
        "text": _rescrubbed(checked_text(text, LAST_WORD_MAX)) if text is not None else None,
        "text_at": instant(said) if text is not None and said is not None else None,
        "summaries": [_summary(s) for s in summaries],
        "unknown_records": kinds_of(data.get("unknown_records")),
        "sidechain_entries": count_of(data.get("sidechain_entries", 0), "sidechain_entries"),
    }


def _summary(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("record summaries must be objects")
    trigger = value.get("trigger")
    if trigger is not None and word(trigger, WORD_LIMITS["trigger"]) != trigger:
        raise ValueError("record summary trigger must be a short word")
    said = value.get("at")
    return {
        **_rescrubbed(checked_text(value, SUMMARY_MAX)),
        "at": instant(said) if said is not None else None,
        "trigger": trigger,
    }


def _rescrubbed(text: dict[str, Any]) -> dict[str, Any]:
    """A checked text scrubbed again where it is stored; what this removes counted with
    what the client said it removed."""
    from ondeck.core.scrubber import scrub

    clean = scrub(text["value"])
    if not clean.redactions and clean.text == text["value"]:
        return text
    kinds = dict(text["kinds"])
    for kind, n in clean.kinds.items():
        kinds[kind] = kinds.get(kind, 0) + n
    return {
        **text,
        "value": clean.text,
        "redactions": text["redactions"] + clean.redactions,
        "kinds": kinds,
    }


def apply_import(
    engine: Engine,
    now: datetime,
    record: dict[str, Any],
    *,
    sides: Collection[str] | None = None,
) -> dict[str, Any]:
    """A checked import record stored in a transaction of its own, filed by this store's
    sides; the intake's answer: `imported` ("sessions", "completed" or "unchanged": the
    counts of session_import.ImportReport) and the redactions stored."""
    warning = unknown_side(record, sides)
    if warning is not None:
        record = to_inbox(record, warning)
    session = SessionImport.of_record(record, now)
    try:
        with writing(engine) as conn:
            one_import_at_a_time(conn)  # as a local import's session (session_import.py)
            outcome = session.store(conn)
    except DBAPIError as exc:
        if exc.orig is None or not is_content(exc.orig):
            raise
        reason = " ".join(str(exc.orig).split())[:300]
        return {
            "fingerprint": record["fingerprint"],
            "outcome": "rejected",
            "reason": f"refused by the database: {reason}",
        }
    c = record["classification"]
    return {
        "fingerprint": record["fingerprint"],
        "outcome": "duplicate" if outcome == "unchanged" else "applied",
        "imported": outcome,
        "redactions": session.stored_redactions if outcome != "unchanged" else 0,
        "session": {
            "side": c["side"]["value"],
            "project": c["project"]["value"],
            "unclassified": c["unclassified"],
        },
        **({"warning": warning} if warning else {}),
    }
