"""Memory out and in: `ondeck export --format jsonl|markdown`, `ondeck import FILE.jsonl`.

JSONL (for moving memory between databases, and for keeping it): a header line, then the
session records the notes name (a handoff always names its session: it is exported whole,
as stored), then every note of every status in id order, as stored. Importing gives each
note a new id and keeps the links between them (supersedes, superseded by), the sessions
they came from (matched by agent and session id, created only when absent) and every
status, reason and time; each imported note is an event (`note.imported`) naming its old
id. Export then import into an empty database gives the same notes. A note already there
(same kind, text, origin, place and creation time) is not imported twice. One bad line
refuses the whole file, saying which line and why, and nothing is written.

Markdown (for reading): one file per side and project with its decisions, pinned notes and
latest handoff, each with its date and origin; only what is true today.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, insert, null, select, update
from sqlalchemy.exc import DataError, IntegrityError, StatementError

from ondeck.core.clock import aware
from ondeck.core.errors import InvalidInput
from ondeck.core.memory import (
    ORIGIN_AGENT_PREFIX,
    ORIGIN_HOOK,
    ORIGIN_PERSON,
    Note,
    NoteKind,
    NoteStatus,
)
from ondeck.core.validation import EXPORT_FILE_MAX, check_project
from ondeck.db.tables import notes, sessions
from ondeck.services import events as event_log
from ondeck.services.notes import check_note_text, note_from_row

FORMAT = "ondeck-memory"
VERSION = 1
LINE_MAX = 64 * 1024
FILE_MAX = EXPORT_FILE_MAX

_NOTE_FIELDS = (
    "side",
    "project",
    "kind",
    "text",
    "pinned",
    "status",
    "status_reason",
    "status_at",
    "expires_on",
    "origin",
    "git_root",
    "branch",
    "head",
    "redactions",
    "created_at",
    "updated_at",
)
_SESSION_SKIP = frozenset({"id"})


# --- export ---------------------------------------------------------------------------------


def _side_where(side: str | None) -> list[Any]:
    return [] if side is None else [notes.c.side == side]


def _value(value: Any) -> Any:
    if isinstance(value, datetime):
        return aware(value).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if hasattr(value, "value"):  # an enum
        return value.value
    return value


def export_jsonl(conn: Connection, now: datetime, *, side: str | None = None) -> Iterator[str]:
    """The lines of a JSONL export (each ends with a line break)."""
    yield _line(
        {
            "format": FORMAT,
            "version": VERSION,
            "exported_at": aware(now).isoformat(),
            "side": side,
        }
    )
    where = _side_where(side)
    session_ids = select(notes.c.session_id).where(notes.c.session_id.is_not(None), *where)
    for row in conn.execute(
        select(sessions).where(sessions.c.id.in_(session_ids)).order_by(sessions.c.id)
    ):
        record = {k: _value(v) for k, v in row._mapping.items()}
        yield _line({"type": "session", **record})
    for row in conn.execute(select(notes).where(*where).order_by(notes.c.id)):
        note = note_from_row(row)
        record = {name: _value(getattr(note, name)) for name in ("id", *_NOTE_FIELDS)}
        record["supersedes"] = note.supersedes
        record["superseded_by"] = note.superseded_by
        record["session_id"] = note.session_id
        yield _line({"type": "note", **record})


def _line(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=False) + "\n"


@dataclass
class ProjectFile:
    side: str | None
    project: str | None
    decisions: list[Note] = field(default_factory=list)
    pinned: list[Note] = field(default_factory=list)
    handoff: Note | None = None

    @property
    def path(self) -> Path:
        name = self.project or "_side-wide"
        return Path(self.side) / f"{name}.md" if self.side else Path(f"{name}.md")


def export_markdown(
    conn: Connection, now: datetime, zone: tzinfo, *, side: str | None = None
) -> dict[Path, str]:
    """One Markdown document per side and project: relative path → text."""
    day = aware(now).astimezone(zone).date()
    files: dict[tuple[str | None, str | None], ProjectFile] = {}
    rows = conn.execute(
        select(notes)
        .where(
            *_side_where(side),
            notes.c.status == NoteStatus.ACTIVE.value,
        )
        .order_by(notes.c.id)
    )
    for row in rows:
        note = note_from_row(row)
        if not note.is_true(day):
            continue
        if note.side is None and side is None and note.session_id is not None:
            # An unclassified session's note: it belongs to no side's file.
            unclassified = conn.execute(
                select(sessions.c.unclassified).where(sessions.c.id == note.session_id)
            ).scalar()
            if unclassified:
                continue
        key = (note.side, note.project)
        entry = files.setdefault(key, ProjectFile(side=note.side, project=note.project))
        if note.kind is NoteKind.HANDOFF:
            entry.handoff = note  # in id order: the last one is the latest
        elif note.kind is NoteKind.DECISION:
            entry.decisions.append(note)
        elif note.pinned:
            entry.pinned.append(note)
    return {
        entry.path: _markdown(entry, now, zone)
        for entry in sorted(files.values(), key=lambda f: (f.side or "", f.project or ""))
        if entry.decisions or entry.pinned or entry.handoff
    }


def _markdown(entry: ProjectFile, now: datetime, zone: tzinfo) -> str:
    def when(note: Note) -> str:
        return aware(note.updated_at).astimezone(zone).strftime("%Y-%m-%d %H:%M")

    def item(note: Note) -> list[str]:
        tags = ", ".join(
            bit
            for bit in (
                when(note),
                note.origin,
                "pinned" if note.pinned and note.kind is NoteKind.DECISION else "",
                f"until {note.expires_on.isoformat()}" if note.expires_on else "",
            )
            if bit
        )
        body = note.text.splitlines() or [""]
        return [f"- **note {note.id}** ({tags}): {body[0]}", *(f"  {line}" for line in body[1:])]

    title = entry.project or "the whole side"
    where = f" (side {entry.side})" if entry.side else ""
    lines = [
        f"# {title}{where}",
        "",
        f"Exported from ondeck at {aware(now).astimezone(zone).isoformat(timespec='seconds')}: "
        "reference notes, each with when it was written and by whom; only what is true today.",
    ]
    if entry.decisions:
        lines += ["", "## Decisions", ""]
        for note in entry.decisions:
            lines += item(note)
    if entry.pinned:
        lines += ["", "## Pinned notes", ""]
        for note in entry.pinned:
            lines += item(note)
    if entry.handoff is not None:
        h = entry.handoff
        at = f" at {h.branch or 'detached HEAD'} {h.head[:12]}" if h.head else ""
        lines += [
            "",
            "## Latest handoff",
            "",
            f"note {h.id}, session {h.session_id}, written {when(h)} ({h.origin}){at}:",
            "",
            *(f"> {line}" if line else ">" for line in h.text.splitlines()),
        ]
    return "\n".join(lines) + "\n"


# --- import ---------------------------------------------------------------------------------


@dataclass
class Imported:
    notes: int = 0
    sessions: int = 0
    skipped: int = 0  # already there
    ids: dict[int, int] = field(default_factory=dict)  # old id → new id


class _Bad(Exception):
    pass


def _instant(value: Any, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Bad(f"{name} must be an ISO-8601 instant")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise _Bad(f"{name} {value[:40]!r} is not an ISO-8601 instant") from None
    if parsed.tzinfo is None:
        raise _Bad(f"{name} {value[:40]!r} has no UTC offset")
    return aware(parsed)


def _day(value: Any, name: str) -> date | None:
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise _Bad(f"{name} must be written YYYY-MM-DD")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise _Bad(f"{name} {value!r} is not a date") from None


def _int(value: Any, name: str, *, optional: bool = True) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise _Bad(f"{name} must be a whole number")
    return value


def _note(data: dict[str, Any], sides: Any) -> dict[str, Any]:
    """A note line checked, as the values of a new row (links and session still old ids)."""
    unknown = set(data) - {*_NOTE_FIELDS, "type", "id", "supersedes", "superseded_by", "session_id"}
    if unknown:
        raise _Bad(f"unknown field(s) {', '.join(sorted(unknown))[:80]}")
    try:
        kind = NoteKind(str(data.get("kind")))
        status = NoteStatus(str(data.get("status", "active")))
    except ValueError as exc:
        raise _Bad(str(exc)) from None
    side = data.get("side")
    if side is not None and (not isinstance(side, str) or (sides and side not in sides)):
        raise _Bad(f"side {str(side)[:64]!r} is not configured here")
    if side is not None and not sides:
        raise _Bad(f"side {side!r}: no sides are configured here (one pool)")
    try:
        project = check_project(data.get("project"))
        text, redactions = check_note_text(data.get("text"))
    except InvalidInput as exc:
        raise _Bad(str(exc)) from None
    origin = data.get("origin")
    if not isinstance(origin, str) or not (
        origin in (ORIGIN_PERSON, ORIGIN_HOOK) or origin.startswith(ORIGIN_AGENT_PREFIX)
    ):
        raise _Bad("origin must be person, hook or agent:<session id>")
    reason = data.get("status_reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > 1000):
        raise _Bad("status_reason must be a text of at most 1000 characters")
    if reason is not None and status not in (NoteStatus.WRONG, NoteStatus.EXPIRED):
        reason = None
    if status is NoteStatus.WRONG and not reason:
        raise _Bad("a wrong note needs its status_reason")
    created = _instant(data.get("created_at"), "created_at")
    updated = _instant(data.get("updated_at"), "updated_at")
    if created is None or updated is None:
        raise _Bad("created_at and updated_at are required")
    head = data.get("head")
    if head is not None and not (isinstance(head, str) and head.isalnum() and len(head) <= 64):
        raise _Bad("head must be a commit id")
    for name in ("git_root", "branch"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise _Bad(f"{name} must be a text")
    if not isinstance(data.get("pinned", False), bool):
        raise _Bad("pinned must be true or false")
    return {
        "side": side,
        "project": project,
        "kind": kind.value,
        "text": text,
        "pinned": bool(data.get("pinned", False)) and status is NoteStatus.ACTIVE,
        "status": status.value,
        "status_reason": reason,
        "status_at": _instant(data.get("status_at"), "status_at"),
        "expires_on": _day(data.get("expires_on"), "expires_on"),
        "origin": origin[:220],
        "git_root": (data.get("git_root") or None) and data["git_root"][:4000],
        "branch": (data.get("branch") or None) and data["branch"][:255],
        "head": head,
        "redactions": (_int(data.get("redactions", 0), "redactions") or 0) + redactions,
        "created_at": created,
        "updated_at": updated,
        "_id": _int(data.get("id"), "id", optional=False),
        "_supersedes": _int(data.get("supersedes"), "supersedes"),
        "_superseded_by": _int(data.get("superseded_by"), "superseded_by"),
        "_session": _int(data.get("session_id"), "session_id"),
    }


_SESSION_INSTANTS = (
    "started_at",
    "last_seen_at",
    "ended_at",
    "last_word_at",
    "created_at",
    "updated_at",
)
_SESSION_JSON = ("commits", "files")


def _session(data: dict[str, Any]) -> dict[str, Any]:
    names = {c.name for c in sessions.columns}
    unknown = set(data) - names - {"type"}
    if unknown:
        raise _Bad(f"unknown session field(s) {', '.join(sorted(unknown))[:80]}")
    for key in ("agent", "external_id"):
        if not isinstance(data.get(key), str) or not 0 < len(data[key]) <= 200:
            raise _Bad(f"session {key} must be a text of 1 to 200 characters")
    values = {k: v for k, v in data.items() if k in names and k not in _SESSION_SKIP}
    for key in _SESSION_INSTANTS:
        if key in values:
            values[key] = _instant(values[key], key)
    for key in _SESSION_JSON:
        if values.get(key) is None:
            values[key] = null()  # SQL NULL, not the JSON `null` (a CHECK reads it)
    return {**values, "_id": _int(data.get("id"), "session id", optional=False)}


def _records(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if len(line) > LINE_MAX:
            raise InvalidInput(f"line {number}: longer than {LINE_MAX} characters")
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"line {number}: not JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise InvalidInput(f"line {number}: not a JSON object")
        yield number, data


def import_jsonl(
    conn: Connection, now: datetime, lines: Iterable[str], *, sides: Any, actor: str
) -> Imported:
    """Import an export into this database, in the caller's transaction (all or nothing)."""
    result = Imported()
    session_ids: dict[int, int] = {}
    pending: list[tuple[int, dict[str, Any]]] = []
    header_seen = False
    for number, data in _records(lines):
        try:
            if not header_seen:
                if data.get("format") != FORMAT or data.get("version") != VERSION:
                    raise _Bad(f"not an ondeck memory export (format {FORMAT}, version {VERSION})")
                header_seen = True
                continue
            kind = data.get("type")
            if kind == "session":
                values = _session(data)
                old = values.pop("_id")
                session_ids[old], created = _ensure_session(conn, values)
                result.sessions += created
            elif kind == "note":
                pending.append((number, _note(data, sides)))
            else:
                raise _Bad("type must be session or note")
        except _Bad as exc:
            raise InvalidInput(f"line {number}: {exc}") from None
    if not header_seen:
        raise InvalidInput("the file is empty: not an ondeck memory export")
    links: list[tuple[int, int | None, int | None]] = []
    for number, values in sorted(pending, key=lambda item: item[1]["_id"]):
        old_id = values.pop("_id")
        supersedes = values.pop("_supersedes")
        superseded_by = values.pop("_superseded_by")
        old_session = values.pop("_session")
        session_id = None
        if old_session is not None:
            if old_session not in session_ids:
                raise InvalidInput(f"line {number}: session {old_session} is not in the file")
            session_id = session_ids[old_session]
        if values["kind"] == NoteKind.HANDOFF.value and session_id is None:
            raise InvalidInput(f"line {number}: a handoff needs its session")
        existing = _same_note(conn, values, session_id)
        if existing is not None:
            result.ids[old_id] = existing
            result.skipped += 1
            continue
        new_id = int(
            conn.execute(
                insert(notes).values(**values, session_id=session_id).returning(notes.c.id)
            ).scalar_one()
        )
        result.ids[old_id] = new_id
        result.notes += 1
        links.append((new_id, supersedes, superseded_by))
        event_log.record(
            conn,
            now,
            actor=actor,
            kind="note.imported",
            subject=f"note:{new_id}",
            details={"old_id": old_id, "line": number},
        )
    for new_id, supersedes, superseded_by in links:
        conn.execute(
            update(notes)
            .where(notes.c.id == new_id)
            .values(
                supersedes=result.ids.get(supersedes) if supersedes else None,
                superseded_by=result.ids.get(superseded_by) if superseded_by else None,
            )
        )
    return result


