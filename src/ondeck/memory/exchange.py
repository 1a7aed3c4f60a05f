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

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, insert, null, or_, select, update
from sqlalchemy.exc import DataError, IntegrityError, StatementError

from ondeck.core.clock import aware
from ondeck.core.errors import Conflict, InvalidInput
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
from ondeck.memory.notes import check_note_text, note_from_row
from ondeck.system import events as event_log

FORMAT = "ondeck-memory"
# 2: the file ends with an end line (its counts and digest). 1 (before it) is still read.
VERSION = 2
END = "end"
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
    """The lines of a JSONL export (each ends with a line break), the end line last: what
    the file holds (its counts) and the SHA-256 of every line before it."""
    digest = hashlib.sha256()
    counts = {"session": 0, "note": 0}
    for kind, line in _export_lines(conn, now, side):
        digest.update(line.encode("utf-8"))
        if kind in counts:
            counts[kind] += 1
        yield line
    yield _line(
        {
            "type": END,
            "sessions": counts["session"],
            "notes": counts["note"],
            "sha256": digest.hexdigest(),
        }
    )


def _export_lines(conn: Connection, now: datetime, side: str | None) -> Iterator[tuple[str, str]]:
    yield (
        "header",
        _line(
            {
                "format": FORMAT,
                "version": VERSION,
                "exported_at": aware(now).isoformat(),
                "side": side,
            }
        ),
    )
    where = _side_where(side)
    session_ids = select(notes.c.session_id).where(notes.c.session_id.is_not(None), *where)
    for row in conn.execute(
        select(sessions).where(sessions.c.id.in_(session_ids)).order_by(sessions.c.id)
    ):
        record = {k: _value(v) for k, v in row._mapping.items()}
        yield "session", _line({"type": "session", **record})
    for row in conn.execute(select(notes).where(*where).order_by(notes.c.id)):
        note = note_from_row(row)
        record = {name: _value(getattr(note, name)) for name in ("id", *_NOTE_FIELDS)}
        record["supersedes"] = note.supersedes
        record["superseded_by"] = note.superseded_by
        record["session_id"] = note.session_id
        yield "note", _line({"type": "note", **record})


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
    skipped: int = 0  # already there, as the file has it (or changed here since)
    updated: int = 0  # already there, brought to the file's newer state
    ids: dict[int, int] = field(default_factory=dict)  # old id → new id
    warnings: list[str] = field(default_factory=list)


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


@dataclass
class _File:
    """A whole export, read and checked line by line; nothing written yet."""

    version: int = 0
    sessions: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    notes: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _json_line(number: int, line: str) -> dict[str, Any]:
    if len(line) > LINE_MAX:
        raise InvalidInput(f"line {number}: longer than {LINE_MAX} characters")
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"line {number}: not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"line {number}: not a JSON object")
    return data


def _header(data: dict[str, Any]) -> int:
    """The export's format version, or why the first line is not an export's (_Bad)."""
    version = data.get("version")
    if data.get("format") != FORMAT or not isinstance(version, int) or isinstance(version, bool):
        raise _Bad(f"not an ondeck memory export (format {FORMAT}, version {VERSION})")
    if version > VERSION:
        raise _Bad(
            f"written by a newer ondeck (memory export version {version}; this ondeck reads "
            f"versions 1 to {VERSION}): upgrade ondeck here, then import it"
        )
    if version < 1:
        raise _Bad(f"not an ondeck memory export (version {version})")
    return version


