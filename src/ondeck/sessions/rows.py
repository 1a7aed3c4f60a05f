"""Applying hook records to the `sessions` table: on a SQLAlchemy connection, or on the bare
database driver.

Why the bare driver: a hook without a server pays for its whole process at every turn, and
its target is the cost of `import sqlalchemy` alone. So these statements are plain SQL run
through `Db`, which is either a SQLAlchemy connection (its driver connection: the server, the
CLI, the jobs tick's spool drain; same transaction as the caller's) or a connection of
`sqlite3`/`psycopg` opened here (the hook). Both run exactly the same statements and the
same Python: one copy of every rule. The statements and the values as the columns store
them are `rows_sql`'s; what each kind of record changes in a row is
`session_store_change`'s; this module reads and locks the row, keeps the receipt and writes
the events.

How a record changes a session (each hook is idempotent on what it received):

- its receipt (`hook_receipts`, keyed by the record's fingerprint) is inserted first; when it
  is already there the record was applied before and nothing changes;
- `start` opens the record (agent, external id: UNIQUE, so a `resume` reopens the same
  row and never makes a second); a session that ended or was lost is reopened by a resume;
- `stop` keeps the latest last word (by the time the hook ran: async hooks may arrive out of
  order); `compact` appends Claude's summary; `end` ends it; `changes` adds what git says
  the session did; each also counts as "heard from" (`last_seen_at`) and reopens a `lost`
  session (it was not dead after all) but never an `ended` one (an async Stop may finish
  after SessionEnd);
- a record whose place classifies otherwise than the session's start adds a disagreement;
- every change writes its event (`session:<id>`), in the same transaction.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime, timedelta
from typing import Any

from ondeck.core.session_terms import SessionStatus, hook_actor, session_owner
from ondeck.db.plain import Db
from ondeck.db.predicates import lost_before
from ondeck.sessions import compactions
from ondeck.sessions.rows_change import DISAGREEMENTS_MAX, UNKNOWN_SOURCE, Change
from ondeck.sessions.rows_sql import params, row_out, sql

# A hook's clock this far from the store's is skewed, not late: a request takes seconds.
CLOCK_SKEW_MAX = timedelta(minutes=5)


# --- applying ---------------------------------------------------------------------------


def _locked(db: Db, agent: str, external_id: str) -> dict[str, Any] | None:
    statement = sql(db, "session")
    if db.dialect == "postgresql":
        statement += " FOR UPDATE"  # SQLite's write transaction already excludes writers
    found = db.run(statement, {"agent": agent, "external_id": external_id})
    return row_out(found[0]) if found else None


def _new_row(record: dict[str, Any], now: datetime) -> dict[str, Any]:
    c = record["classification"]
    capture = record["capture"]
    facts = record["facts"] if capture else {}
    start = record["kind"] == "start"
    return {
        "agent": record["agent"],
        "external_id": record["session"],
        "status": SessionStatus.OPEN,
        "started_at": record["at"],
        "last_seen_at": record["at"],
        "start_source": (record.get("source") or UNKNOWN_SOURCE) if start else None,
        "last_start_at": record["at"] if start else None,
        "resumes": 1 if start and record.get("source") == "resume" else 0,
        "cwd": facts.get("cwd"),
        "git_root": facts.get("git_root"),
        "branch": facts.get("branch"),
        "start_head": facts.get("head") if start else None,
        "capture": capture,
        **classified_columns(c, record["at"]),
        "compactions": 0,
        "redactions": 0,
        "redaction_kinds": {},
        "created_at": now,
        "updated_at": now,
        "transcript_path": facts.get("transcript"),
    }


def classified_columns(c: dict[str, Any], at: datetime) -> dict[str, Any]:
    """The columns of a new session row its classification (as records carry it) gives,
    with the signals that disagreed as of `at`."""
    signal_disagreements = [
        {"kind": "signals", "at": at.isoformat(), **d} for d in c["disagreements"]
    ]
    return {
        "side": c["side"]["value"],
        "project": c["project"]["value"],
        "side_rule": c["side"]["rule"],
        "project_rule": c["project"]["rule"],
        "unclassified": c["unclassified"],
        "classification": c,
        "disagreements": signal_disagreements[:DISAGREEMENTS_MAX],
    }


class Applied(dict[str, Any]):
    """What applying a record did: `session` (the row after), `duplicate`, `events` (kinds
    written), `ended` (the session ended now: its leases are to be released), `warning`
    (what the hook is to be told, or None)."""


def clock_offset(hook_now: datetime | None, now: datetime) -> timedelta | None:
    """How far the store's clock is ahead of the hook's (`hook_now`: the hook's clock when
    it sent its records), when that is more than CLOCK_SKEW_MAX; else None."""
    if hook_now is None:
        return None
    offset = now - hook_now
    return offset if abs(offset) > CLOCK_SKEW_MAX else None


def on_store_clock(
    record: dict[str, Any], offset: timedelta, hook_now: datetime, now: datetime
) -> dict[str, Any]:
    """The record with its times moved onto the store's clock (a client 13 hours behind
    would otherwise make a live session lost, then reopen it at every turn), and the two
    instants kept for the warning."""

    def on_ours(at: datetime) -> datetime:
        try:
            return at + offset
        except OverflowError:  # a clock millennia off: the store's now is all there is
            return now

    moved = {**record, "at": on_ours(record["at"])}
    if record.get("text_at") is not None:
        moved["text_at"] = on_ours(record["text_at"])
    moved["clock_skew"] = {"hook": hook_now.isoformat(), "server": now.isoformat()}
    return moved


def skew_warning(hook_now: datetime, now: datetime) -> str:
    """The warning a hook is answered with, naming both instants."""
    offset = now - hook_now
    way = "behind" if offset.total_seconds() > 0 else "ahead of"
    return (
        f"this machine's clock ({hook_now.isoformat(timespec='seconds')}) is "
        f"{_span(abs(offset))} {way} the server's ({now.isoformat(timespec='seconds')}): "
        "the server ordered this session's events by its own clock; set this clock right "
        "(NTP)"
    )


def _span(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def unknown_side(record: dict[str, Any], sides: Collection[str] | None) -> str | None:
    """Why the record's side is not one this store knows (`sides`: the store's; None: not
    checked, as when the hook's own settings are the store's), or None."""
    if sides is None:
        return None
    c = record["classification"]
    side = c["side"]["value"]
    if c["unclassified"] or (side in sides if sides else side is None):
        return None
    known = ", ".join(sorted(sides)) if sides else "none (one pool)"
    project = c["project"]["value"]
    of_project = f" (project {project!r})" if project else ""
    if side is None:
        return (
            f"the hook gave this session no side{of_project}, and this server's sides are {known}"
        )
    return f"side {side!r}{of_project} is not one of this server's sides: {known}"


def to_inbox(record: dict[str, Any], why: str) -> dict[str, Any]:
    """The record unclassified: its session waits in the inbox for a person (`session
    move`), as any whose side is undecided, rather than living under a side nobody sees."""
    c = record["classification"]
    nowhere = {"value": None, "rule": "none", "source": None}
    moved = {
        **c,
        "side": nowhere,
        "project": nowhere,
        "unclassified": True,
        "reason": why,
        "problems": [*c.get("problems", []), why][-200:],
    }
    return {**record, "classification": moved}


def apply(
    db: Db,
    record: dict[str, Any],
    now: datetime,
    *,
    grace: timedelta | None = None,
    sides: Collection[str] | None = None,
    actor: str | None = None,
) -> Applied:
    """Apply one checked record (events_check.parse_record) in the caller's transaction.
    `grace`: ONDECK_SESSION_GRACE, which every entry point gives (an event older than now
    minus it reopens nothing; None: any event may). `sides`: the store's own, when the
    record was classified by another machine's rules: a side it does not know sends the
    session to the inbox, with a warning in the answer."""
    warning = unknown_side(record, sides)
    if warning is not None:
        record = to_inbox(record, warning)
    if record["at"] > now:
        # A hook whose clock runs ahead must not keep its session "heard from" in the
        # future (never lost); what the store's clock says is the latest it can be.
        record = {**record, "at": now}
        if record.get("text_at") is not None and record["text_at"] > now:
            record["text_at"] = now
    agent, external = record["agent"], record["session"]
    actor = actor or hook_actor(external)
    row = _locked(db, agent, external)
    created = False
    if row is None:
        inserted = db.run(sql(db, "insert_session"), params(db, _new_row(record, now)))
        row = _locked(db, agent, external)
        if row is None:  # pragma: no cover - the insert or a concurrent one made it
            raise RuntimeError(f"session {external} vanished while being recorded")
        created = bool(inserted)
    receipt = db.run(
        sql(db, "receipt"),
        params(
            db,
            {
                "fingerprint": record["fingerprint"],
                "session_id": row["id"],
                "kind": record["kind"],
                "at": record["at"],
            },
        ),
    )
    if not receipt:
        return Applied(session=row, duplicate=True, events=[], ended=False, warning=warning)
    cutoff = lost_before(now, grace) if grace is not None else None
    change = Change(row, record, now, cutoff)
    if record["kind"] == "compact" and not created:
        text = record.get("text")
        summary = text["value"] if text else None
        change.compaction_held = compactions.held(db, row["id"], record["at"], summary)
    if created:
        change.event("session.started", change.started_details(late=False))
    else:
        change.heard_from()
    getattr(change, f"on_{record['kind']}")(created)
    if not created:
        change.place()
        change.transcript()
    skew = record.get("clock_skew")
    if skew is not None:
        change.event(
            "session.clock_skew", {"hook_clock": skew["hook"], "server_clock": skew["server"]}
        )
    session = change.save(db)
    for kind, details in change.events:
        db.run(
            sql(db, "event"),
            params(
                db,
                {
                    "at": now,
                    "actor": actor[:200],
                    "kind": kind,
                    "subject": f"session:{row['id']}",
                    "details": details,
                },
            ),
        )
    return Applied(
        session=session,
        duplicate=False,
        events=[kind for kind, _ in change.events],
        ended=change.ended,
        warning=warning,
    )


def held_leases(db: Db, external_id: str) -> list[int]:
    """The tasks a session still holds (owner `claude:<session id>`)."""
    found = db.run(sql(db, "held"), {"owner": session_owner(external_id)})
    return [int(r["id"]) for r in found]


def outcome(
    applied: Mapping[str, Any], record: Mapping[str, Any], released: list[int]
) -> dict[str, Any]:
    """What a hook is told about a record it sent: enough to go on (the session's end reads
    git from the start's HEAD) and nothing of the session's texts."""
    row = applied["session"]
    return {
        "fingerprint": record["fingerprint"],
        "outcome": "duplicate" if applied["duplicate"] else "applied",
        "session": {
            "id": row["id"],
            "status": row["status"],
            "capture": bool(row["capture"]),
            "unclassified": bool(row["unclassified"]),
            "side": row["side"],
            "project": row["project"],
            "git_root": row["git_root"],
            "start_head": row["start_head"],
            # When it began: the commits it is credited with were committed since.
            "started_at": row["started_at"],
            "reason": (row["classification"] or {}).get("reason"),
        },
        "released": released,
        **({"warning": applied["warning"]} if applied.get("warning") else {}),
    }
