"""Hook records and hook events applied by SQLAlchemy callers: the server's routes for the
hooks, the hooks' own SQLAlchemy path, and the jobs tick's spool drain.

`session_rows.apply` makes a record's change (the same SQL on the bare driver the hooks
use); this adds what needs SQLAlchemy: releasing the leases of a session that ended, and,
for the server's warm path, making the records of events as a hook received them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, select
from sqlalchemy.exc import DBAPIError

from ondeck.core import logs
from ondeck.core.clock import aware
from ondeck.core.errors import InvalidInput, Unavailable
from ondeck.core.session_terms import hook_actor, session_owner
from ondeck.core.sides import OWNER, Access
from ondeck.db.bare import SqlaDb
from ondeck.db.engine import reading, writing
from ondeck.db.refusals import is_content
from ondeck.db.tables import sessions
from ondeck.sessions import rows as session_rows
from ondeck.sessions.capture import start_commits
from ondeck.sessions.capture.events_check import parse_record, rescrubbed
from ondeck.sessions.session_import_records import apply_import, is_import, parse_import

log = logs.logger("ondeck.sessions")


def apply_record(
    conn: Connection,
    now: datetime,
    record: dict[str, Any],
    *,
    grace: timedelta | None = None,
    sides: Collection[str] | None = None,
) -> dict[str, Any]:
    """Apply a checked hook record in the caller's transaction; at a session's end, release
    the leases it held. Returns the outcome. `grace`: ONDECK_SESSION_GRACE, `sides`: the
    store's sides (session_rows.apply)."""
    applied = session_rows.apply(SqlaDb(conn), record, aware(now), grace=grace, sides=sides)
    if applied.get("warning") and not applied["duplicate"]:
        log.warning("session %s: %s", record["session"][:60], applied["warning"])
    released = release_at_end(conn, now, record) if applied["ended"] else []
    return session_rows.outcome(applied, record, released)


def release_at_end(conn: Connection, now: datetime, record: dict[str, Any]) -> list[int]:
    """Release the leases of the session whose end `record` is: its tasks are free for the
    next session at once rather than when their leases run out (the reaper covers sessions
    that never end). The ids released."""
    from ondeck.work.backlog_leases import release_held_by

    return release_held_by(
        conn,
        now,
        owner=session_owner(record["session"]),
        actor=hook_actor(record["session"]),
        reason=record.get("reason"),
    )


def apply_records(
    engine: Engine,
    now: datetime,
    raw: Sequence[Any],
    *,
    grace: timedelta | None = None,
    sides: Collection[str] | None = None,
    sent_at: datetime | None = None,
    access: Access = OWNER,
) -> list[dict[str, Any]]:
    """Records from the API or the spool, each checked and applied in its own transaction
    (one refused record does not undo the others). A malformed one is answered `rejected`
    with the reason; a database that goes away raises `Unavailable`. `sent_at`: the
    sender's clock as it sent them; one far from `now` is a skewed clock: the records are
    moved onto this clock, and each answer carries a `warning` naming both instants.
    `access`: a sender held to one side (a side-limited token) records that side's sessions
    only; a record of another side's session, or of the inbox, is rejected. An import
    record (a client's `session import`) is stored as a local import stores it
    (sessions/session_import_records.py)."""
    offset = session_rows.clock_offset(sent_at, now)
    if offset is not None and sent_at is not None:
        log.warning("%s", session_rows.skew_warning(sent_at, now))
    results: list[dict[str, Any]] = []
    for item in raw:
        try:
            # A client's `session import` comes through this same door (one intake).
            importing = is_import(item)
            record = parse_import(item, now) if importing else rescrubbed(parse_record(item))
        except ValueError as exc:
            fp = item.get("fingerprint") if isinstance(item, dict) else None
            results.append(
                {
                    "fingerprint": fp if isinstance(fp, str) else None,
                    "outcome": "rejected",
                    "reason": str(exc),
                }
            )
            continue
        refused = _outside(engine, record, access)
        if refused is not None:
            results.append(
                {"fingerprint": record.get("fingerprint"), "outcome": "rejected", "reason": refused}
            )
            continue
        if importing:  # a past session: its times are its transcript's, not a clock's now
            results.append(apply_import(engine, now, record, sides=sides))
            continue
        if offset is not None and sent_at is not None:
            record = session_rows.on_store_clock(record, offset, sent_at, now)
        result = apply_alone(engine, now, record, grace=grace, sides=sides)
        if offset is not None and sent_at is not None:
            said = [result.get("warning"), session_rows.skew_warning(sent_at, now)]
            result["warning"] = "; ".join(w for w in said if w)
        results.append(result)
    return results


