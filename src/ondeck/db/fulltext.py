"""The names of recall's substring machinery of migrations 0004 to 0011 (migration 0012
dropped it for the word index of db/recall_tables.py), which is not metadata.

SQLite: FTS5 tables `fts_<source>` and `fts_<source>_pairs` (with their shadow tables and
triggers); PostgreSQL: GIN indexes `ix_<source>_trgm`, and the table `fts_pairs` (with its
index `ix_fts_pairs_trgm`, trigger functions `fts_pairs_<source>`). The schema
comparison (migrations/env.py, tests/integration/test_migrations.py) leaves them out;
a database at one of those revisions still has them (tests/integration/
test_migrations_move_forward.py reads such databases).
"""

from __future__ import annotations

from typing import Any

SOURCES = ("notes", "tasks", "session_words", "compactions")
SQLITE_TABLES = tuple(f"fts_{s}{pairs}" for s in SOURCES for pairs in ("", "_pairs"))
PG_INDEXES = (*(f"ix_{s}_trgm" for s in SOURCES), "ix_fts_pairs_trgm")


def is_fulltext(name: str | None) -> bool:
    return bool(name) and (str(name).startswith("fts_") or name in PG_INDEXES)


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Alembic's `include_name`: everything but the full-text machinery."""
    return not (type_ in ("table", "index") and is_fulltext(name))