def _read(lines: Iterable[str], sides: Any) -> _File:
    """Every line checked; the export's end line (version 2) matched against what came
    before it: a file cut short, added to or changed is refused with the reason."""
    read = _File()
    digest = hashlib.sha256()
    end: tuple[int, dict[str, Any]] | None = None
    last = 0
    for number, line in enumerate(lines, start=1):
        last = number
        if not line.strip():
            digest.update(line.encode("utf-8", "surrogatepass"))
            continue
        data = _json_line(number, line)
        try:
            if end is not None:
                raise _Bad(f"after the end line (line {end[0]}): the file was added to")
            if not read.version:
                read.version = _header(data)
            elif data.get("type") == END and read.version >= 2:
                end = (number, data)
                continue
            elif data.get("type") == "session":
                read.sessions.append((number, _session(data)))
            elif data.get("type") == "note":
                read.notes.append((number, _note(data, sides)))
            else:
                raise _Bad("type must be session or note")
        except _Bad as exc:
            raise InvalidInput(f"line {number}: {exc}") from None
        digest.update(line.encode("utf-8", "surrogatepass"))
    if not read.version:
        raise InvalidInput("the file is empty: not an ondeck memory export")
    if read.version == 1:
        read.warnings.append(
            "an export of memory export version 1 (older ondeck) has no end line: "
            "whether it is complete cannot be checked"
        )
    elif end is None:
        raise InvalidInput(
            f"incomplete export: it stops after line {last} without its end line "
            "(cut short?); nothing was imported"
        )
    else:
        _check_end(end, read, digest.hexdigest())
    _check_links(read)
    return read


def _check_end(end: tuple[int, dict[str, Any]], read: _File, digest: str) -> None:
    number, data = end
    held = (len(read.sessions), len(read.notes))
    said = (data.get("sessions"), data.get("notes"))
    if said != held:
        raise InvalidInput(
            f"incomplete export: its end line (line {number}) counts {said[1]} note(s) and "
            f"{said[0]} session record(s), the file holds {held[1]} and {held[0]}; "
            "nothing was imported"
        )
    if data.get("sha256") != digest:
        raise InvalidInput(
            f"the export was changed after it was written: the SHA-256 in its end line "
            f"(line {number}) is not that of the lines before it; nothing was imported"
        )


def _check_links(read: _File) -> None:
    """A note superseded by one the file does not hold: the current one is missing."""
    held = {values["_id"] for _, values in read.notes}
    for number, values in read.notes:
        by = values["_superseded_by"]
        if by is not None and by not in held:
            raise InvalidInput(
                f"line {number}: note {values['_id']} is superseded by note {by}, which is "
                "not in the file: the export is incomplete; nothing was imported"
            )


# What an import compares of a note it already has, and brings when the file's is newer.
_CARRIED = (
    "text",
    "pinned",
    "status",
    "status_reason",
    "status_at",
    "expires_on",
    "side",
    "project",
    "git_root",
    "branch",
    "head",
    "redactions",
    "updated_at",
)


def import_jsonl(
    conn: Connection, now: datetime, lines: Iterable[str], *, sides: Any, actor: str
) -> Imported:
    """Import an export into this database, in the caller's transaction (all or nothing).

    A note already here (module doc) whose copy in the file is newer takes the file's
    state (status, text, pin, links, …) with an event; one changed here since is kept.
    Anything that would leave a chain contradicting itself refuses the whole file
    (`Conflict`, listing each)."""
    read = _read(lines, sides)
    result = Imported(warnings=read.warnings)
    session_ids: dict[int, int] = {}
    for number, values in read.sessions:
        values = dict(values)
        old = values.pop("_id")
        try:
            session_ids[old], created = _ensure_session(conn, values)
        except _Bad as exc:
            raise InvalidInput(f"line {number}: {exc}") from None
        result.sessions += created
    inserted: list[tuple[int, int, dict[str, Any]]] = []
    matched: list[tuple[int, int, dict[str, Any]]] = []
    claimed: set[int] = set()
    conflicts: list[str] = []
    for number, values in sorted(read.notes, key=lambda item: item[1]["_id"]):
        values = dict(values)
        old_id = values["_id"]
        old_session = values["_session"]
        session_id = None
        if old_session is not None:
            if old_session not in session_ids:
                raise InvalidInput(f"line {number}: session {old_session} is not in the file")
            session_id = session_ids[old_session]
        if values["kind"] == NoteKind.HANDOFF.value and session_id is None:
            raise InvalidInput(f"line {number}: a handoff needs its session")
        existing, ambiguous = _same_note(conn, values, session_id, claimed)
        if ambiguous:
            conflicts.append(
                f"line {number}: note {old_id} matches several notes here "
                f"({', '.join(map(str, ambiguous))}): which one it is cannot be told"
            )
            continue
        if existing is not None:
            claimed.add(existing)
            result.ids[old_id] = existing
            matched.append((number, existing, values))
            continue
        row = {k: v for k, v in values.items() if not k.startswith("_")}
        new_id = int(
            conn.execute(
                insert(notes).values(**row, session_id=session_id).returning(notes.c.id)
            ).scalar_one()
        )
        result.ids[old_id] = new_id
        claimed.add(new_id)  # this import's own: never "already here" for a later line
        result.notes += 1
        inserted.append((number, new_id, values))
        event_log.record(
            conn,
            now,
            actor=actor,
            kind="note.imported",
            subject=f"note:{new_id}",
            details={"old_id": old_id, "line": number},
        )
    for number, new_id, values in inserted:
        _link(conn, new_id, values, result.ids, number, conflicts)
    recreated = {new_id for _, new_id, _ in inserted}
    for number, local_id, values in matched:
        _relink(conn, local_id, values, result.ids, recreated)
        if _bring(conn, now, local_id, values, result.ids, number, conflicts, actor):
            result.updated += 1
        else:
            result.skipped += 1
    touched = {new_id for _, new_id, _ in inserted} | {local for _, local, _ in matched}
    conflicts += _chain_faults(conn, touched)
    if conflicts:
        shown = "; ".join(conflicts[:10]) + (
            f"; and {len(conflicts) - 10} more" if len(conflicts) > 10 else ""
        )
        raise Conflict(f"the import conflicts with this database, nothing was imported: {shown}")
    return result


