"""The store: Core tables, engines for SQLite and PostgreSQL, migrations."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the package is imported by db.bare, which must not load SQLAlchemy
    from sqlalchemy import Engine


def open_database(url: str) -> Engine:
    """An engine on `url`, with the schema brought up to date if it is behind."""
    from ondeck.db.engine import make_engine
    from ondeck.db.migrate import ensure_schema

    engine = make_engine(url)
    try:
        ensure_schema(engine)
    except BaseException:  # refused or unreachable: no connection is left open behind it
        engine.dispose()
        raise
    return engine
