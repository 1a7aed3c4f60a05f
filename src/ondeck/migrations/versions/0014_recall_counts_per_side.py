"""recall's counts per side: a score says nothing of what the other side holds

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05 11:00:00

Recall's term weights came from counts over the whole store: a work-side reader saw the
weight of a word fall when personal notes held it (issue 35). The counts are kept per part
now (db/recall_tables.py): how many of a part's items hold a term (`recall_term_docs`), how
many items and terms the part has (`recall_corpus`), each indexed item's part and length
(`recall_items`, so a move takes its counts from the part it was counted in). A part is an
item's side, '' for none.

A move to another side is queued like a change of the text: the update triggers watch the
side too, and a session's move queues its compaction summaries. The index is made again
from the rows (derived data, nothing lost): every item is queued here and `ondeck db
upgrade` indexes them right after (else the first recall or jobs tick does). The downgrade
makes 0012's index again, the same way.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# (source, table, columns whose change re-indexes, a NEW/OLD row's condition to be indexed)
# as of 0012; the side is watched beside the columns from here on.
_SOURCES = (
    ("notes", "notes", ("text",), None),
    ("tasks", "tasks", ("title", "body"), None),
    ("session_words", "sessions", ("last_word",), "{r}.last_word IS NOT NULL"),
    ("compactions", "session_compactions", ("summary",), "{r}.summary IS NOT NULL"),
)
_INDEX = ("recall_postings", "recall_items", "recall_term_docs", "recall_corpus", "recall_terms")
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_SOURCE_IN = "source IN ('notes', 'tasks', 'session_words', 'compactions')"


def _tables() -> None:
    op.create_table(
        "recall_terms",
        sa.Column("id", _ID, nullable=False),
        sa.Column("term", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recall_terms")),
        sa.UniqueConstraint("term", name=op.f("uq_recall_terms_term")),
    )
    op.create_table(
        "recall_term_docs",
        sa.Column("term_id", _ID, nullable=False),
        sa.Column("part", sa.String(length=64), nullable=False),
        sa.Column("docs", sa.Integer(), nullable=False),
        sa.CheckConstraint("docs >= 0", name=op.f("ck_recall_term_docs_docs")),
        sa.ForeignKeyConstraint(
            ["term_id"], ["recall_terms.id"], name=op.f("fk_recall_term_docs_term_id_recall_terms")
        ),
        sa.PrimaryKeyConstraint("term_id", "part", name=op.f("pk_recall_term_docs")),
    )
    op.create_table(
        "recall_postings",
        sa.Column("term_id", _ID, nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("item_id", sa.BigInteger(), nullable=False),
        sa.Column("tf", sa.Integer(), nullable=False),
        sa.Column("impact", sa.Integer(), nullable=False),
        sa.CheckConstraint(_SOURCE_IN, name=op.f("ck_recall_postings_source")),
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
        "recall_items",
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("item_id", sa.BigInteger(), nullable=False),
        sa.Column("part", sa.String(length=64), nullable=False),
        sa.Column("length", sa.Integer(), nullable=False),
        sa.CheckConstraint(_SOURCE_IN, name=op.f("ck_recall_items_source")),
        sa.CheckConstraint("length > 0", name=op.f("ck_recall_items_length")),
        sa.PrimaryKeyConstraint("source", "item_id", name=op.f("pk_recall_items")),
    )
    op.create_table(
        "recall_corpus",
        sa.Column("part", sa.String(length=64), nullable=False),
        sa.Column("docs", sa.BigInteger(), nullable=False),
        sa.Column("length", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("docs >= 0 AND length >= 0", name=op.f("ck_recall_corpus_counts")),
        sa.PrimaryKeyConstraint("part", name=op.f("pk_recall_corpus")),
    )


def _drop_triggers(sqlite: bool) -> None:
    """Every trigger of 0012's and this revision's, and their functions."""
    for source, table, *_ in _SOURCES:
        for event in ("ai", "au", "ad"):
            on = "" if sqlite else f" ON {table}"
            op.execute(f"DROP TRIGGER IF EXISTS recall_{source}_{event}{on}")
    op.execute(f"DROP TRIGGER IF EXISTS recall_compactions_moved{'' if sqlite else ' ON sessions'}")
    if not sqlite:
        op.execute("DROP FUNCTION IF EXISTS recall_queue_compactions()")
        op.execute("DROP FUNCTION IF EXISTS recall_queue()")


def _changed(columns: tuple[str, ...], condition: str | None, differs: str) -> str:
    """The update trigger's condition: a watched column changed, or the side did (of a row
    that is indexed at all). `differs`: the store's "{a} differs from {b}"."""
    changed = [differs.format(a=f"OLD.{c}", b=f"NEW.{c}") for c in columns]
    side = differs.format(a="OLD.side", b="NEW.side")
    if condition:
        side = f"({condition.format(r='NEW')} AND {side})"
    return " OR ".join([*changed, side])


