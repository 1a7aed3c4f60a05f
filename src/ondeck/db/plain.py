"""Plain SQL run the same way on either kind of connection, without importing SQLAlchemy.

`Db` is a SQLAlchemy connection (`bare.SqlaDb`: its driver connection, in the caller's
transaction: the server, the CLI, the API) or a connection of `sqlite3`/`psycopg`
(`bare.BareDb`: the session hooks, which must not pay for importing SQLAlchemy). Both hand
the driver the same text and get the driver's own values back, so what comes back is
converted here, once, to what ondeck's column types give (db/types.py): instants as aware
UTC datetimes (UTC text on SQLite), dates (ISO text on SQLite), JSON (text on SQLite,
JSONB on PostgreSQL), booleans (0/1 on SQLite).

Statements are written with `:name` parameters; `render` turns them into the driver's
style. `JSON(:name)` stores a JSON value as each store keeps it; `JSON_TEXT(column, key)`
reads one key of a JSON column as text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Any, Protocol


class Db(Protocol):
    dialect: str  # "sqlite" or "postgresql"

    def run(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]: ...


def as_db(conn: Any) -> Db:
    """`conn` as a `Db`: itself when it is one, else a SQLAlchemy connection wrapped."""
    if hasattr(conn, "run") and hasattr(conn, "dialect") and isinstance(conn.dialect, str):
        return conn  # type: ignore[no-any-return]
    from ondeck.db.bare import SqlaDb

    return SqlaDb(conn)


_NAME = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")
_JSON_IN = re.compile(r"JSON\((:[a-z_]+)\)")
_JSON_TEXT = re.compile(r"JSON_TEXT\(([a-z_.]+), '([a-z_]+)'\)")


@lru_cache(maxsize=1024)  # the statements are a few texts run at every session start
def render(dialect: str, sql: str) -> str:
    """`:name` parameters as the driver takes them; JSON values as each store keeps them."""
    if dialect == "postgresql":
        sql = _JSON_IN.sub(r"CAST(\1 AS JSONB)", sql)
        sql = _JSON_TEXT.sub(r"(\1 ->> '\2')", sql)
        return _NAME.sub(r"%(\1)s", sql)
    sql = _JSON_TEXT.sub(r"json_extract(\1, '$.\2')", sql)
    return _JSON_IN.sub(r"\1", sql)


def run(db: Db, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """`sql` (written with `:name` parameters) on `db`."""
    return db.run(render(db.dialect, sql), dict(params or {}))


def expand(name: str, values: Iterable[Any]) -> tuple[str, dict[str, Any]]:
    """An IN list: `(:name_0, :name_1, …)` and its parameters (never empty: callers that
    may have none ask nothing)."""
    params = {f"{name}_{i}": value for i, value in enumerate(values)}
    assert params, "an empty IN list"
    return "(" + ", ".join(f":{key}" for key in params) + ")", params


# --- values in ------------------------------------------------------------------------------


def instant_in(db: Db, value: datetime | None) -> Any:
    if value is None:
        return None
    value = value.astimezone(UTC)
    if db.dialect == "sqlite":
        # Instant's SQLite form: fixed-width UTC text, so comparisons in SQL order correctly.
        return value.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
    return value


def date_in(db: Db, value: date | None) -> Any:
    """SQLite keeps a date as ISO text (SQLAlchemy's Date); sqlite3's own adapter is
    deprecated, so the text is given here."""
    if value is None or db.dialect != "sqlite":
        return value
    return value.isoformat()


def json_in(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


# --- values out -----------------------------------------------------------------------------


def instant_out(value: Any) -> datetime | None:
    if value is None:
        return None
    parsed: datetime = datetime.fromisoformat(value) if isinstance(value, str) else value
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def date_out(value: Any) -> date | None:
    if value is None or isinstance(value, date):
        return value
    return date.fromisoformat(value)


def json_out(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


class Columns:
    """Which columns of a statement's rows are instants, dates, JSON and booleans: what
    `out` converts (the others come back as the drivers give them, alike)."""

    def __init__(
        self,
        *,
        instants: Iterable[str] = (),
        dates: Iterable[str] = (),
        jsons: Iterable[str] = (),
        bools: Iterable[str] = (),
    ) -> None:
        self.instants = frozenset(instants)
        self.dates = frozenset(dates)
        self.jsons = frozenset(jsons)
        self.bools = frozenset(bools)

    def out(self, row: dict[str, Any]) -> dict[str, Any]:
        for key in self.instants & row.keys():
            row[key] = instant_out(row[key])
        for key in self.dates & row.keys():
            row[key] = date_out(row[key])
        for key in self.jsons & row.keys():
            row[key] = json_out(row[key])
        for key in self.bools & row.keys():
            if row[key] is not None:
                row[key] = bool(row[key])
        return row

    def read(
        self, db: Db, sql: str, params: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """`sql`'s rows, converted."""
        return [self.out(row) for row in run(db, sql, params)]
