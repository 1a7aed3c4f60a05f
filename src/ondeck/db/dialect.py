"""The few statements whose spelling differs between SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.dialects import postgresql, sqlite


def insert_for(conn: Connection, table: Table) -> Any:
    """An INSERT that knows ON CONFLICT on both stores (same method names on both)."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def is_postgres(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"