def _ensure_session(conn: Connection, values: dict[str, Any]) -> tuple[int, int]:
    found = conn.execute(
        select(sessions.c.id).where(
            sessions.c.agent == values["agent"], sessions.c.external_id == values["external_id"]
        )
    ).scalar()
    if found is not None:
        return int(found), 0
    try:
        with conn.begin_nested():
            new_id = conn.execute(
                insert(sessions).values(**values).returning(sessions.c.id)
            ).scalar_one()
    except (IntegrityError, DataError, StatementError) as exc:  # a CHECK, a type: say which
        why = str(getattr(exc, "orig", exc)).splitlines()[0][:200]
        raise _Bad(f"session {values['external_id'][:40]!r} refused by the store: {why}") from None
    return int(new_id), 1


def _same_note(conn: Connection, values: dict[str, Any], session_id: int | None) -> int | None:
    if values["kind"] == NoteKind.HANDOFF.value and session_id is not None:
        # One handoff per session: the session's own stays.
        found = conn.execute(
            select(notes.c.id).where(
                notes.c.session_id == session_id, notes.c.kind == NoteKind.HANDOFF.value
            )
        ).scalar()
        return None if found is None else int(found)
    found = conn.execute(
        select(notes.c.id).where(
            notes.c.kind == values["kind"],
            notes.c.origin == values["origin"],
            notes.c.created_at == values["created_at"],
            notes.c.side.is_(None) if values["side"] is None else notes.c.side == values["side"],
            notes.c.text == values["text"],
        )
    ).scalar()
    return None if found is None else int(found)
