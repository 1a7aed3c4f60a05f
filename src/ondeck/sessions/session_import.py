"""`ondeck session import`: a record of each past session an agent's transcripts on disk
tell of, made as hooks would have made it had ondeck been installed (issue 26).

Each session's transcript is read whole (sessions/transcript_read.py, or codex_read.py),
classified by today's rules on the folder it was launched in (sessions/classify.py, as its
start hook would have, with the reason; never where a subagent ran), its texts scrubbed and
capped as a hook's (events.scrubbed), and stored in one transaction of its own. A line
that cannot be read is skipped and counted with its file (`refused_lines`), the rest read
on; a file none of whose lines can be read is reported and nothing of it stored. A session
already recorded (by hooks, or an import before) is never duplicated or overwritten: it is
completed with what it lacks (its last word when no Stop brought one, its compaction
summaries when none were heard, the agent's version), so importing twice changes nothing.
A session a hook has not ended keeps its status: the jobs tick decides when it is lost
(records_tick.py).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from ondeck.core import logs
from ondeck.core.clock import local
from ondeck.core.http_limits import MAX_BODY_BYTES
from ondeck.db.engine import writing
from ondeck.db.locks import one_import_at_a_time
from ondeck.db.refusals import is_content
from ondeck.sessions.capture.events import (
    clean_text,
    session_id_of,
)
from ondeck.sessions.imported_session import ACTOR, SessionImport
from ondeck.sessions.transcript_read import Empty, Transcript, Unreadable
from ondeck.system import events as event_log

if TYPE_CHECKING:
    from ondeck.host.quick_settings import HookConfig

log = logs.logger("ondeck.sessions")

AGENTS = ("claude-code", "codex")
REFUSED_SHOWN = 50
# Import records a client sends in one request (the intake takes 500), under the body limit
# with room for what wraps them.
SEND_BATCH = 100
BODY_ROOM = MAX_BODY_BYTES - 4096


@dataclass
class ImportReport:
    agent: str
    folder: str
    dry_run: bool
    sessions: int = 0  # recorded now (new records)
    completed: int = 0  # records that existed and took what they lacked
    unchanged: int = 0  # records that existed and lacked nothing
    skipped: int = 0  # before --since, or holding no session (empty, titles only)
    refused: list[dict[str, str]] = field(default_factory=list)  # {"file", "reason"}
    # {"file", "lines", "reason"}: the files read but for some lines, skipped
    refused_records: list[dict[str, Any]] = field(default_factory=list)
    mended: int = 0  # lone surrogates in what was read, made U+FFFD (events.mended)
    redactions: int = 0
    unknown_records: int = 0  # entries of record types this reader does not know
    subagent_files: int = 0
    summaries_not_sent: int = 0  # a client's: the oldest, past what one request can carry

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "folder": self.folder,
            "dry_run": self.dry_run,
            "sessions": self.sessions,
            "completed": self.completed,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "refused": len(self.refused),
            "refused_files": self.refused[:REFUSED_SHOWN],
            "refused_lines": sum(r["lines"] for r in self.refused_records),
            "refused_lines_in": self.refused_records[:REFUSED_SHOWN],
            "mended": self.mended,
            "redactions": self.redactions,
            "unknown_records": self.unknown_records,
            "subagent_files": self.subagent_files,
            "summaries_not_sent": self.summaries_not_sent,
        }

    def note_read(self, found: Transcript) -> None:
        """What reading a file counted: its unknown records, its refused lines, its mending."""
        self.unknown_records += sum(found.unknown.values())
        self.mended += found.mended
        if found.refused:
            more = "; ..." if found.refused > len(found.reasons) else ""
            reason = "; ".join(found.reasons) + more
            self.refused_records.append(
                {"file": clean_text(found.path)[:1000], "lines": found.refused, "reason": reason}
            )

    def count(self, outcome: str) -> None:
        """One session stored: "sessions", "completed" or "unchanged" (SessionImport.store)."""
        setattr(self, outcome, getattr(self, outcome) + 1)

    @property
    def read_nothing(self) -> bool:
        """Something was there, and nothing of it could be read (the CLI exits 2)."""
        took = self.sessions + self.completed + self.unchanged + self.skipped
        return bool(self.refused) and took == 0 and not self.refused_records


def default_folder(agent: str) -> str:
    """Where the agent keeps its transcripts for the user running this."""
    if agent == "codex":
        base = os.environ.get("CODEX_HOME") or os.path.expanduser("~/.codex")
        return os.path.join(base, "sessions")
    return os.path.join(os.path.expanduser("~/.claude"), "projects")


# A client's import: its records sent to the server's intake, the intake's results back.
Send = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def import_sessions(
    engine: Engine | None,
    now: datetime,
    *,
    agent: str,
    folder: str,
    config: HookConfig,
    zone: tzinfo,
    since: date | None = None,
    dry_run: bool = False,
    send: Send | None = None,
) -> ImportReport:
    """Import every session of `agent` under `folder` (its projects or sessions folder).
    `since`: only sessions last active on or after that day (in `zone`). `dry_run`: read,
    classify and count, store nothing. The run's counts are recorded as the event
    `sessions.imported` (not on a dry run). `send`: a client machine's way to its server
    (no `engine`): each session goes as an import record to the server's intake
    (`POST /sessions/records`, session_import_records.py), which stores it as this would."""
    report = ImportReport(agent=agent, folder=folder, dry_run=dry_run)
    batch = Batch(send, report) if send is not None and not dry_run else None
    found_files = list(_files(agent, folder))
    subagents = _subagents(found_files, now, report)
    for kind, path, reason in found_files:
        if kind == SUBAGENT:
            continue
        if reason is not None:
            report.refused.append({"file": clean_text(path)[:1000], "reason": reason})
            continue
        try:
            found = _read(agent, path, now)
        except Empty:
            report.skipped += 1
            continue
        except Unreadable as exc:
            report.refused.append({"file": clean_text(path)[:1000], "reason": str(exc)})
            continue
        report.note_read(found)
        if found.session_id is None or found.first_at is None or found.last_at is None:
            report.skipped += 1  # no session in it (Claude Code 1.0 keeps titles alone)
            continue
        for sub in subagents.get(found.session_id, []):
            found.first_at = min(found.first_at, sub.first_at or found.first_at)
            found.last_at = max(found.last_at, sub.last_at or found.last_at)
            found.sidechain += sub.sidechain
        if since is not None and local(found.last_at, zone).date() < since:
            report.skipped += 1
            continue
        record = SessionImport(agent, found, config, now)
        if dry_run:
            report.sessions += 1
            report.redactions += record.redactions
            continue
        if batch is not None:
            batch.add(record, path)
            continue
        assert engine is not None, "import_sessions: an engine or a way to a server"
        try:
            with writing(engine) as conn:
                one_import_at_a_time(conn)  # another import may be storing this session
                outcome = record.store(conn)
        except DBAPIError as exc:
            if exc.orig is None or not is_content(exc.orig):
                raise  # the store takes nothing now: the command says so, and stops
            # The store refused this session for its content (a CHECK, a length): it alone.
            reason = " ".join(str(exc.orig or exc).split())[:300]
            report.refused.append({"file": clean_text(path)[:1000], "reason": reason})
            continue
        if outcome != "unchanged":
            report.redactions += record.stored_redactions
        report.count(outcome)
    if batch is not None:
        batch.flush()
        return report  # the server recorded each session's event; the run is this machine's
    if not dry_run and engine is not None:
        with writing(engine) as conn:
            event_log.record(
                conn,
                now,
                actor=ACTOR,
                kind="sessions.imported",
                subject=f"import:{agent}",
                details=report.to_json(),
            )
    return report


class Batch:
    """A client's import records on their way to its server's intake, packed under the
    body limit the server takes (core/http_limits.py), counted as the server answers."""

    def __init__(self, send: Send, report: ImportReport) -> None:
        self.send, self.report = send, report
        self.items: list[tuple[str, dict[str, Any]]] = []
        self.size = 0

    def add(self, record: SessionImport, path: str) -> None:
        data = record.to_record()
        size = _size(data)
        while size > BODY_ROOM and data["summaries"]:
            # One session larger than a request: its oldest summaries stay behind (the
            # latest says the most), counted.
            cut = max(1, len(data["summaries"]) // 4)
            data["summaries"] = data["summaries"][cut:]
            self.report.summaries_not_sent += cut
            size = _size(data)
        if size > BODY_ROOM:
            reason = f"too large to send ({size} bytes)"
            self.report.refused.append({"file": clean_text(path)[:1000], "reason": reason})
            return
        if self.items and (self.size + size > BODY_ROOM or len(self.items) >= SEND_BATCH):
            self.flush()
        self.items.append((path, data))
        self.size += size

    def flush(self) -> None:
        if not self.items:
            return
        items, self.items, self.size = self.items, [], 0
        results = self.send([data for _, data in items])
        for (path, _), result in zip(items, [*results, *[{}] * len(items)], strict=False):
            outcome = result.get("imported")
            if outcome not in ("sessions", "completed", "unchanged"):
                said = result.get("reason") or "the server did not take it"
                reason = f"the server: {str(said)[:300]}"
                self.report.refused.append({"file": clean_text(path)[:1000], "reason": reason})
                continue
            self.report.count(outcome)
            redactions = result.get("redactions")
            if outcome != "unchanged" and isinstance(redactions, int):
                self.report.redactions += redactions


def _size(data: dict[str, Any]) -> int:
    return len(json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def _read(agent: str, path: str, now: datetime) -> Transcript:
    if agent == "codex":
        from ondeck.sessions.codex_read import read_rollout

        return read_rollout(path, now)
    from ondeck.sessions.transcript_read import read_transcript

    found = read_transcript(path, now)
    # Claude Code names the file for the session (the id its hooks send): the name is
    # the session's, whatever id its entries carry (a copied or forked history).
    found.session_id = session_id_of({"session_id": _stem(path)})
    return found


def _subagents(
    files: list[tuple[str, str, str | None]], now: datetime, report: ImportReport
) -> dict[str, list[Transcript]]:
    """The subagents' transcripts by their session's id: read for their activity (a session
    was active while its subagent was), counted; one unreadable is skipped and counted."""
    from ondeck.sessions.transcript_read import read_transcript

    found: dict[str, list[Transcript]] = {}
    for kind, path, reason in files:
        if kind != SUBAGENT:
            continue
        report.subagent_files += 1
        if reason is not None:
            report.refused.append({"file": clean_text(path)[:1000], "reason": reason})
            continue
        try:
            sub = read_transcript(path, now, subagent=True)
        except Unreadable as exc:
            report.refused.append({"file": clean_text(path)[:1000], "reason": str(exc)})
            continue
        report.note_read(sub)
        # Under <session>/subagents/ (2.1) the folder names the session; agent-*.jsonl
        # beside the sessions (2.0) says it in its entries.
        parts = path.split(os.sep)
        owner = parts[-3] if len(parts) > 3 and parts[-2] == "subagents" else sub.session_id
        if owner:
            found.setdefault(owner, []).append(sub)
    return found


def _stem(path: str) -> str:
    return os.path.basename(path).removesuffix(".jsonl")


SESSION, SUBAGENT = "session", "subagent"


def _files(agent: str, folder: str) -> Iterator[tuple[str, str, str | None]]:
    """(kind, path, None) of each session or subagent file under `folder`; (kind, path,
    why) of one refused. Nothing is followed through a symbolic link (a link out of the
    folder reads nothing)."""
    try:
        top = os.lstat(folder)
    except FileNotFoundError:
        return  # no transcripts on this machine: nothing to import, nothing refused
    except OSError as exc:
        yield SESSION, folder, f"cannot read it: {exc.strerror or exc}"
        return
    if not stat.S_ISDIR(top.st_mode):
        yield SESSION, folder, "not a folder (a symbolic link is not followed)"
        return
    yield from _walk(agent, folder, 0)


def _walk(agent: str, folder: str, depth: int) -> Iterator[tuple[str, str, str | None]]:
    # Claude Code: projects/<folder>/<session>.jsonl, its subagents in
    # <folder>/<session>/subagents/ (2.1) or <folder>/agent-*.jsonl (2.0); 1.0 writes them
    # into the session's own file. Codex: sessions/YYYY/MM/DD/rollout-*.jsonl.
    kind = SUBAGENT if agent == "claude-code" and depth >= 2 else SESSION
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        yield kind, folder, f"cannot list it: {exc.strerror or exc}"
        return
    for entry in entries:
        if entry.is_symlink():
            # Said only where a transcript or its folder could be: other links are not ours.
            if entry.name.endswith(".jsonl") or entry.is_dir(follow_symlinks=True):
                yield kind, entry.path, "a symbolic link: not followed"
            continue
        if entry.is_dir(follow_symlinks=False):
            if depth < 3:
                yield from _walk(agent, entry.path, depth + 1)
            continue
        if not entry.name.endswith(".jsonl") or not entry.is_file(follow_symlinks=False):
            continue
        if agent == "codex":
            if entry.name.startswith("rollout-"):
                yield SESSION, entry.path, None
        elif depth >= 2 or entry.name.startswith("agent-"):
            yield SUBAGENT, entry.path, None
        elif depth == 1:
            yield SESSION, entry.path, None