def _sqlite_triggers() -> None:
    for source, table, columns, condition in _SOURCES:
        if source == "compactions":
            # A compaction's side is its session's: its move is the session's (below).
            continue

        def when(r: str, condition: str | None = condition) -> str:
            return f" WHEN {condition.format(r=r)}" if condition else ""

        queue = f"INSERT OR IGNORE INTO recall_pending (source, item_id) VALUES ('{source}', "
        changed = _changed(columns, condition, "{a} IS NOT {b}")
        watched = ", ".join((*columns, "side"))
        op.execute(
            f"CREATE TRIGGER recall_{source}_ai AFTER INSERT ON {table}{when('NEW')}"
            f" BEGIN {queue}NEW.id); END"
        )
        op.execute(
            f"CREATE TRIGGER recall_{source}_au AFTER UPDATE OF {watched} ON {table}"
            f" WHEN {changed} BEGIN {queue}NEW.id); END"
        )
        op.execute(
            f"CREATE TRIGGER recall_{source}_ad AFTER DELETE ON {table}{when('OLD')}"
            f" BEGIN {queue}OLD.id); END"
        )
    # Compactions: written, changed and deleted as 0012 had it; moved with their session.
    c = "session_compactions"
    queue = "INSERT OR IGNORE INTO recall_pending (source, item_id) VALUES ('compactions', "
    op.execute(
        f"CREATE TRIGGER recall_compactions_ai AFTER INSERT ON {c} WHEN NEW.summary IS NOT NULL"
        f" BEGIN {queue}NEW.id); END"
    )
    op.execute(
        f"CREATE TRIGGER recall_compactions_au AFTER UPDATE OF summary ON {c}"
        f" WHEN NEW.summary IS NOT OLD.summary BEGIN {queue}NEW.id); END"
    )
    op.execute(
        f"CREATE TRIGGER recall_compactions_ad AFTER DELETE ON {c} WHEN OLD.summary IS NOT NULL"
        f" BEGIN {queue}OLD.id); END"
    )
    op.execute(
        "CREATE TRIGGER recall_compactions_moved AFTER UPDATE OF side ON sessions"
        " WHEN NEW.side IS NOT OLD.side BEGIN"
        " INSERT OR IGNORE INTO recall_pending (source, item_id)"
        f" SELECT 'compactions', id FROM {c} WHERE session_id = NEW.id AND summary IS NOT NULL;"
        " END"
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
    op.execute(
        """
        CREATE FUNCTION recall_queue_compactions() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO recall_pending (source, item_id)
            SELECT 'compactions', id FROM session_compactions
            WHERE session_id = NEW.id AND summary IS NOT NULL
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

        if source == "compactions":
            watched = ", ".join(columns)
            changed = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in columns)
        else:
            watched = ", ".join((*columns, "side"))
            changed = _changed(columns, condition, "{a} IS DISTINCT FROM {b}")
        op.execute(f"CREATE TRIGGER recall_{source}_ai AFTER INSERT ON {table} {run(when('NEW'))}")
        op.execute(
            f"CREATE TRIGGER recall_{source}_au AFTER UPDATE OF {watched} ON {table}"
            f" {run(f' WHEN ({changed})')}"
        )
        op.execute(f"CREATE TRIGGER recall_{source}_ad AFTER DELETE ON {table} {run(when('OLD'))}")
    op.execute(
        "CREATE TRIGGER recall_compactions_moved AFTER UPDATE OF side ON sessions"
        " FOR EACH ROW WHEN (OLD.side IS DISTINCT FROM NEW.side)"
        " EXECUTE FUNCTION recall_queue_compactions()"
    )


def _queue_everything() -> None:
    """Every item, queued like any write: indexed by `ondeck db upgrade` right after, else by
    the first recall or jobs tick."""
    op.execute("DELETE FROM recall_pending")
    for source, table, _columns, condition in _SOURCES:
        where = f" WHERE {condition.format(r=table)}" if condition else ""
        op.execute(
            f"INSERT INTO recall_pending (source, item_id) SELECT '{source}', id FROM {table}{where}"
        )


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    _drop_triggers(sqlite)
    for name in ("recall_postings", "recall_corpus", "recall_terms"):
        op.drop_table(name)
    _tables()
    if sqlite:
        _sqlite_triggers()
    else:
        _postgres_triggers()
    _queue_everything()


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
    _drop_triggers(sqlite)
    for name in (*_INDEX, "recall_pending"):
        op.drop_table(name)
    word_index = _revision("0012_recall_word_index")
    word_index._tables()
    if sqlite:
        word_index._sqlite_triggers()
    else:
        word_index._postgres_triggers()
    _queue_everything()
