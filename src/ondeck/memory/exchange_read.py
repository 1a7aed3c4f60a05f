"""Memory in, first step: reading an export and checking every line (its JSON, its header
and end line, each note's and session's values, the links between them) before anything is
written. One bad line refuses the whole file, naming the line."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import null

from ondeck.core.clock import aware
from ondeck.core.errors import InvalidInput
from ondeck.core.memory import ORIGIN_AGENT_PREFIX, ORIGIN_HOOK, ORIGIN_PERSON, NoteKind, NoteStatus
from ondeck.core.validation import check_project
from ondeck.db.tables import sessions
from ondeck.memory.exchange_format import (
    END,
    FORMAT,
    LINE_MAX,
    NOTE_FIELDS,
    SESSION_SKIP,
    VERSION,
    Bad,
)
from ondeck.memory.notes_read import check_note_text


def _instant(value: Any, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise Bad(f"{name} must be an ISO-8601 instant")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise Bad(f"{name} {value[:40]!r} is not an ISO-8601 instant") from None
    if parsed.tzinfo is None:
        raise Bad(f"{name} {value[:40]!r} has no UTC offset")
    return aware(parsed)


def _day(value: Any, name: str) -> date | None:
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise Bad(f"{name} must be written YYYY-MM-DD")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise Bad(f"{name} {value!r} is not a date") from None


def _int(value: Any, name: str, *, optional: bool = True) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise Bad(f"{name} must be a whole number")
    return value


def _note(data: dict[str, Any], sides: Any) -> dict[str, Any]:
    """A note line checked, as the values of a new row (links and session still old ids)."""
    unknown = set(data) - {*NOTE_FIELDS, "type", "id", "supersedes", "superseded_by", "session_id"}
    if unknown:
        raise Bad(f"unknown {_fields(unknown)} {', '.join(sorted(unknown))[:80]}")
    try:
        kind = NoteKind(str(data.get("kind")))
        status = NoteStatus(str(data.get("status", "active")))
    except ValueError as exc:
        raise Bad(str(exc)) from None
    side = data.get("side")
    if side is not None and (not isinstance(side, str) or (sides and side not in sides)):
        raise Bad(f"side {str(side)[:64]!r} is not configured here")
    if side is not None and not sides:
        raise Bad(f"side {side!r}: no sides are configured here (one pool)")
    try:
        project = check_project(data.get("project"))
        text, redactions = check_note_text(data.get("text"))
    except InvalidInput as exc:
        raise Bad(str(exc)) from None
    origin = data.get("origin")
    if not isinstance(origin, str) or not (
        origin in (ORIGIN_PERSON, ORIGIN_HOOK) or origin.startswith(ORIGIN_AGENT_PREFIX)
    ):
        raise Bad("origin must be person, hook or agent:<session id>")
    reason = data.get("status_reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > 1000):
        raise Bad("status_reason must be a text of at most 1000 characters")
    if reason is not None and status not in (NoteStatus.WRONG, NoteStatus.EXPIRED):
        reason = None
    if status is NoteStatus.WRONG and not reason:
        raise Bad("a wrong note needs its status_reason")
    created = _instant(data.get("created_at"), "created_at")
    updated = _instant(data.get("updated_at"), "updated_at")
    if created is None or updated is None:
        raise Bad("created_at and updated_at are required")
    head = data.get("head")
    if head is not None and not (isinstance(head, str) and head.isalnum() and len(head) <= 64):
        raise Bad("head must be a commit id")
    for name in ("git_root", "branch"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise Bad(f"{name} must be a text")
    if not isinstance(data.get("pinned", False), bool):
        raise Bad("pinned must be true or false")
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
        raise Bad(f"unknown session {_fields(unknown)} {', '.join(sorted(unknown))[:80]}")
    for key in ("agent", "external_id"):
        if not isinstance(data.get(key), str) or not 0 < len(data[key]) <= 200:
            raise Bad(f"session {key} must be a text of 1 to 200 characters")
    values = {k: v for k, v in data.items() if k in names and k not in SESSION_SKIP}
    for key in _SESSION_INSTANTS:
        if key in values:
            values[key] = _instant(values[key], key)
    for key in _SESSION_JSON:
        if values.get(key) is None:
            values[key] = null()  # SQL NULL, not the JSON `null` (a CHECK reads it)
    return {**values, "_id": _int(data.get("id"), "session id", optional=False)}


@dataclass
class ExportFile:
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
    """The export's format version, or why the first line is not an export's (Bad)."""
    version = data.get("version")
    if data.get("format") != FORMAT or not isinstance(version, int) or isinstance(version, bool):
        raise Bad(f"not an ondeck memory export (format {FORMAT}, version {VERSION})")
    if version > VERSION:
        raise Bad(
            f"written by a newer ondeck (memory export version {version}; this ondeck reads "
            f"versions 1 to {VERSION}): upgrade ondeck here, then import it"
        )
    if version < 1:
        raise Bad(f"not an ondeck memory export (version {version})")
    return version


def read_file(lines: Iterable[str], sides: Any) -> ExportFile:
    """Every line checked; the export's end line (version 2) matched against what came
    before it: a file cut short, added to or changed is refused with the reason."""
    read = ExportFile()
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
                raise Bad(f"after the end line (line {end[0]}): the file was added to")
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
                raise Bad("type must be session or note")
        except Bad as exc:
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


def _check_end(end: tuple[int, dict[str, Any]], read: ExportFile, digest: str) -> None:
    number, data = end
    held = (len(read.sessions), len(read.notes))
    said = (data.get("sessions"), data.get("notes"))
    if said != held:
        raise InvalidInput(
            f"incomplete export: its end line (line {number}) counts notes: {said[1]}, session "
            f"records: {said[0]}; the file holds notes: {held[1]}, session records: {held[0]}; "
            "nothing was imported"
        )
    if data.get("sha256") != digest:
        raise InvalidInput(
            f"the export was changed after it was written: the SHA-256 in its end line "
            f"(line {number}) is not that of the lines before it; nothing was imported"
        )


def _check_links(read: ExportFile) -> None:
    """A note superseded by one the file does not hold: the current one is missing."""
    held = {values["_id"] for _, values in read.notes}
    for number, values in read.notes:
        by = values["_superseded_by"]
        if by is not None and by not in held:
            raise InvalidInput(
                f"line {number}: note {values['_id']} is superseded by note {by}, which is "
                "not in the file: the export is incomplete; nothing was imported"
            )


def _fields(unknown: set[str]) -> str:
    return "field" if len(unknown) == 1 else "fields"
