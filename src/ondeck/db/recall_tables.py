"""Recall's word index (migration 0012): which items hold which terms, and how much.

A term's postings carry their weight (`impact`, memory/recall_index.py): the best few of a
common term are an index read, never a sum over all its rows. How many items hold a term,
and how many items there are, are counted per part (migration 0014): an item's side, or ''
for none (the inbox). A reader's statistics are those of the part it sees (every part when
no sides are configured), so a score says nothing of what the other side holds.

The queue (`recall_pending`) is written by triggers on the searched tables (on a change of
the text or of the side), so every writer (the server, the hooks' bare driver, a `sqlite3`
shell) keeps it; the index is brought up to date from it before each recall and by the
jobs tick. On the same metadata as db/tables.py (db/schema.py holds both).
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

# An item's side as its own table holds it (scrubbed there), '' for none.
PART = 64

recall_terms = Table(
    "recall_terms",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("term", String(64), nullable=False, unique=True),
)

recall_term_docs = Table(
    "recall_term_docs",
    metadata,
    Column("term_id", Id, ForeignKey("recall_terms.id"), primary_key=True),
    Column("part", String(PART), primary_key=True),
    Column("docs", Integer, nullable=False),  # how many of the part's items hold it
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

# Each indexed item's part and length as it was indexed: when it moves to another side, or
# is deleted, the counts it added are taken from the part it was counted in.
recall_items = Table(
    "recall_items",
    metadata,
    Column("source", String(16), primary_key=True),
    Column("item_id", BigInteger, primary_key=True),
    Column("part", String(PART), nullable=False),
    Column("length", Integer, nullable=False),  # its terms, repeats counted
    CheckConstraint(_SOURCE_IN, name="source"),
    CheckConstraint("length > 0", name="length"),
)

recall_corpus = Table(
    "recall_corpus",
    metadata,
    Column("part", String(PART), primary_key=True),
    Column("docs", BigInteger, nullable=False),  # the part's items with at least one term
    Column("length", BigInteger, nullable=False),  # their terms in all
    CheckConstraint("docs >= 0 AND length >= 0", name="counts"),
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
