"""One past session as `session import` makes it (sessions/session_import.py runs the import):
its transcript made into what its record keeps (classified, scrubbed, capped as a hook's),
sent from a client machine as an import record (`to_record`, `of_record`), and stored:
recorded, or a record there is completed with what it lacks, never duplicated or replaced.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.exc import IntegrityError

from ondeck.core.clock import aware
from ondeck.core.session_terms import IMPORTED_END, SessionStatus, end_guessed
from ondeck.db.plain import as_db
from ondeck.db.tables import session_compactions, sessions
from ondeck.sessions import compactions
from ondeck.sessions.capture.events import (
    LAST_WORD_MAX,
    SUMMARY_MAX,
    clean_text,
    digest,
    observe,
    scrubbed,
)
from ondeck.sessions.capture.events import VERSION as RECORD_VERSION
from ondeck.sessions.rows import classified_columns
from ondeck.sessions.transcript_read import Transcript
from ondeck.system import events as event_log

if TYPE_CHECKING:
    from ondeck.host.quick_settings import HookConfig

IMPORT_KIND = "import"  # an import record's kind at the sessions' intake
ACTOR = "import"


def _clean(value: str | None) -> str | None:
    """A short text of a transcript as the stores take it (no NUL, no lone surrogate)."""
    return clean_text(value) if value else None


class SessionImport:
    """One transcript made into what its record keeps: classified, scrubbed, capped."""

    def __init__(self, agent: str, found: Transcript, config: HookConfig, now: datetime) -> None:
        if found.session_id is None or found.first_at is None or found.last_at is None:
            raise ValueError("a transcript without its session id or times")
        self.agent, self.found, self.now = agent, found, aware(now)
        self.session_id, self.first_at, self.last_at = (
            found.session_id,
            found.first_at,
            found.last_at,
        )
        facts, classification = observe(found.cwd, config)
        self.capture = bool(classification.capture.value)
        self.classification = classification.to_json(private=not self.capture)
        self.facts = facts
        self.redactions = 0  # what the scrubber took out of the texts read
        self.stored_redactions = 0  # of those, in what was stored
        self.kinds: dict[str, int] = {}
        self.last_word: dict[str, Any] | None = None
        self.summaries: list[dict[str, Any]] = []
        if self.capture and found.last_word is not None:
            self.last_word = self._scrubbed(found.last_word["text"], LAST_WORD_MAX)
            said = found.last_word.get("at")
            self.last_word["at"] = datetime.fromisoformat(said) if said else self.last_at
        for summary in found.summaries if self.capture else []:
            text = self._scrubbed(summary["text"], SUMMARY_MAX)
            self.summaries.append({**text, "at": summary["at"], "trigger": summary["trigger"]})

    def to_record(self) -> dict[str, Any]:
        """This session as an import record: what a client sends its server's intake
        (session_import_records.parse_import checks it there; `of_record` makes it this
        again). Classified and scrubbed here, where its folder and git are."""
        found, facts = self.found, self.facts
        place = self.capture
        word = self.last_word
        return {
            "v": RECORD_VERSION,
            "kind": IMPORT_KIND,
            "agent": self.agent,
            "session": self.session_id,
            "at": self.last_at.isoformat(),
            "started_at": self.first_at.isoformat(),
            "fingerprint": digest(f"import\n{self.agent}\n{self.session_id}\n{self.last_at}"),
            "capture": self.capture,
            "classification": self.classification,
            "facts": {
                "cwd": clean_text(found.cwd) if found.cwd else None,
                "git_root": facts.get("git_root"),
                "branch": _clean(found.branch or facts.get("branch")),
                "git_note": facts.get("git_note"),
                "transcript": clean_text(found.path),
            }
            if place
            else {},
            "version": _clean(found.version),
            "text": {k: word[k] for k in ("value", "chars", "redactions", "kinds")}
            if word
            else None,
            "text_at": word["at"].isoformat() if word else None,
            "summaries": [
                {
                    "at": s["at"].isoformat() if s["at"] else None,
                    "trigger": s["trigger"],
                    **{k: s[k] for k in ("value", "chars", "redactions", "kinds")},
                }
                for s in self.summaries
            ],
            "unknown_records": {
                k: n for k, n in list(found.unknown.items())[:20] if k.isprintable()
            },
            "sidechain_entries": found.sidechain,
        }

    @classmethod
    def of_record(cls, record: dict[str, Any], now: datetime) -> SessionImport:
        """A checked import record (session_import_records.parse_import) as the session it
        tells of, ready to `store` as a local import would."""
        facts = record["facts"]
        found = Transcript(
            path=facts.get("transcript") or "",
            session_id=record["session"],
            first_at=record["started_at"],
            last_at=record["at"],
            cwd=facts.get("cwd"),
            branch=facts.get("branch"),
            version=record["version"],
            unknown=record["unknown_records"],
            sidechain=record["sidechain_entries"],
        )
        made = cls.__new__(cls)
        made.agent, made.found, made.now = record["agent"], found, aware(now)
        made.session_id, made.first_at, made.last_at = (
            record["session"],
            record["started_at"],
            record["at"],
        )
        made.classification = record["classification"]
        made.capture = bool(record["capture"])
        made.facts = {k: facts.get(k) for k in ("cwd", "git_root", "branch", "git_note")}
        made.kinds = {}
        made.redactions = made.stored_redactions = 0
        made.last_word = None
        text = record["text"]
        if text is not None:
            made.last_word = {**text, "at": record["text_at"] or made.last_at}
            made._count(text)
        made.summaries = []
        for summary in record["summaries"]:
            made.summaries.append(summary)
            made._count(summary)
        return made

    def _count(self, text: dict[str, Any]) -> None:
        self.redactions += text["redactions"]
        for kind, n in text["kinds"].items():
            self.kinds[kind] = self.kinds.get(kind, 0) + n

    def _scrubbed(self, text: str, limit: int) -> dict[str, Any]:
        done = scrubbed(text, limit)
        self._count(done)
        return done

    def store(self, conn: Connection) -> str:
        """Record it, or complete the record there is: "sessions", "completed" or
        "unchanged" (the counts of ImportReport)."""
        row = self._row(conn)
        if row is None:
            try:
                with conn.begin_nested():
                    self._insert(conn)
                return "sessions"
            except IntegrityError:
                # A hook recorded the session meanwhile (it runs while it is imported:
                # PostgreSQL lets both look for it at once): complete its record instead.
                row = self._row(conn)
                if row is None:
                    raise
        return "completed" if self._complete(conn, dict(row)) else "unchanged"

    def _row(self, conn: Connection) -> Any:
        return (
            conn.execute(
                select(sessions)
                .where(sessions.c.agent == self.agent)
                .where(sessions.c.external_id == self.session_id)
                .with_for_update()
            )
            .mappings()
            .first()
        )

    def _insert(self, conn: Connection) -> None:
        found, c, facts = self.found, self.classification, self.facts
        place = self.capture
        word = self.last_word
        values = {
            "agent": self.agent,
            "external_id": self.session_id,
            "status": SessionStatus.ENDED.value,
            "started_at": self.first_at,
            "last_seen_at": self.last_at,
            "ended_at": self.last_at,
            "end_reason": IMPORTED_END,
            "resumes": 0,
            "cwd": clean_text(found.cwd) if place and found.cwd else None,
            "git_root": facts.get("git_root") if place else None,
            # The branch the session was on, as its transcript says; else today's.
            "branch": _clean(found.branch or facts.get("branch")) if place else None,
            "git_note": facts.get("git_note") if place else None,
            "capture": self.capture,
            **classified_columns(c, self.first_at),
            "last_word": word["value"] if word else None,
            "last_word_at": word["at"] if word else None,
            "compactions": len(self.summaries),
            "redactions": self.redactions,
            "redaction_kinds": self.kinds,
            "created_at": self.now,
            "updated_at": self.now,
            "imported": True,
            "imported_from": clean_text(found.path) if place and found.path else None,
            "agent_version": _clean(found.version),
        }
        session_id = conn.execute(
            insert(sessions).values(**values).returning(sessions.c.id)
        ).scalar_one()
        self.stored_redactions = self.redactions
        self._add_summaries(conn, session_id, self.summaries)
        event_log.record(
            conn,
            self.now,
            actor=ACTOR,
            kind="session.imported",
            subject=f"session:{session_id}",
            details={
                "started_at": self.first_at.isoformat(),
                "ended_at": self.last_at.isoformat(),
                "agent_version": _clean(found.version),
                "side": c["side"]["value"],
                "project": c["project"]["value"],
                "unclassified": c["unclassified"],
                "reason": c["reason"],
                "compactions": len(self.summaries),
                "redactions": self.redactions,
                "unknown_records": dict(list(found.unknown.items())[:20]),
                "sidechain_entries": found.sidechain,
            },
        )

    def _complete(self, conn: Connection, row: dict[str, Any]) -> bool:
        """Add what the record lacks; never replace what hooks stored. An imported record
        whose transcript went on (a session resumed since) takes its later end and word."""
        found = self.found
        values: dict[str, Any] = {}
        added: list[str] = []
        capture = bool(row["capture"]) and self.capture
        word = self.last_word
        if capture and word is not None:
            older = row["last_word_at"] is not None and aware(row["last_word_at"]) < word["at"]
            if row["last_word"] is None or (row["imported"] and older):
                values.update(last_word=word["value"], last_word_at=word["at"])
                added.append("last_word")
        if row["imported"] and aware(row["last_seen_at"]) < self.last_at:
            values["last_seen_at"] = self.last_at
            if end_guessed(row["status"], row["end_reason"]):
                values["ended_at"] = self.last_at  # the guess moves on; a session that runs
                added.append("ended_at")  # again (resumed since) is not ended by it
            else:
                added.append("last_seen_at")
        # The compactions the record does not hold yet, by the rule every door keeps (a
        # hook's record of one, stored before or after, is the same compaction).
        db = as_db(conn)
        later = [
            s
            for s in (self.summaries if capture else [])
            if not compactions.held(db, row["id"], s["at"] or self.last_at, s["value"])
        ]
        if later:
            values["compactions"] = row["compactions"] + len(later)
            added.append("compactions")
        if row["agent_version"] is None and found.version is not None:
            values["agent_version"] = _clean(found.version)
            added.append("agent_version")
        if not values:
            return False
        redactions = (word["redactions"] if "last_word" in added and word else 0) + sum(
            s["redactions"] for s in later if "compactions" in added
        )
        self.stored_redactions = redactions
        if redactions:
            values["redactions"] = row["redactions"] + redactions
            kinds = dict(row["redaction_kinds"] or {})
            for kind, n in self.kinds.items():
                kinds[kind] = int(kinds.get(kind, 0)) + n
            values["redaction_kinds"] = kinds
        values["updated_at"] = self.now
        conn.execute(update(sessions).where(sessions.c.id == row["id"]).values(**values))
        if "compactions" in added:
            self._add_summaries(conn, row["id"], later)
        event_log.record(
            conn,
            self.now,
            actor=ACTOR,
            kind="session.completed",
            subject=f"session:{row['id']}",
            details={"from": "transcript", "added": added},
        )
        return True

    def _add_summaries(
        self, conn: Connection, session_id: int, found: list[dict[str, Any]]
    ) -> None:
        for summary in found:
            conn.execute(
                insert(session_compactions).values(
                    session_id=session_id,
                    at=summary["at"] or self.last_at,
                    trigger=summary["trigger"],
                    summary=summary["value"],
                    chars=summary["chars"],
                    redactions=summary["redactions"],
                )
            )