def _link(
    conn: Connection,
    note_id: int,
    values: dict[str, Any],
    ids: dict[int, int],
    number: int,
    conflicts: list[str],
) -> None:
    supersedes, superseded_by = values["_supersedes"], values["_superseded_by"]
    if supersedes is None and superseded_by is None:
        return
    try:
        with conn.begin_nested():  # uq_notes_supersedes: a note here already replaced
            conn.execute(
                update(notes)
                .where(notes.c.id == note_id)
                .values(
                    supersedes=ids.get(supersedes) if supersedes else None,
                    superseded_by=ids.get(superseded_by) if superseded_by else None,
                )
            )
    except IntegrityError:
        other = ids.get(supersedes) if supersedes else None
        conflicts.append(
            f"line {number}: the file's note {values['_id']} replaces note {other} here, "
            "which another note here already replaces"
        )


def _relink(
    conn: Connection,
    local_id: int,
    values: dict[str, Any],
    ids: dict[int, int],
    recreated: set[int],
) -> None:
    """A link this note lost when its partner was deleted here (SET NULL), back to the
    partner the import has just made again: the chain as it was, not a change."""
    here = conn.execute(
        select(notes.c.status, notes.c.supersedes, notes.c.superseded_by).where(
            notes.c.id == local_id
        )
    ).one()
    back = {}
    for link in ("supersedes", "superseded_by"):
        old = values[f"_{link}"]
        partner = ids.get(old) if old else None
        # A note here that is not superseded lost no replacement: that is a change.
        lost = link == "supersedes" or here.status == NoteStatus.SUPERSEDED.value
        if lost and getattr(here, link) is None and partner in recreated:
            back[link] = partner
    if back:
        conn.execute(update(notes).where(notes.c.id == local_id).values(**back))


def _bring(
    conn: Connection,
    now: datetime,
    local_id: int,
    values: dict[str, Any],
    ids: dict[int, int],
    number: int,
    conflicts: list[str],
    actor: str,
) -> bool:
    """Bring the file's newer state of a note this database has; whether it changed it."""
    here = conn.execute(select(notes).where(notes.c.id == local_id)).one()._mapping
    theirs: dict[str, Any] = {name: values[name] for name in _CARRIED}
    for link in ("supersedes", "superseded_by"):
        old = values[f"_{link}"]
        theirs[link] = ids.get(old) if old else None
    changes = {
        name: (here[name], value)
        for name, value in theirs.items()
        if name not in ("updated_at", "redactions") and not _same(here[name], value)
    }
    if not changes:
        return False
    mine, file_time = aware(here["updated_at"]), aware(values["updated_at"])
    if file_time < mine:
        return False  # changed here since the export: this database's state stands
    if file_time == mine:
        conflicts.append(
            f"line {number}: note {local_id} here and note {values['_id']} in the file were "
            f"both changed at {mine.isoformat()}, differently ({', '.join(sorted(changes))})"
        )
        return False
    try:
        with conn.begin_nested():
            conn.execute(update(notes).where(notes.c.id == local_id).values(**theirs))
    except IntegrityError:
        conflicts.append(
            f"line {number}: note {local_id} cannot take the file's links "
            f"({', '.join(sorted(changes))}): another note here holds them"
        )
        return False
    event_log.record(
        conn,
        now,
        actor=actor,
        kind="note.import_updated",
        subject=f"note:{local_id}",
        details={
            "old_id": values["_id"],
            "line": number,
            "changed": {
                name: {"here": _value(before), "file": _value(after)}
                for name, (before, after) in changes.items()
            },
        },
    )
    return True


