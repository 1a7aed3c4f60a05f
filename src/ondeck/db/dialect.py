"""The few statements whose spelling differs between SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table


def insert_for(conn: Connection, table: Table) -> Any:
    """An INSERT that knows ON CONFLICT on both stores (same method names on both)."""
    # Imported here: only the dialect in use is loaded (start-up cost of the CLI and hooks).
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table)


def is_postgres(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"
