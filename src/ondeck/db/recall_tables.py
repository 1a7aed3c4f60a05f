"""Recall's word index (migration 0012): which items hold which terms, and how much.

A term's postings carry their weight (`impact`, memory/recall_index.py): the best few of a
common term are an index read, never a sum over all its rows. The queue (`recall_pending`)
is written by triggers on the searched tables, so every writer (the server, the hooks'
bare driver, a `sqlite3` shell) keeps it; the index is brought up to date from it before
each recall and by the jobs tick. On the same metadata as db/tables.py (db/schema.py holds
both).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
)

from ondeck.db.tables import metadata
from ondeck.db.types import Id

# What recall searches, by the name the index gives each source.
SOURCES = ("notes", "tasks", "session_words", "compactions")
_SOURCE_IN = f"source IN ({', '.join(repr(s) for s in SOURCES)})"

recall_terms = Table(
    "recall_terms",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("term", String(64), nullable=False, unique=True),
    Column("docs", Integer, nullable=False),  # how many items hold it
    CheckConstraint("docs >= 0", name="docs"),
)

recall_postings = Table(
    "recall_postings",
    metadata,
    Column("term_id", Id, ForeignKey("recall_terms.id"), primary_key=True),
    Column("source", String(16), primary_key=True),
    Column("item_id", BigInteger, primary_key=True),
    Column("tf", Integer, nullable=False),  # times in the item
    Column("impact", Integer, nullable=False),  # BM25's term weight, in thousandths
    CheckConstraint(_SOURCE_IN, name="source"),
    CheckConstraint("tf > 0 AND impact > 0", name="weight"),
    # Covering on PostgreSQL too: a term's postings are read from the index alone.
    Index(
        "ix_recall_postings_impact",
        "term_id",
        "impact",
        postgresql_include=["source", "item_id"],
    ),
    Index("ix_recall_postings_item", "source", "item_id"),
    # SQLite: the rows kept in the key's order, so a term's postings are read in one run and
    # every index holds them whole (measured: a term's postings summed in a third of the
    # time).
    sqlite_with_rowid=False,
)

recall_corpus = Table(
    "recall_corpus",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("docs", BigInteger, nullable=False),  # items with at least one term
    CheckConstraint("id = 1", name="one_row"),
    CheckConstraint("docs >= 0", name="docs"),
)

recall_pending = Table(
    "recall_pending",
    metadata,
    Column("source", String(16), primary_key=True),
    Column("item_id", BigInteger, primary_key=True),
    CheckConstraint(_SOURCE_IN, name="source"),
)


def is_index(name: str | None) -> bool:
    """One of the tables above: made from the searched rows, never written as data."""
    return name in metadata.tables and str(name).startswith("recall_")