def _outside(engine: Engine, record: dict[str, Any], access: Access) -> str | None:
    """Why a sender held to one side may not record this: the record's session is (or would
    be) of another side. One of no side goes to the inbox, as anyone's does: undecided, for
    the owner to classify, never read by the sender. None: it may."""
    if access.side is None:
        return None
    c = record["classification"]
    said = None if c["unclassified"] else c["side"]["value"]
    with reading(engine) as conn:
        stored = conn.execute(
            select(sessions.c.side, sessions.c.unclassified).where(
                sessions.c.agent == record["agent"],
                sessions.c.external_id == record["session"],
            )
        ).first()
    sides = [said] if stored is None else [said, None if stored.unclassified else stored.side]
    if any(side is not None and side != access.side for side in sides):
        return f"{access.who} records side {access.side!r} only: this session is of another"
    return None


def apply_alone(
    engine: Engine,
    now: datetime,
    record: dict[str, Any],
    *,
    grace: timedelta | None = None,
    sides: Collection[str] | None = None,
) -> dict[str, Any]:
    """A checked record applied in a transaction of its own. One the store refuses for its
    own content (a value too long for its column, a CHECK it breaks) is answered `rejected`
    with the store's reason, so it is set aside instead of blocking every record behind it;
    a store that takes nothing now raises (`Unavailable`, or the driver's error)."""
    try:
        with writing(engine) as conn:
            return apply_record(conn, now, record, grace=grace, sides=sides)
    except DBAPIError as exc:
        if exc.orig is None or not is_content(exc.orig):
            raise
        reason = " ".join(str(exc.orig).split())[:300]
        log.warning("hook record of session %s refused: %s", record["session"][:60], reason)
        return {
            "fingerprint": record["fingerprint"],
            "outcome": "rejected",
            "reason": f"refused by the database: {reason}",
        }


def record_hook_events(
    engine: Engine,
    now: datetime,
    events: Sequence[Any],
    rules: Any,
    *,
    grace: timedelta | None = None,
    sides: Collection[str] | None = None,
    later: Callable[[Callable[[], None]], None] | None = None,
    data_dir: str | None = None,
) -> list[dict[str, Any]]:
    """Hook events as a hook received them (`hook`, `payload`, `at`, `transcript_size`),
    made into records here, by the hook's own classification `rules`, and applied: the warm
    server's half of a hook (entrypoints/hooks/verbs.py). A session's end is followed by what git
    says it did, read after the answer when `later` schedules it (the hook does not wait
    for git). Each event is answered (`rejected` with the reason when malformed); an
    applied one with its classification and the `facts` its record holds (cwd, git).
    `data_dir`: where this machine's hooks keep what they know (a session's start commit,
    the spool), for an end whose start the store does not hold yet."""
    from ondeck.host.quick_settings import HookConfig
    from ondeck.sessions.capture.events import HOOK_KINDS, instant, make_record

    try:
        config = HookConfig.from_rules(rules, **({"data_dir": data_dir} if data_dir else {}))
    except ValueError as exc:
        raise InvalidInput(f"rules: {exc}") from None
    results: list[dict[str, Any]] = []
    for event in events:
        try:
            if not isinstance(event, dict) or event.get("hook") not in HOOK_KINDS:
                raise ValueError(f"hook must be one of {', '.join(HOOK_KINDS)}")
            payload, size = event.get("payload"), event.get("transcript_size")
            if not isinstance(payload, dict):
                raise ValueError("payload must be the hook's JSON object")
            if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
                raise ValueError("transcript_size must be a whole number")
            kind, at = HOOK_KINDS[event["hook"]], instant(event.get("at"))
            declined = _not_my_place(payload.get("cwd"))
            if declined is not None:
                results.append({"fingerprint": None, "outcome": "declined", "reason": declined})
                continue
            made = make_record(kind, payload, config, at, size=size, last=event.get("last_message"))
            if made is None:
                raise ValueError("no usable session_id in the payload")
            record = parse_record(made)
        except ValueError as exc:
            results.append({"fingerprint": None, "outcome": "rejected", "reason": str(exc)})
            continue
        result = _store_or_spool(engine, now, record, made, config, grace, sides)
        if kind == "end":
            # Which start git is read from is decided now, before the answer: what this
            # machine kept of the start (hooks/start_commits.py) is removed once the hook
            # has its answer.
            stored = result.get("session") or _start_stored(engine, made)
            start = start_commits.known(config.data_dir, config.spool_dir, made["session"], stored)
            follow = _read_changes(engine, now, made, start, config, at, grace, sides)
            if later is None:
                follow()
            else:
                later(follow)
        c = record["classification"]
        result["facts"] = made["facts"]  # for the caller's brief; not part of the answer
        result["classification"] = {
            "side": {"value": c["side"]["value"]},
            "project": {"value": c["project"]["value"]},
            "unclassified": c["unclassified"],
            "reason": c["reason"],
        }
        results.append(result)
    return results


