"""The whole schema on one metadata: what the migrations produce (db/tables.py, and recall's
word index in db/recall_tables.py)."""

from __future__ import annotations

import ondeck.db.recall_tables  # noqa: F401  # puts recall's tables on the metadata
from ondeck.db.tables import metadata

__all__ = ["metadata"]
