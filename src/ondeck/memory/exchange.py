"""Memory out and in: `ondeck export --format jsonl|markdown`, `ondeck import FILE.jsonl`.

JSONL (for moving memory between databases, and for keeping it): a header line, then the
session records the notes name (a handoff always names its session: it is exported whole,
as stored), then every note of every status in id order, as stored. Importing gives each
note a new id and keeps the links between them (supersedes, superseded by), the sessions
they came from (matched by agent and session id, created only when absent) and every
status, reason and time; each imported note is an event (`note.imported`) naming its old
id. Export then import into an empty database gives the same notes. A note already there
(same kind, text, origin, place and creation time) is not imported twice: it takes the
file's state where that is the later (exchange_import.py says which is, never by the
clock), and the import names each note it changed, by what it did. One bad line
refuses the whole file, saying which line and why, and nothing is written.

Markdown (for reading): one file per side and project with its decisions, pinned notes and
latest handoff, each with its date and origin; only what is true today.

The parts: the format (exchange_format.py), the export (exchange_export.py), reading and
checking a file (exchange_read.py), applying it (exchange_import.py); here, what the CLI,
the API and the MCP tools call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection

from ondeck.memory.exchange_export import export_jsonl, export_markdown
from ondeck.memory.exchange_import import CHANGES, Imported, import_jsonl
from ondeck.system.caller import Caller

__all__ = [
    "CHANGES",
    "Imported",
    "export_jsonl",
    "export_markdown",
    "import_counts",
    "import_jsonl",
    "markdown_files",
]


def markdown_files(conn: Connection, at: Caller, side: str | None) -> dict[str, Any]:
    """The Markdown export as the API gives it: relative path → text."""
    files = export_markdown(conn, at.now(), at.settings.zone, side=side)
    return {"files": {path.as_posix(): text for path, text in files.items()}}


def import_counts(conn: Connection, at: Caller, lines: Iterable[str]) -> dict[str, Any]:
    """Import the export's lines (all or nothing) and say what was done, as the API does."""
    result = import_jsonl(conn, at.now(), lines, sides=at.settings.sides, actor=at.actor)
    return {
        "notes": result.notes,
        "sessions": result.sessions,
        "skipped": result.skipped,
        "updated": result.updated,
        "changed": {kind: result.changed.get(kind, []) for kind in CHANGES},
        "kept": result.kept,
        "warnings": result.warnings,
    }