def _same(here: Any, theirs: Any) -> bool:
    if isinstance(here, datetime) and isinstance(theirs, datetime):
        return aware(here) == aware(theirs)
    return bool(here == theirs)


def _chain_faults(conn: Connection, touched: set[int]) -> list[str]:
    """What contradicts itself in the chains of the notes an import touched: a link one
    way that the other note does not return, a replaced note that is not superseded."""
    if not touched:
        return []
    rows = {
        r.id: r
        for r in conn.execute(
            select(notes.c.id, notes.c.status, notes.c.supersedes, notes.c.superseded_by).where(
                or_(
                    notes.c.id.in_(touched),
                    notes.c.supersedes.in_(touched),
                    notes.c.superseded_by.in_(touched),
                )
            )
        )
    }
    partners = {
        link for r in rows.values() for link in (r.supersedes, r.superseded_by) if link
    } - set(rows)
    if partners:
        for r in conn.execute(
            select(notes.c.id, notes.c.status, notes.c.supersedes, notes.c.superseded_by).where(
                notes.c.id.in_(partners)
            )
        ):
            rows[r.id] = r
    faults = []
    for r in sorted(rows.values(), key=lambda r: r.id):
        if r.superseded_by is not None:
            by = rows.get(r.superseded_by)
            if r.status != NoteStatus.SUPERSEDED.value:
                faults.append(
                    f"note {r.id} is {r.status} but names note {r.superseded_by} as its replacement"
                )
            elif by is not None and by.supersedes != r.id:
                faults.append(
                    f"note {r.id} is superseded by note {by.id}, which does not say it replaces it"
                )
        if r.supersedes is not None:
            old = rows.get(r.supersedes)
            if old is not None and old.superseded_by != r.id:
                what = (
                    f"superseded by note {old.superseded_by}" if old.superseded_by else old.status
                )
                faults.append(f"note {r.id} replaces note {old.id}, which is {what} here")
    return faults


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


def _same_note(
    conn: Connection, values: dict[str, Any], session_id: int | None, claimed: set[int]
) -> tuple[int | None, list[int]]:
    """The note here that a note of the file is, and the candidates when that cannot be
    told. Its session's handoff for a handoff; else the note of the same kind, origin and
    creation time: the one with the same place and text, or the only one changed since it
    was made, here or in the file."""
    if values["kind"] == NoteKind.HANDOFF.value and session_id is not None:
        # One handoff per session: the session's own.
        found = conn.execute(
            select(notes.c.id).where(
                notes.c.session_id == session_id, notes.c.kind == NoteKind.HANDOFF.value
            )
        ).scalar()
        return (None if found is None else int(found)), []
    candidates = [
        r
        for r in conn.execute(
            select(notes.c.id, notes.c.side, notes.c.text, notes.c.created_at, notes.c.updated_at)
            .where(
                notes.c.kind == values["kind"],
                notes.c.origin == values["origin"],
                notes.c.created_at == values["created_at"],
            )
            .order_by(notes.c.id)
        )
        if r.id not in claimed
    ]
    for r in candidates:
        if r.side == values["side"] and r.text == values["text"]:
            return int(r.id), []
    # Another text is the same note only where one of the two was changed since it was
    # made: a note never changed is known by its text.
    changed_there = values["updated_at"] != values["created_at"]
    changed = [r for r in candidates if changed_there or aware(r.updated_at) != aware(r.created_at)]
    if len(changed) == 1:
        return int(changed[0].id), []
    return None, [int(r.id) for r in changed]
