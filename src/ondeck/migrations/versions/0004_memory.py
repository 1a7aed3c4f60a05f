"""memory: notes, handoffs and the full-text indexes of recall

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 06:00:00

Notes and handoffs (issue 15), and what recall searches with, kept in step with the rows
in the same transaction on each store:

- SQLite: FTS5 tables with the `trigram` tokenizer (any substring of 3+ characters, Korean
  and paths alike), contentless (the text stays in its own table only), written by triggers
  on the searched tables; and for each a second one over the text with every character
  doubled (`ondeck_pairs`, db/textpairs.py), which holds every two-character substring as a
  trigram: two-syllable Korean queries.
- PostgreSQL: `pg_trgm` GIN indexes on the searched columns (transactional, no trigger);
  and the same texts with every character doubled (`regexp_replace(…, '(.)', '\\1\\1',
  'g')`) in `fts_pairs`, a table of (source, id, pairs) with its own trigram index, kept by
  triggers (plpgsql) in the same transaction.

Searched: notes.text, tasks title and body, sessions.last_word, session_compactions.summary.
services/recall.py writes the queries that match these expressions exactly; the names are
listed in db/fulltext.py (the schema comparison leaves them out: they are not metadata).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import ondeck.db.types

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# (FTS table stem, source table, rowid column, indexed SQL expression over NEW./OLD. rows,
#  columns whose change re-indexes, the condition for a row to be indexed)
_SQLITE_SOURCES = (
    ("notes", "notes", "id", "{r}.text", ("text",), None),
    ("tasks", "tasks", "id", "{r}.title || char(10) || {r}.body", ("title", "body"), None),
    (
        "session_words",
        "sessions",
        "id",
        "{r}.last_word",
        ("last_word",),
        "{r}.last_word IS NOT NULL",
    ),
    (
        "compactions",
        "session_compactions",
        "id",
        "{r}.summary",
        ("summary",),
        "{r}.summary IS NOT NULL",
    ),
)

# (index stem, table, indexed SQL expression)
_PG_SOURCES = (
    ("notes", "notes", "text"),
    ("tasks", "tasks", "(title || chr(10) || body)"),
    ("session_words", "sessions", "last_word"),
    ("compactions", "session_compactions", "summary"),
)


def _sqlite_statements(
    fts: str, table: str, key: str, value: str, columns: tuple[str, ...], condition: str | None
) -> list[str]:
    """The FTS table `fts` over `value` (an expression of a row `{r}`) and its triggers."""

    def row(r: str) -> tuple[str, str]:
        return value.format(r=r), f" WHERE {condition.format(r=r)}" if condition else ""

    new, when_new = row("new")
    old, when_old = row("old")
    add = f"INSERT INTO {fts} (rowid, text) SELECT new.{key}, {new}{when_new};"
    drop = f"INSERT INTO {fts} ({fts}, rowid, text) SELECT 'delete', old.{key}, {old}{when_old};"
    existing, where = row(table)
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5(text, content='', tokenize='trigram')",
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN {add} END",
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {table} BEGIN {drop} END",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE OF {', '.join(columns)} ON {table}"
        f" BEGIN {drop} {add} END",
        # Rows written before this revision.
        f"INSERT INTO {fts} (rowid, text) SELECT {table}.{key}, {existing} FROM {table}{where}",
    ]


def _sqlite_fulltext() -> None:
    for stem, table, key, expression, columns, condition in _SQLITE_SOURCES:
        for suffix, wrap in (("", "{}"), ("_pairs", "ondeck_pairs({})")):
            for statement in _sqlite_statements(
                f"fts_{stem}{suffix}", table, key, wrap.format(expression), columns, condition
            ):
                op.execute(statement)


def _postgres_fulltext() -> None:
    bind = op.get_bind()
    available = bind.exec_driver_sql(
        "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'"
    ).first()
    if available is None:
        raise RuntimeError(
            "PostgreSQL's pg_trgm extension is not installed on the server; recall needs it"
            " (Debian/Ubuntu: the postgresql-contrib package)"
        )
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    # Two-character terms: every row's text with each character doubled, kept beside the
    # rows (a GIN index on a regexp_replace expression would recheck every candidate by
    # doubling its text again: 20 times the cost of the match itself).
    op.execute(
        "CREATE TABLE fts_pairs (source varchar(16) NOT NULL, id bigint NOT NULL,"
        " pairs text NOT NULL, PRIMARY KEY (id, source))"
    )
    op.execute("CREATE INDEX ix_fts_pairs_trgm ON fts_pairs USING gin (pairs gin_trgm_ops)")
    for stem, table, expression in _PG_SOURCES:
        op.execute(
            f"CREATE INDEX ix_{stem}_trgm ON {table} USING gin (({expression}) gin_trgm_ops)"
        )
        row = expression.replace("title", "NEW.title").replace("body", "NEW.body")
        if not row.startswith("("):
            row = f"NEW.{row}"
        columns = "title, body" if stem == "tasks" else expression
        op.execute(
            f"""
            CREATE FUNCTION fts_pairs_{stem}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP <> 'INSERT' THEN
                    DELETE FROM fts_pairs WHERE source = '{stem}' AND id = OLD.id;
                END IF;
                IF TG_OP <> 'DELETE' AND {row} IS NOT NULL THEN
                    INSERT INTO fts_pairs (source, id, pairs)
                    VALUES ('{stem}', NEW.id, regexp_replace({row}, '(.)', '\\1\\1', 'g'));
                END IF;
                RETURN NULL;
            END $$
            """
        )
        op.execute(
            f"CREATE TRIGGER fts_pairs_{stem} AFTER INSERT OR DELETE OR UPDATE OF {columns}"
            f" ON {table} FOR EACH ROW EXECUTE FUNCTION fts_pairs_{stem}()"
        )
        # Rows written before this revision.
        op.execute(
            f"INSERT INTO fts_pairs (source, id, pairs) SELECT '{stem}', id,"
            f" regexp_replace({expression}, '(.)', '\\1\\1', 'g') FROM {table}"
            f" WHERE {expression} IS NOT NULL"
        )


def upgrade() -> None:
    op.create_table(
        "notes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("side", sa.String(length=64), nullable=True),
        sa.Column("project", sa.String(length=64), nullable=True),
        sa.Column("kind", sa.String(length=16), server_default="note", nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("pinned", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("status", sa.String(length=16), server_default="active", nullable=False),
        sa.Column("status_reason", sa.Text(), nullable=True),
        sa.Column("status_at", ondeck.db.types.Instant(timezone=True), nullable=True),
        sa.Column(
            "supersedes", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column(
            "superseded_by", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("expires_on", sa.Date(), nullable=True),
        sa.Column("origin", sa.String(length=220), nullable=False),
        sa.Column(
            "session_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("git_root", sa.Text(), nullable=True),
        sa.Column("branch", sa.String(length=255), nullable=True),
        sa.Column("head", sa.String(length=64), nullable=True),
        sa.Column("redactions", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.Column("updated_at", ondeck.db.types.Instant(timezone=True), nullable=False),
        sa.CheckConstraint("kind IN ('note', 'decision', 'handoff')", name=op.f("ck_notes_kind")),
        sa.CheckConstraint(
            "status IN ('active', 'superseded', 'wrong', 'expired')", name=op.f("ck_notes_status")
        ),
        sa.CheckConstraint("length(text) BETWEEN 1 AND 8000", name=op.f("ck_notes_text_length")),
        sa.CheckConstraint(
            "origin IN ('person', 'hook') OR origin LIKE 'agent:%'", name=op.f("ck_notes_origin")
        ),
        sa.CheckConstraint(
            "kind <> 'handoff' OR session_id IS NOT NULL",
            name=op.f("ck_notes_handoff_has_session"),
        ),
        sa.CheckConstraint(
            "supersedes IS NULL OR supersedes <> id", name=op.f("ck_notes_not_itself")
        ),
        sa.CheckConstraint(
            "status IN ('wrong', 'expired') OR status_reason IS NULL",
            name=op.f("ck_notes_reason_when_not_true"),
        ),
        sa.CheckConstraint("redactions >= 0", name=op.f("ck_notes_redactions")),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_notes_session_id_sessions")
        ),
        sa.ForeignKeyConstraint(
            ["supersedes"],
            ["notes.id"],
            name=op.f("fk_notes_supersedes_notes"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["superseded_by"],
            ["notes.id"],
            name=op.f("fk_notes_superseded_by_notes"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notes")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("notes", schema=None) as batch_op:
        batch_op.create_index(
            "uq_notes_handoff_session",
            ["session_id"],
            unique=True,
            sqlite_where=sa.text("kind = 'handoff'"),
            postgresql_where=sa.text("kind = 'handoff'"),
        )
        batch_op.create_index(
            "uq_notes_supersedes",
            ["supersedes"],
            unique=True,
            sqlite_where=sa.text("supersedes IS NOT NULL"),
            postgresql_where=sa.text("supersedes IS NOT NULL"),
        )
        batch_op.create_index(
            "ix_notes_handoffs",
            ["side", "project", "id"],
            unique=False,
            sqlite_where=sa.text("kind = 'handoff'"),
            postgresql_where=sa.text("kind = 'handoff'"),
        )
        batch_op.create_index(
            "ix_notes_pinned",
            ["side", "project", "id"],
            unique=False,
            sqlite_where=sa.text("pinned AND status = 'active'"),
            postgresql_where=sa.text("pinned AND status = 'active'"),
        )
        batch_op.create_index(
            "ix_notes_expiry",
            ["expires_on"],
            unique=False,
            sqlite_where=sa.text("status = 'active' AND expires_on IS NOT NULL"),
            postgresql_where=sa.text("status = 'active' AND expires_on IS NOT NULL"),
        )
        batch_op.create_index("ix_notes_side_project", ["side", "project", "id"], unique=False)
        batch_op.create_index("ix_notes_session_id", ["session_id"], unique=False)
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.create_index("ix_sessions_project_side", ["project", "side"], unique=False)

    if op.get_bind().dialect.name == "sqlite":
        _sqlite_fulltext()
    else:
        _postgres_fulltext()


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for stem, *_ in _SQLITE_SOURCES:
            for suffix in ("", "_pairs"):
                fts = f"fts_{stem}{suffix}"
                for event in ("ai", "ad", "au"):
                    op.execute(f"DROP TRIGGER IF EXISTS {fts}_{event}")
                op.execute(f"DROP TABLE IF EXISTS {fts}")
    else:
        for stem, table, _expression in _PG_SOURCES:
            op.execute(f"DROP TRIGGER IF EXISTS fts_pairs_{stem} ON {table}")
            op.execute(f"DROP FUNCTION IF EXISTS fts_pairs_{stem}()")
            op.execute(f"DROP INDEX IF EXISTS ix_{stem}_trgm")
        op.execute("DROP TABLE IF EXISTS fts_pairs")
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_index("ix_sessions_project_side")
    op.drop_table("notes")
