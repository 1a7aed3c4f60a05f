"""Memory out: the JSONL export (every note as stored, the sessions they name, an end line
with counts and digest) and the Markdown one (per side and project, only what is true
today)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, select

from ondeck.core.clock import aware
from ondeck.core.memory import Note, NoteKind, NoteStatus
from ondeck.db.tables import notes, sessions
from ondeck.memory.exchange_format import END, FORMAT, NOTE_FIELDS, VERSION, as_json
from ondeck.memory.notes_read import note_from_row


def _side_where(side: str | None) -> list[Any]:
    return [] if side is None else [notes.c.side == side]


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
        record = {k: as_json(v) for k, v in row._mapping.items()}
        yield "session", _line({"type": "session", **record})
    for row in conn.execute(select(notes).where(*where).order_by(notes.c.id)):
        note = note_from_row(row)
        record = {name: as_json(getattr(note, name)) for name in ("id", *NOTE_FIELDS)}
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