def _store_or_spool(
    engine: Engine,
    now: datetime,
    record: dict[str, Any],
    made: dict[str, Any],
    config: Any,
    grace: timedelta | None,
    sides: Collection[str] | None,
) -> dict[str, Any]:
    """Store the record the server made of a hook event (`record`, checked; `made`, as
    made: what the spool keeps); when the database cannot take it
    now (SQLite locked by a long import, PostgreSQL away), write it down in this machine's
    spool instead, where the hooks keep theirs: the event is durable before the answer, and
    the next hook or jobs tick stores it. Else the mod, told 503, would hand the event to a
    hook that waits for the same lock again, past Claude Code's budget for a session end."""
    from ondeck.sessions.capture import spool

    try:
        with writing(engine) as conn:
            return apply_record(conn, now, record, grace=grace, sides=sides)
    except Unavailable as exc:
        spool.append(config.spool_dir, made)
        log.warning("hook event of session %s kept in the spool: %s", made["session"][:60], exc)
        return {"fingerprint": made["fingerprint"], "outcome": "spooled", "reason": str(exc)}


def _start_stored(engine: Engine, made: dict[str, Any]) -> dict[str, Any] | None:
    """The session's start as the store holds it, for an end it could not take (spooled):
    SQLite's readers go on beside a writer's lock (WAL), so its start's HEAD is still
    known; None when even that cannot be read."""
    columns = (
        sessions.c.start_head,
        sessions.c.git_root,
        sessions.c.capture,
        sessions.c.started_at,
    )
    try:
        with reading(engine) as conn:
            row = conn.execute(
                select(*columns)
                .where(sessions.c.agent == made["agent"])
                .where(sessions.c.external_id == made["session"])
            ).first()
    except Unavailable:
        return None
    return dict(row._mapping) if row is not None else None


def _read_changes(
    engine: Engine,
    now: datetime,
    end: dict[str, Any],
    start: dict[str, Any] | None,
    config: Any,
    at: datetime,
    grace: timedelta | None,
    sides: Collection[str] | None,
) -> Callable[[], None]:
    from ondeck.sessions.capture.git_changes import changes_of

    def follow() -> None:
        try:
            changes = changes_of(end, start, config, at)
            if changes is not None:
                _store_or_spool(engine, now, parse_record(changes), changes, config, grace, sides)
        except Exception:  # after the answer: nobody else to tell
            log.exception("reading git at the end of session %s failed", end["session"])

    return follow


def _not_my_place(cwd: Any) -> str | None:
    """Why this server should not read the session's place itself (the hook then does), or
    None. A server running as another user (a system service) may not be able to read the
    directory, and git refuses repositories of other users: its facts, and so the session's
    classification, would differ from the hook's own."""
    import os

    if not isinstance(cwd, str) or not cwd.startswith("/"):
        return None  # no place: nothing to read, the same on both sides
    try:
        owner = os.stat(cwd).st_uid
    except (OSError, ValueError):
        return None
    if owner != os.getuid():
        return "the server runs as another user than the owner of the session's directory"
    return None
