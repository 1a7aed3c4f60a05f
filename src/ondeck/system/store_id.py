"""The store's random id: what `X-Ondeck-Store` says, so a hook or a client knows the server
it reached serves the database its events were captured for.

It is random, never derived from the database URL (which may hold a PostgreSQL password,
and would be told to whatever answers on the port), made once per database and kept in it
(the `store_identity` row), so it travels with the data:
- a restored backup says the id of the database the backup was taken from (restoring this
  store's own backup keeps its id; restoring another store's makes this one that store);
- a copied database file (or a pg_dump loaded elsewhere) is the same store: events captured
  for it may go to either copy, as they would have gone to the original;
- a database made before this id existed gets one the first time a server or hook opens it.

Plain SQL over `db.plain.Db`, so the session hook reads it on its bare driver too.
"""

from __future__ import annotations

import os
from datetime import datetime

from ondeck.db.plain import Db, instant_in, run

ID_BYTES = 8  # 16 hex digits, as the fingerprint before it


def read(db: Db) -> str | None:
    """The store's id, or None when none was made yet."""
    rows = run(db, "SELECT store_id FROM store_identity WHERE id = 1")
    return str(rows[0]["store_id"]) if rows else None


def ensure(db: Db, now: datetime) -> str:
    """The store's id, made now if it has none (in a write transaction; two processes
    making it at once agree on the first one stored)."""
    found = read(db)
    if found is not None:
        return found
    run(
        db,
        "INSERT INTO store_identity (id, store_id, created_at) VALUES (1, :sid, :at) "
        "ON CONFLICT (id) DO NOTHING",
        {"sid": os.urandom(ID_BYTES).hex(), "at": instant_in(db, now)},
    )
    made = read(db)
    assert made is not None
    return made
