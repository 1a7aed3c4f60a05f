"""recall's word index in place of substring search

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 13:00:00

Recall ranks by words now (memory/recall_words.py, recall_rank.py): the tables of
db/recall_tables.py, and triggers on the searched tables that queue a changed item
(`recall_pending`) for memory/recall_index.py to index. Every item written before this
revision is queued here; `ondeck db upgrade` indexes them right after (else the first
recall or jobs tick does), so the first recall finds everything.

The substring machinery of migrations 0004 and 0006 goes (SQLite's FTS5 tables and their
triggers, PostgreSQL's trigram indexes, `fts_pairs` and its triggers): nothing reads it
any more, and every write paid for it. The downgrade makes it again, as those revisions
did, rows included.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# (source, table, columns whose change re-indexes, a NEW/OLD row's condition to be indexed)
_SOURCES = (
    ("notes", "notes", ("text",), None),
    ("tasks", "tasks", ("title", "body"), None),
    ("session_words", "sessions", ("last_word",), "{r}.last_word IS NOT NULL"),
    ("compactions", "session_compactions", ("summary",), "{r}.summary IS NOT NULL"),
)
_OLD_SQLITE = tuple(f"fts_{s}{pairs}" for s, *_ in _SOURCES for pairs in ("", "_pairs"))


def _tables() -> None:
    op.create_table(
        "recall_terms",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("term", sa.String(length=64), nullable=False),
        sa.Column("docs", sa.Integer(), nullable=False),
        sa.CheckConstraint("docs >= 0", name=op.f("ck_recall_terms_docs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recall_terms")),
        sa.UniqueConstraint("term", name=op.f("uq_recall_terms_term")),
    )
    sources = "source IN ('notes', 'tasks', 'session_words', 'compactions')"
    op.create_table(
        "recall_postings",
        sa.Column("term_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("item_id", sa.BigInteger(), nullable=False),
        sa.Column("tf", sa.Integer(), nullable=False),
        sa.Column("impact", sa.Integer(), nullable=False),
        sa.CheckConstraint(sources, name=op.f("ck_recall_postings_source")),
        sa.CheckConstraint("tf > 0 AND impact > 0", name=op.f("ck_recall_postings_weight")),
        sa.ForeignKeyConstraint(
            ["term_id"], ["recall_terms.id"], name=op.f("fk_recall_postings_term_id_recall_terms")
        ),
        sa.PrimaryKeyConstraint("term_id", "source", "item_id", name=op.f("pk_recall_postings")),
        sqlite_with_rowid=False,
    )
    op.create_index(
        "ix_recall_postings_impact",
        "recall_postings",
        ["term_id", "impact"],
        postgresql_include=["source", "item_id"],
    )
    op.create_index("ix_recall_postings_item", "recall_postings", ["source", "item_id"])
    op.create_table(
        "recall_corpus",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("docs", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("id = 1", name=op.f("ck_recall_corpus_one_row")),
        sa.CheckConstraint("docs >= 0", name=op.f("ck_recall_corpus_docs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recall_corpus")),
    )
    op.execute("INSERT INTO recall_corpus (id, docs) VALUES (1, 0)")
    op.create_table(
        "recall_pending",
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("item_id", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(sources, name=op.f("ck_recall_pending_source")),
        sa.PrimaryKeyConstraint("source", "item_id", name=op.f("pk_recall_pending")),
    )


def _sqlite_triggers() -> None:
    for source, table, columns, condition in _SOURCES:

        def when(r: str, condition: str | None = condition) -> str:
            return f" WHEN {condition.format(r=r)}" if condition else ""

        def queue(r: str, source: str = source) -> str:
            return f"INSERT OR IGNORE INTO recall_pending (source, item_id) VALUES ('{source}', {r}.id);"

        changed = " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in columns)
        op.execute(
            f"CREATE TRIGGER recall_{source}_ai AFTER INSERT ON {table}{when('NEW')}"
            f" BEGIN {queue('NEW')} END"
        )
        op.execute(
            f"CREATE TRIGGER recall_{source}_au AFTER UPDATE OF {', '.join(columns)} ON {table}"
            f" WHEN {changed} BEGIN {queue('NEW')} END"
        )
        op.execute(
            f"CREATE TRIGGER recall_{source}_ad AFTER DELETE ON {table}{when('OLD')}"
            f" BEGIN {queue('OLD')} END"
        )


def _postgres_triggers() -> None:
    op.execute(
        """
        CREATE FUNCTION recall_queue() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO recall_pending (source, item_id)
            VALUES (TG_ARGV[0], CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END)
            ON CONFLICT DO NOTHING;
            RETURN NULL;
        END $$
        """
    )
    for source, table, columns, condition in _SOURCES:

        def when(r: str, condition: str | None = condition) -> str:
            return f" WHEN ({condition.format(r=r)})" if condition else ""

        def run(when: str, source: str = source) -> str:
            return f"FOR EACH ROW{when} EXECUTE FUNCTION recall_queue('{source}')"

        changed = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in columns)
        op.execute(f"CREATE TRIGGER recall_{source}_ai AFTER INSERT ON {table} {run(when('NEW'))}")
        op.execute(
            f"CREATE TRIGGER recall_{source}_au AFTER UPDATE OF {', '.join(columns)} ON {table}"
            f" {run(f' WHEN ({changed})')}"
        )
        op.execute(f"CREATE TRIGGER recall_{source}_ad AFTER DELETE ON {table} {run(when('OLD'))}")


def _drop_old(sqlite: bool) -> None:
    if sqlite:
        for fts in _OLD_SQLITE:
            for event in ("ai", "ad", "au"):
                op.execute(f"DROP TRIGGER IF EXISTS {fts}_{event}")
            op.execute(f"DROP TABLE IF EXISTS {fts}")
        return
    for source, table, *_ in _SOURCES:
        op.execute(f"DROP TRIGGER IF EXISTS fts_pairs_{source} ON {table}")
        op.execute(f"DROP FUNCTION IF EXISTS fts_pairs_{source}()")
        op.execute(f"DROP INDEX IF EXISTS ix_{source}_trgm")
    op.execute("DROP TABLE IF EXISTS fts_pairs")


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    _drop_old(sqlite)
    _tables()
    if sqlite:
        _sqlite_triggers()
    else:
        _postgres_triggers()
    # Rows written before: queued like any write, indexed by `ondeck db upgrade` right after,
    # else by the first recall or jobs tick.
    for source, table, _columns, condition in _SOURCES:
        where = f" WHERE {condition.format(r=table)}" if condition else ""
        op.execute(
            f"INSERT INTO recall_pending (source, item_id) SELECT '{source}', id FROM {table}{where}"
        )


def _revision(name: str) -> ModuleType:
    """A sibling revision's module (their file names are not importable names)."""
    path = Path(__file__).with_name(f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_ondeck_revision_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for source, table, *_ in _SOURCES:
        for event in ("ai", "au", "ad"):
            on = "" if sqlite else f" ON {table}"
            op.execute(f"DROP TRIGGER IF EXISTS recall_{source}_{event}{on}")
    if not sqlite:
        op.execute("DROP FUNCTION IF EXISTS recall_queue()")
    for name in ("recall_pending", "recall_corpus", "recall_postings", "recall_terms"):
        op.drop_table(name)
    memory = _revision("0004_memory")
    if sqlite:
        memory._sqlite_fulltext()
    else:
        memory._postgres_fulltext()
        _revision("0006_recall_folded_trigrams")._remake(folded=True)
