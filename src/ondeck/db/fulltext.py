"""The names of recall's full-text machinery (migration 0004), which is not metadata.

SQLite: FTS5 tables `fts_<source>` and `fts_<source>_pairs` (with their shadow tables and
triggers); PostgreSQL: GIN indexes `ix_<source>_trgm`, and the table `fts_pairs` (with its
index `ix_fts_pairs_trgm`, trigger functions `fts_pairs_<source>`). The schema
comparison (migrations/env.py, tests/integration/test_migrations.py) leaves them out;
memory/recall.py queries them, and tests/integration/test_recall.py checks they exist and
are used.
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
