"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, Integer, String, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

from ondeck.db import gate
from ondeck.db.plain import instant_out

# SQLite only makes INTEGER PRIMARY KEY an alias of the rowid (auto-increment).
Id = BigInteger().with_variant(Integer(), "sqlite")


class Json(TypeDecorator[Any]):
    """JSON text on SQLite, JSONB on PostgreSQL.

    The PostgreSQL type is looked up only on PostgreSQL: importing that dialect costs the
    session hook, which runs at every agent session, a noticeable share of its start-up.
    """

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(JSON())


class Instant(TypeDecorator[datetime]):
    """An instant: `timestamptz` on PostgreSQL, UTC text on SQLite; always aware UTC in Python.

    SQLite keeps the fixed-width `YYYY-MM-DD HH:MM:SS.ffffff` form, so comparisons in SQL
    order correctly as long as every value is UTC, which binding enforces.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}")
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value!r}: instants must carry a zone")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        # The one reading of an instant, shared with the plain statements (db/plain.py).
        return instant_out(value)


class ScrubbedText(TypeDecorator[str]):
    """A text column whose every value passes the scrubber as it is bound (db/gate.py): a
    `String(length)`, or `Text` without one."""

    impl: Any = Text
    cache_ok = True

    def __init__(self, length: int | None = None) -> None:
        super().__init__()
        self.length = length
        # The type the migrations wrote: VARCHAR(n), or TEXT.
        self.impl = Text() if length is None else String(length)

    def process_bind_param(self, value: str | None, dialect: Dialect) -> Any:
        if not isinstance(value, str):
            return value
        return gate.text(value, self.length)


class ScrubbedJson(Json):
    """A JSON column whose every string (keys too) passes the scrubber as it is bound."""

    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return gate.json_value(value)
