"""The one gate every stored text passes: the scrubber (core/scrubber.py), at the bind.

Whatever writes a row, the text columns listed here are scrubbed as their values are bound,
so a new field, a new entry point or a new statement cannot forget it:

- through SQLAlchemy, by the column types of db/tables.py (`ScrubbedText`, `ScrubbedJson`
  in db/types.py), whose bind calls `text` or `json_value` below;
- through plain SQL on a bare driver (the session hooks: db/bare.py,
  sessions/rows.py) and the statements compiled once and run on the driver
  (system/events.py), which bypass SQLAlchemy's types, by `bind`: it reads the table and
  the columns an INSERT or UPDATE writes and scrubs the parameters bound to listed columns.

`SCRUBBED` is the list for the plain path (this module imports no SQLAlchemy: the hook path
must not); tests/unit/test_scrub_gate.py holds it to the column types of db/tables.py, and
fails on any text or JSON column of db/tables.py that is neither scrubbed nor in `EXEMPT`
with its reason.

Scrubbing is idempotent, so a text a record or a note already scrubbed (and counted: those
counts are the records' `redactions`) passes unchanged; the gate counts nothing itself. A
text the scrubber made longer (`-pX` is `-p[redacted:password]`) is cut to its column's
length, so no store refuses it.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook path)
if TYPE_CHECKING:
    from typing import Any

# table → text column → its length (None: unbounded)
SCRUBBED: dict[str, dict[str, int | None]] = {
    "tasks": {"title": 500, "body": None, "project": 64, "side": 64, "lease_owner": 200},
    "schedules": {"title": 500, "body": None, "project": 64, "side": 64},
    "events": {"actor": 200},
    "workers": {"name": 200},
    "backups": {"worker": 200, "file": None, "error": None},
    "sessions": {
        "end_reason": 64,
        "start_source": 16,
        "cwd": None,
        "git_root": None,
        "branch": 255,
        "start_head": 64,
        "end_head": 64,
        "side": 64,
        "project": 64,
        "last_word": None,
        "git_note": None,
        "imported_from": None,
        "agent_version": 32,
        "transcript_path": None,
    },
    "session_compactions": {"trigger": 16, "summary": None},
    "notes": {
        "side": 64,
        "project": 64,
        "text": None,
        "status_reason": None,
        "origin": 220,
        "git_root": None,
        "branch": 255,
        "head": 64,
    },
    "tokens": {"name": 64, "side": 64},
}
# table → JSON columns: every string in them (keys too) is scrubbed.
SCRUBBED_JSON: dict[str, frozenset[str]] = {
    "events": frozenset({"details"}),
    "workers": frozenset({"summary"}),
    "sessions": frozenset(
        {"classification", "disagreements", "commits", "files", "redaction_kinds"}
    ),
}
_ENUM = "one of a fixed set of words, refused otherwise (a CHECK constraint)"
_PART = "an item's side as its own table holds it (scrubbed there), or '' for none"
# (table, column) → why its text is not scrubbed: none holds words a person or agent wrote.
EXEMPT: dict[tuple[str, str], str] = {
    ("tasks", "status"): _ENUM,
    ("tasks", "source"): "made by ondeck: sch:<schedule id>:<fire date>",
    ("schedules", "kind"): _ENUM,
    ("schedules", "rule"): "a rule the parser accepted (core/rules.py): no free text",
    ("schedules", "missed"): _ENUM,
    ("events", "kind"): "made by ondeck: task.claimed, session.started, …",
    ("events", "subject"): (
        "made by ondeck: <kind>:<id>, or a token's name as stored (scrubbed in its own table);"
        " scrubbed again, 'token:laptop' read as a token's value"
    ),
    ("workers", "tz"): "a zone name the zone database knows, refused otherwise",
    ("backups", "status"): _ENUM,
    ("sessions", "agent"): "made by ondeck: claude-code, codex or gemini-cli (any other refused)",
    ("sessions", "external_id"): (
        "the agent's id of the session (a UUID): the key every hook looks its session up by,"
        " on either path; scrubbing it would part a session from its own lookups"
    ),
    ("sessions", "status"): _ENUM,
    ("sessions", "side_rule"): "made by ondeck: the name of the rule that decided",
    ("sessions", "project_rule"): "made by ondeck: the name of the rule that decided",
    ("hook_receipts", "fingerprint"): "a hash of what was kept (sessions/capture/events.py)",
    ("hook_receipts", "kind"): "made by ondeck: one of the record kinds",
    ("notes", "kind"): _ENUM,
    ("notes", "status"): _ENUM,
    ("tokens", "scope"): _ENUM,
    ("tokens", "hash"): "the SHA-256 of a device token: the token itself is never stored",
    ("dashboard_sessions", "hash"): "the SHA-256 of a dashboard session's random id",
    ("store_identity", "store_id"): "a random id ondeck made for this database",
    ("recall_terms", "term"): "a word of a text scrubbed in its own table, as recall indexes it",
    ("recall_postings", "source"): _ENUM,
    ("recall_pending", "source"): _ENUM,
    ("recall_items", "source"): _ENUM,
    ("recall_items", "part"): _PART,
    ("recall_term_docs", "part"): _PART,
    ("recall_corpus", "part"): _PART,
}


def text(value: str, limit: int | None = None) -> str:
    """`value` as a text column keeps it."""
    from ondeck.core.scrubber import scrub

    clean = scrub(value).text
    if clean is value or clean == value:
        return value
    return clean if limit is None else clean[:limit]


def json_value(value: Any) -> Any:
    """A JSON value with every string in it scrubbed (the value itself when none changes)."""
    strings: list[str] = []
    _strings(value, strings)
    if not strings:
        return value
    from ondeck.core.scrubber import scrub

    # One scan of all strings, kept apart by line breaks (each string is judged as a text of
    # its own only when that scan finds something): most values hold no secret.
    joined = "\n".join(strings)
    if scrub(joined).text == joined:
        return value
    return _scrubbed(value)


def _strings(value: Any, into: list[str]) -> None:
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                into.append(key)
            _strings(item, into)
    elif isinstance(value, list | tuple):
        for item in value:
            _strings(item, into)


def _scrubbed(value: Any) -> Any:
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {
            (text(key) if isinstance(key, str) else key): _scrubbed(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_scrubbed(item) for item in value]
    return value


def json_text(value: str | None) -> str | None:
    """JSON text (as the plain path binds a JSON column) with its strings scrubbed."""
    if value is None:
        return None
    loaded = json.loads(value)
    kept = json_value(loaded)
    return value if kept is loaded else json.dumps(kept, ensure_ascii=False)


# --- the plain path -----------------------------------------------------------------------

_WRITE = re.compile(r"\s*(?:INSERT\s+INTO|UPDATE)\s+(\w+)\b", re.IGNORECASE)
_INSERT = re.compile(
    r"\s*INSERT\s+INTO\s+\w+\s*\(([^)]*)\)\s*VALUES\s*\((.*)", re.IGNORECASE | re.DOTALL
)
_UPDATE = re.compile(r"\s*UPDATE\s+\w+\s+SET\s+(.*?)\s+WHERE\s", re.IGNORECASE | re.DOTALL)
# A parameter as either driver takes it: `:name` (sqlite3) or `%(name)s` (psycopg).
_PARAM = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)|%\(([a-z_][a-z0-9_]*)\)s")


class UnreadWrite(Exception):
    """A write to a gated table whose columns the gate cannot read: it must not pass."""


def _top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _param_of(expression: str) -> str | None:
    found = [a or b for a, b in _PARAM.findall(expression)]
    if len(found) > 1:
        raise UnreadWrite(f"more than one parameter in {expression!r}")
    return found[0] if found else None


@lru_cache(maxsize=256)  # a few statements, run at every hook
def gated_params(sql: str) -> tuple[tuple[str, str, int | None], ...]:
    """(parameter, "text" or "json", length) for each parameter `sql` binds to a gated
    column; empty for statements that write no gated table."""
    write = _WRITE.match(sql)
    if write is None:
        return ()
    table = write.group(1).lower()
    if table not in SCRUBBED and table not in SCRUBBED_JSON and not _exempt_table(table):
        return ()
    pairs: list[tuple[str, str]] = []
    insert = _INSERT.match(sql)
    if insert is not None:
        columns = _top_level(insert.group(1))
        values = _top_level(_values(insert))
        if len(columns) != len(values):
            raise UnreadWrite(f"columns and values differ in {sql[:200]!r}")
        pairs = list(zip(columns, values, strict=True))
    else:
        update = _UPDATE.match(sql)
        if update is None:
            raise UnreadWrite(f"cannot read the columns of {sql[:200]!r}")
        for assignment in _top_level(update.group(1)):
            column, sep, expression = assignment.partition("=")
            if not sep:
                raise UnreadWrite(f"cannot read {assignment!r}")
            pairs.append((column.strip(), expression))
    texts, jsons = SCRUBBED.get(table, {}), SCRUBBED_JSON.get(table, frozenset())
    out = []
    for column, expression in pairs:
        name = _param_of(expression)
        if name is None:
            continue
        if column in texts:
            out.append((name, "text", texts[column]))
        elif column in jsons:
            out.append((name, "json", None))
    return tuple(out)


def _values(insert: re.Match[str]) -> str:
    """The VALUES list alone (an `ON CONFLICT …` or `RETURNING …` may follow it)."""
    body, depth = insert.group(2), 0
    for i, c in enumerate(body):
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return body[:i]
            depth -= 1
    return body


def _exempt_table(table: str) -> bool:
    return any(t == table for t, _ in EXEMPT)


def bind(sql: str, params: dict[str, Any]) -> dict[str, Any]:
    """`params` as `sql` (in the driver's style) may bind them: the values of gated columns
    scrubbed. The same dict when nothing is gated."""
    gated = gated_params(sql)
    if not gated:
        return params
    out = dict(params)
    for name, kind, limit in gated:
        value = out.get(name)
        if isinstance(value, str):
            out[name] = text(value, limit) if kind == "text" else json_text(value)
        elif kind == "json" and value is not None:
            out[name] = json_value(value)
    return out
