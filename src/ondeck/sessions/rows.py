"""Applying hook records to the `sessions` table: on a SQLAlchemy connection, or on the bare
database driver.

Why the bare driver: a hook without a server pays for its whole process at every turn, and
its target is the cost of `import sqlalchemy` alone. So these statements are plain SQL run
through `Db`, which is either a SQLAlchemy connection (its driver connection: the server, the
CLI, the jobs tick's spool drain; same transaction as the caller's) or a connection of
`sqlite3`/`psycopg` opened here (the hook). Both run exactly the same statements and the
same Python below: one copy of every rule. Values are given to the driver the way ondeck's
column types store them (db/plain.py: instants as UTC text on SQLite, JSON as text, cast to
JSONB on PostgreSQL), so either side reads what the other wrote.

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

from ondeck.db.plain import Db, instant_in, instant_out, json_in, json_out
from ondeck.db.plain import render as _for
from ondeck.db.predicates import lost_before

OWNER_PREFIX = "claude:"  # leases a session holds: owner `claude:<session id>`
# A hook's clock this far from the store's is skewed, not late: a request takes seconds.
CLOCK_SKEW_MAX = timedelta(minutes=5)
DISAGREEMENTS_MAX = 50

INSTANTS = frozenset(
    {"started_at", "last_seen_at", "ended_at", "last_word_at", "created_at", "updated_at"}
)
JSONS = frozenset({"classification", "disagreements", "commits", "files", "redaction_kinds"})
BOOLS = frozenset({"capture", "unclassified"})


# --- statements -----------------------------------------------------------------------------

_COLUMNS = (
    "agent",
    "external_id",
    "status",
    "started_at",
    "last_seen_at",
    "start_source",
    "resumes",
    "cwd",
    "git_root",
    "branch",
    "start_head",
    "capture",
    "side",
    "project",
    "side_rule",
    "project_rule",
    "unclassified",
    "classification",
    "disagreements",
    "compactions",
    "redactions",
    "redaction_kinds",
    "created_at",
    "updated_at",
)
_UPDATABLE = frozenset(
    {
        "status",
        "started_at",
        "last_seen_at",
        "ended_at",
        "end_reason",
        "start_source",
        "resumes",
        "cwd",
        "git_root",
        "branch",
        "start_head",
        "end_head",
        "capture",
        "side",
        "project",
        "side_rule",
        "project_rule",
        "unclassified",
        "classification",
        "disagreements",
        "last_word",
        "last_word_at",
        "compactions",
        "commits",
        "files",
        "git_note",
        "redactions",
        "redaction_kinds",
        "updated_at",
    }
)

SQL = {
    "session": "SELECT * FROM sessions WHERE agent = :agent AND external_id = :external_id",
    "insert_session": (
        f"INSERT INTO sessions ({', '.join(_COLUMNS)}) VALUES ("
        + ", ".join(f"JSON(:{c})" if c in JSONS else f":{c}" for c in _COLUMNS)
        + ") ON CONFLICT (agent, external_id) DO NOTHING RETURNING id"
    ),
    "receipt": (
        "INSERT INTO hook_receipts (fingerprint, session_id, kind, at)"
        " VALUES (:fingerprint, :session_id, :kind, :at)"
        " ON CONFLICT (fingerprint) DO NOTHING RETURNING fingerprint"
    ),
    # The same row events.record writes through SQLAlchemy.
    "event": (
        "INSERT INTO events (at, actor, kind, subject, details)"
        " VALUES (:at, :actor, :kind, :subject, JSON(:details))"
    ),
    "compaction": (
        "INSERT INTO session_compactions (session_id, at, trigger, summary, chars, redactions)"
        " VALUES (:session_id, :at, :trigger, :summary, :chars, :redactions) RETURNING id"
    ),
    "held": ("SELECT id FROM tasks WHERE status = 'RUNNING' AND lease_owner = :owner ORDER BY id"),
}


def sql(db: Db, name: str) -> str:
    return _for(db.dialect, SQL[name])


# --- values as the columns store them -----------------------------------------------------


def row_out(row: dict[str, Any]) -> dict[str, Any]:
    """A `sessions` row as Python values, whichever driver read it."""
    out = dict(row)
    for key in INSTANTS & out.keys():
        out[key] = instant_out(out[key])
    for key in JSONS & out.keys():
        out[key] = json_out(out[key])
    for key in BOOLS & out.keys():
        out[key] = bool(out[key])
    return out


def _params(db: Db, values: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in values.items():
        if key in INSTANTS or key == "at":
            out[key] = instant_in(db, value)
        elif key in JSONS or key == "details":
            out[key] = json_in(value)
        else:
            out[key] = value
    return out


# --- applying ---------------------------------------------------------------------------


def _locked(db: Db, agent: str, external_id: str) -> dict[str, Any] | None:
    statement = sql(db, "session")
    if db.dialect == "postgresql":
        statement += " FOR UPDATE"  # SQLite's write transaction already excludes writers
    found = db.run(statement, {"agent": agent, "external_id": external_id})
    return row_out(found[0]) if found else None


# What a start that names no source (startup, resume, clear, compact) is stored as: the row's
# `start_source` must still say a start was heard, or every later start would be taken for
# the first (one more start event each, and the start commit reset).
UNKNOWN_SOURCE = "unknown"


def _new_row(record: dict[str, Any], now: datetime) -> dict[str, Any]:
    c = record["classification"]
    capture = record["capture"]
    facts = record["facts"] if capture else {}
    start = record["kind"] == "start"
    signal_disagreements = [
        {"kind": "signals", "at": record["at"].isoformat(), **d} for d in c["disagreements"]
    ]
    return {
        "agent": record["agent"],
        "external_id": record["session"],
        "status": "open",
        "started_at": record["at"],
        "last_seen_at": record["at"],
        "start_source": (record.get("source") or UNKNOWN_SOURCE) if start else None,
        "resumes": 0,
        "cwd": facts.get("cwd"),
        "git_root": facts.get("git_root"),
        "branch": facts.get("branch"),
        "start_head": facts.get("head") if start else None,
        "capture": capture,
        "side": c["side"]["value"],
        "project": c["project"]["value"],
        "side_rule": c["side"]["rule"],
        "project_rule": c["project"]["rule"],
        "unclassified": c["unclassified"],
        "classification": c,
        "disagreements": signal_disagreements[:DISAGREEMENTS_MAX],
        "compactions": 0,
        "redactions": 0,
        "redaction_kinds": {},
        "created_at": now,
        "updated_at": now,
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


def _to_inbox(record: dict[str, Any], why: str) -> dict[str, Any]:
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
    """Apply one checked record (hook_records.parse_record) in the caller's transaction.
    `grace`: ONDECK_SESSION_GRACE, which every entry point gives (an event older than now
    minus it reopens nothing; None: any event may). `sides`: the store's own, when the
    record was classified by another machine's rules: a side it does not know sends the
    session to the inbox, with a warning in the answer."""
    warning = unknown_side(record, sides)
    if warning is not None:
        record = _to_inbox(record, warning)
    if record["at"] > now:
        # A hook whose clock runs ahead must not keep its session "heard from" in the
        # future (never lost); what the store's clock says is the latest it can be.
        record = {**record, "at": now}
        if record.get("text_at") is not None and record["text_at"] > now:
            record["text_at"] = now
    agent, external = record["agent"], record["session"]
    actor = actor or f"hook:{external[:60]}"
    row = _locked(db, agent, external)
    created = False
    if row is None:
        inserted = db.run(sql(db, "insert_session"), _params(db, _new_row(record, now)))
        row = _locked(db, agent, external)
        if row is None:  # pragma: no cover - the insert or a concurrent one made it
            raise RuntimeError(f"session {external} vanished while being recorded")
        created = bool(inserted)
    receipt = db.run(
        sql(db, "receipt"),
        _params(
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
    change = _Change(row, record, now, cutoff)
    if created:
        change.event("session.started", change.started_details(late=False))
    else:
        change.heard_from()
    getattr(change, f"on_{record['kind']}")(created)
    if not created:
        change.place()
    skew = record.get("clock_skew")
    if skew is not None:
        change.event(
            "session.clock_skew", {"hook_clock": skew["hook"], "server_clock": skew["server"]}
        )
    session = change.save(db)
    for kind, details in change.events:
        db.run(
            sql(db, "event"),
            _params(
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


class _Change:
    """The changes one record makes to one session row, and the events they write."""

    def __init__(
        self,
        row: dict[str, Any],
        record: dict[str, Any],
        now: datetime,
        cutoff: datetime | None,
    ) -> None:
        self.row, self.record, self.now = row, record, now
        self.lost_before = cutoff
        self.values: dict[str, Any] = {}
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.compaction: dict[str, Any] | None = None
        self.ended = False

    def get(self, key: str) -> Any:
        return self.values.get(key, self.row.get(key))

    def set(self, key: str, value: Any) -> None:
        if self.get(key) != value:
            self.values[key] = value

    def event(self, kind: str, details: dict[str, Any]) -> None:
        at = self.record["at"]
        if abs((self.now - at).total_seconds()) > 60:  # spooled: say when it happened
            details = {**details, "hook_at": at.isoformat()}
        if self.record.get("input"):  # what the hook mended to keep it (hook_input.py)
            details = {**details, "input": self.record["input"]}
        self.events.append((kind, details))

    @property
    def capture(self) -> bool:
        return bool(self.get("capture")) and bool(self.record["capture"])

    def started_details(self, *, late: bool) -> dict[str, Any]:
        return {
            "source": self.record.get("source"),
            "first_heard": self.record["kind"],
            "side": self.get("side"),
            "project": self.get("project"),
            "unclassified": self.get("unclassified"),
            "capture": self.get("capture"),
            **({"late": True} if late else {}),
        }

    def heard_from(self) -> None:
        at = self.record["at"]
        if at > self.row["last_seen_at"]:
            self.set("last_seen_at", at)

    def alive_since(self) -> bool:
        """Whether this record shows the session alive after what the row knows: heard
        within the grace (older, and a lost session stays lost: a spooled Stop of 14 hours
        ago adds its last word and reopens nothing), and after an end it has."""
        at = self.record["at"]
        if self.lost_before is not None and at < self.lost_before:
            return False
        ended = self.get("ended_at")
        return ended is None or at > ended

    def reopen_if_lost(self, by: str) -> None:
        if self.get("status") == "lost" and self.alive_since():
            self.set("status", "open")
            self.event("session.reopened", {"from": "lost", "by": by})

    def count_redactions(self, count: int, kinds: dict[str, int]) -> None:
        if not count:
            return
        self.set("redactions", int(self.get("redactions")) + count)
        merged = dict(self.get("redaction_kinds") or {})
        for name, n in kinds.items():
            merged[name] = merged.get(name, 0) + n
        self.set("redaction_kinds", merged)

    # -- per kind ------------------------------------------------------------------------

    def on_start(self, created: bool) -> None:
        source = self.record.get("source")
        if created:
            return
        if self.row["start_source"] is None:
            # The start arrives after a later event made the row (a spool drained out of
            # order, a hook installed mid-session): it is the session's start after all.
            self.set("start_source", source or UNKNOWN_SOURCE)
            self.set("started_at", min(self.row["started_at"], self.record["at"]))
            if self.capture:
                facts = self.record["facts"]
                self.set("start_head", facts.get("head"))
                for key in ("cwd", "git_root", "branch"):
                    if self.row[key] is None:
                        self.set(key, facts.get(key))
            if self.row["side_rule"] != "moved":
                self.adopt(self.record["classification"])
            # Not a second "started": the record began when its first event was heard; this
            # says when the session itself did.
            self.event("session.start_heard_late", self.started_details(late=True))
            return
        status = self.get("status")
        ended_at = self.get("ended_at")
        if status == "ended" and ended_at is not None and self.record["at"] < ended_at:
            return  # a resume from before the end, arriving after it (a hook stores its own
            # event before it drains the spool): it does not reopen what ended since
        # A resume reopens; so does any start of a session thought lost (it was not). A new
        # `startup` always comes with a new session id: for a known one it is a replay.
        if (source == "resume" or status == "lost") and self.alive_since():
            self.set("status", "open")
            self.set("ended_at", None)
            self.set("end_reason", None)
            if source == "resume":
                self.set("resumes", int(self.row["resumes"]) + 1)
            self.event(
                "session.resumed" if source == "resume" else "session.reopened",
                {"from": status, "source": source},
            )

    def adopt(self, c: dict[str, Any]) -> None:
        """Take the start's classification (the session was made by a later event)."""
        self.set("classification", c)
        self.set("side", c["side"]["value"])
        self.set("project", c["project"]["value"])
        self.set("side_rule", c["side"]["rule"])
        self.set("project_rule", c["project"]["rule"])
        self.set("unclassified", c["unclassified"])
        if not c["capture"]["value"] and self.get("capture"):
            self.capture_off()

    def capture_off(self) -> None:
        """The start said the place keeps no text: forget what later events stored."""
        self.set("capture", False)
        for key in ("cwd", "git_root", "branch", "start_head", "end_head", "last_word"):
            self.set(key, None)
        for key in ("commits", "files"):
            self.set(key, None)

    def on_stop(self, created: bool) -> None:
        self.reopen_if_lost("stop")
        text = self.record.get("text")
        if not self.capture or text is None:
            return
        self.last_word(text, self.record["at"], None)

    def last_word(self, text: dict[str, Any], said_at: datetime, by: str | None) -> None:
        """Keep the latest last word: by when it was said (async Stop hooks may arrive out of
        order, and an end brings the transcript's last answer, `by` "transcript")."""
        last = self.get("last_word_at")
        if last is not None and said_at < last:
            return  # an older turn's answer arriving late: the later last word stays
        if text["value"] == self.get("last_word"):
            # The same answer twice (the end read it from the transcript, then the Stop
            # Claude Code did not cancel came): one answer, one event, one count.
            if last is None or said_at > last:
                self.set("last_word_at", said_at)
            return
        self.set("last_word", text["value"])
        self.set("last_word_at", said_at)
        self.count_redactions(text["redactions"], text["kinds"])
        details = {
            "chars": text["chars"],
            "kept": len(text["value"]),
            "redactions": text["redactions"],
        }
        self.event("session.last_word", {**details, **({"from": by} if by else {})})

    def on_compact(self, created: bool) -> None:
        self.reopen_if_lost("compaction")
        text = self.record.get("text") if self.capture else None
        self.compaction = {
            "at": self.record["at"],
            "trigger": self.record.get("trigger"),
            "summary": text["value"] if text else None,
            "chars": text["chars"] if text else 0,
            "redactions": text["redactions"] if text else 0,
        }
        self.set("compactions", int(self.row["compactions"]) + 1)
        if text:
            self.count_redactions(text["redactions"], text["kinds"])
        self.event(
            "session.compacted",
            {
                "trigger": self.record.get("trigger"),
                "chars": self.compaction["chars"],
                "redactions": self.compaction["redactions"],
            },
        )

    def on_end(self, created: bool) -> None:
        text = self.record.get("text")
        if text is not None and self.capture:
            self.last_word(text, self.record.get("text_at") or self.record["at"], "transcript")
        status = self.get("status")
        if status == "ended":
            return  # ended before (and not resumed since): the first end stands
        ended_at = max(self.record["at"], self.get("started_at"))
        self.set("status", "ended")
        self.set("ended_at", ended_at)
        self.set("end_reason", self.record.get("reason"))
        if self.capture:
            self.set("end_head", self.record["facts"].get("head"))
        self.ended = True
        self.event("session.ended", {"reason": self.record.get("reason"), "from": status})

    def on_changes(self, created: bool) -> None:
        if not self.capture:
            return
        r = self.record
        commits = None
        if r["commits"] is not None:
            commits = {"items": r["commits"], "total": max(r["commits_total"], len(r["commits"]))}
        files = None
        if r["files"] is not None:
            files = {
                "paths": r["files"],
                "total": max(r["files_total"], len(r["files"])),
                "private": r["files_private"],
            }
        self.set("commits", commits)
        self.set("files", files)
        self.set("git_note", r["note"])
        self.count_redactions(r["redactions"], r["kinds"])
        self.event(
            "session.changes_read",
            {
                "commits": commits["total"] if commits else None,
                "files": files["total"] if files else None,
                "private_files": r["files_private"],
                "note": r["note"],
            },
        )

    def place(self) -> None:
        """A record whose place classifies otherwise than the start: a disagreement."""
        here = self.record["classification"]
        start = self.get("classification")

        def key(c: dict[str, Any]) -> tuple[Any, ...]:
            return (
                c["side"]["value"],
                c["project"]["value"],
                c["unclassified"],
                c["capture"]["value"],
            )

        if key(here) == key(start):
            return
        cwd = self.record["facts"].get("cwd") if self.capture else None
        entry = {
            "kind": "place",
            "at": self.record["at"].isoformat(),
            "hook": self.record["kind"],
            "cwd": cwd,
            "side": here["side"]["value"],
            "project": here["project"]["value"],
            "unclassified": here["unclassified"],
            "capture": here["capture"]["value"],
            "reason": here["reason"],
        }
        known = list(self.get("disagreements") or [])
        same = ("cwd", "side", "project", "unclassified", "capture")
        if any(d.get("kind") == "place" and all(d.get(k) == entry[k] for k in same) for d in known):
            return
        if len(known) >= DISAGREEMENTS_MAX:
            return
        self.set("disagreements", [*known, entry])
        self.event(
            "session.place_disagrees",
            {
                "hook": entry["hook"],
                "side": entry["side"],
                "project": entry["project"],
                "unclassified": entry["unclassified"],
            },
        )

    def save(self, db: Db) -> dict[str, Any]:
        session_id = self.row["id"]
        if self.compaction is not None:
            found = db.run(
                sql(db, "compaction"), _params(db, {**self.compaction, "session_id": session_id})
            )
            self.compaction["id"] = found[0]["id"] if found else None
        if self.values:
            self.values["updated_at"] = self.now
            columns = sorted(self.values)
            assert set(columns) <= _UPDATABLE
            sets = ", ".join(f"{c} = JSON(:{c})" if c in JSONS else f"{c} = :{c}" for c in columns)
            statement = _for(db.dialect, f"UPDATE sessions SET {sets} WHERE id = :id")
            db.run(statement, {**_params(db, self.values), "id": session_id})
        return {**self.row, **self.values}


def held_leases(db: Db, external_id: str) -> list[int]:
    """The tasks a session still holds (owner `claude:<session id>`)."""
    found = db.run(sql(db, "held"), {"owner": f"{OWNER_PREFIX}{external_id[:190]}"})
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
