"""The JSONL export's format, as export and import both read it: its name and version, the
end line, the limits, the fields a note carries, how a value is written."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from ondeck.core.clock import aware
from ondeck.core.validation import EXPORT_FILE_MAX

FORMAT = "ondeck-memory"
# 2: the file ends with an end line (its counts and digest); version 1, without it, is read too.
VERSION = 2
END = "end"
LINE_MAX = 64 * 1024
FILE_MAX = EXPORT_FILE_MAX

NOTE_FIELDS = (
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
SESSION_SKIP = frozenset({"id"})


def as_json(value: Any) -> Any:
    if isinstance(value, datetime):
        return aware(value).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if hasattr(value, "value"):  # an enum
        return value.value
    return value


class Bad(Exception):
    """A line's value refused: said with the line's number where it is read."""
