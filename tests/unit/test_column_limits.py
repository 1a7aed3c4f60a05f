"""core/column_limits.py is db/tables.py's column lengths, for the hook path (no SQLAlchemy)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import String

from ondeck.core.column_limits import COLUMN_LIMITS
from ondeck.db import tables
from ondeck.sessions.capture import events as hook_events


def test_the_hooks_column_limits_are_the_tables() -> None:
    def type_of(column: Any) -> Any:  # a scrubbing column type wraps its String
        return getattr(column.type, "impl_instance", column.type)

    found = {
        f"{table.name}.{column.name}": type_of(column).length
        for table in (tables.sessions, tables.session_compactions, tables.hook_receipts)
        for column in table.columns
        if isinstance(type_of(column), String) and type_of(column).length
    }
    shown = "\n".join(f'    "{name}": {length},' for name, length in found.items())
    assert found == COLUMN_LIMITS, f"core/column_limits.py should read:\n{{\n{shown}\n}}"


def test_the_hook_keeps_its_words_within_their_columns() -> None:
    assert {
        "source": COLUMN_LIMITS["sessions.start_source"],
        "reason": COLUMN_LIMITS["sessions.end_reason"],
        "trigger": COLUMN_LIMITS["session_compactions.trigger"],
    } == hook_events.WORD_LIMITS
    assert COLUMN_LIMITS["sessions.external_id"] == hook_events.EXTERNAL_ID_MAX
