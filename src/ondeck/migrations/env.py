"""Alembic environment: migrations run on a connection that ondeck hands over."""

from __future__ import annotations

from alembic import context

from ondeck.db.fulltext import include_name
from ondeck.db.schema import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("ondeck migrations run through `ondeck db upgrade` (ondeck.db.migrate)")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
    # The full-text machinery of migrations 0004 to 0011 is not metadata (db/fulltext.py).
    include_name=include_name,
)
with context.begin_transaction():
    context.run_migrations()
