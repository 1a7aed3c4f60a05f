"""The changes one hook record makes to one session row, and the events they write: the
rules of `rows.apply` kind by kind (start, stop, compact, end, changes), on a row
already read and locked. Nothing here touches the database but `Change.save`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ondeck.core.session_terms import SessionStatus, end_guessed
from ondeck.db.plain import Db
from ondeck.db.plain import render as _for
from ondeck.sessions.rows_sql import JSONS, UPDATABLE, params, sql

DISAGREEMENTS_MAX = 50
# What a start that names no source (startup, resume, clear, compact) is stored as: the row's
# `start_source` must still say a start was heard, or every later start would be taken for
# the first (one more start event each, and the start commit reset).
UNKNOWN_SOURCE = "unknown"


class Change:
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
        # This compaction is already held (its transcript imported, or a copy of this
        # record stored by another door): it is heard from, not counted twice.
        self.compaction_held = False
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
        if self.record.get("input"):  # what the hook mended to keep it (hooks/payload.py)
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

    def within_grace(self) -> bool:
        """Whether this record was heard within the grace: older, and a lost session stays
        lost (a spooled Stop of 14 hours ago adds its last word and reopens nothing)."""
        return self.lost_before is None or self.record["at"] >= self.lost_before

    def end_guessed(self) -> bool:
        """Whether the session's end is an import's guess (its transcript's last entry)."""
        return end_guessed(self.get("status"), self.get("end_reason"))

    def alive_since(self) -> bool:
        """Whether this record shows the session alive after what the row knows: heard
        within the grace, and after an end it has (an import's guess is no end)."""
        end_at = None if self.end_guessed() else self.get("ended_at")
        return self.within_grace() and (end_at is None or self.record["at"] > end_at)

    def reopen_if_lost(self, by: str) -> None:
        """A turn or compaction heard from a session shown lost (it was not), or after its
        end (it went on: resumed, or the end was an import's guess): open again."""
        status = self.get("status")
        ended_at = self.get("ended_at")
        after_end = (
            status == SessionStatus.ENDED and ended_at is not None and self.record["at"] > ended_at
        )
        if (status == SessionStatus.LOST or after_end) and self.within_grace():
            self.set("status", SessionStatus.OPEN)
            self.set("ended_at", None)
            self.set("end_reason", None)
            self.event("session.reopened", {"from": status, "by": by})

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
        at = self.record["at"]
        last_start = self.get("last_start_at")
        if last_start is None or at > last_start:
            self.set("last_start_at", at)
        if self.row["start_source"] is None:
            # The start arrives after a later event made the row (a spool drained out of
            # order, a hook installed mid-session): it is the session's start after all.
            self.set("start_source", source or UNKNOWN_SOURCE)
            self.set("started_at", min(self.row["started_at"], at))
            if self.capture:
                facts = self.record["facts"]
                self.set("start_head", facts.get("head"))
                for key in ("cwd", "git_root", "branch"):
                    if self.row[key] is None:
                        self.set(key, facts.get(key))
            if self.row["side_rule"] != "moved":
                self.adopt(self.record["classification"])
            # Not a second "started": the record began when its first event was heard; this
            # says when the session itself did. A resume may still reopen it (below).
            self.event("session.start_heard_late", self.started_details(late=True))
        elif at < self.row["started_at"]:
            # An earlier start than the one that made the row (the first start spooled, a
            # resume stored before it): the session began then, as this start says.
            self.set("started_at", at)
            self.set("start_source", source or UNKNOWN_SOURCE)
            if self.capture:
                self.set("start_head", self.record["facts"].get("head"))
        status = self.get("status")
        ended_at = self.get("ended_at")
        if (
            status == SessionStatus.ENDED
            and ended_at is not None
            and at < ended_at
            and not self.end_guessed()
        ):
            return  # a resume from before the end, arriving after it (a hook stores its own
            # event before it drains the spool): it does not reopen what ended since
        # A resume reopens; so does any start of a session thought lost (it was not), or
        # ended by an import's guess (its transcript read while it ran). A new `startup`
        # always comes with a new session id: for a known one it is a replay, or the start
        # of a session whose transcript an import read first.
        reopens = source == "resume" or status == SessionStatus.LOST or self.end_guessed()
        if reopens and self.alive_since():
            if source == "resume":
                self.set("resumes", int(self.row["resumes"]) + 1)
            if status == SessionStatus.OPEN:
                return  # already running (its end, if any, is not heard yet)
            self.set("status", SessionStatus.OPEN)
            self.set("ended_at", None)
            self.set("end_reason", None)
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
        if self.capture and text is None and self.record.get("input"):
            # A turn the agent sent no answer for: said (its input notes), never guessed.
            self.event("session.no_answer", {})
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
        if self.compaction_held:
            return
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
        if status == SessionStatus.ENDED and not self.end_guessed():
            return  # ended before (and not resumed since): the first end stands
        # Heard from after this end (a resume, or a turn of the run a resume began): the end
        # of an earlier run, arriving late (an import of its transcript, a spooled end
        # drained after the session went on). It ends nothing now.
        later = max(self.get("last_start_at") or self.row["last_seen_at"], self.row["last_seen_at"])
        if self.record["at"] < later:
            self.event(
                "session.end_heard_late",
                {"reason": self.record.get("reason"), "heard_since": later.isoformat()},
            )
            return
        ended_at = max(self.record["at"], self.get("started_at"))
        self.set("status", SessionStatus.ENDED)
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

    def transcript(self) -> None:
        """The transcript a hook names, kept when the record has none yet (the jobs tick
        reads it for a session whose end never came: records_transcripts.py)."""
        named = self.record["facts"].get("transcript") if self.capture else None
        if named and not self.get("transcript_path"):
            self.set("transcript_path", named)

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
                sql(db, "compaction"), params(db, {**self.compaction, "session_id": session_id})
            )
            self.compaction["id"] = found[0]["id"] if found else None
        if self.values:
            self.values["updated_at"] = self.now
            columns = sorted(self.values)
            assert set(columns) <= UPDATABLE
            sets = ", ".join(f"{c} = JSON(:{c})" if c in JSONS else f"{c} = :{c}" for c in columns)
            statement = _for(db.dialect, f"UPDATE sessions SET {sets} WHERE id = :id")
            db.run(statement, {**params(db, self.values), "id": session_id})
        return {**self.row, **self.values}
