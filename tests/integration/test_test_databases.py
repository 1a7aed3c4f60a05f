"""The suite's PostgreSQL databases (tests/support/pg_reuse.py): a database a test wrote to
is handed to the next test as a new clone would be, and one whose schema a test changed is
dropped. A database that cannot be reused costs a clone (50 ms quiet, seconds under load)
for each of some 2,000 tests, so reuse failing silently would slow the suite, and reuse
that hands on what a test left would make tests depend on each other."""

from __future__ import annotations

from collections.abc import Iterator
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import text

from conftest import NOW
from ondeck.core.memory import Scope
from ondeck.db.engine import make_engine
from ondeck.memory import notes as notes_svc
from ondeck.memory.recall import recall
from support import pg_reuse

# The index's items, over every side.
CORPUS = "SELECT coalesce(sum(docs), 0) FROM recall_corpus"


@pytest.fixture
def databases(pg_admin_url: str, pg_template: str) -> Iterator[pg_reuse.Databases]:
    found = pg_reuse.Databases(admin_url=pg_admin_url, template=pg_template)
    yield found
    found.close()


def _write_and_index(url: str) -> None:
    """A note, indexed for recall: rows in tables the template leaves empty (the index's
    counts among them, per side since migration 0014)."""
    engine = make_engine(url)
    with engine.begin() as conn:
        notes_svc.add_note(
            conn,
            NOW,
            text="배포 deploy",
            side=None,
            project=None,
            sides={},
            zone=ZoneInfo("UTC"),
            actor="t",
        )
        recall(conn, "deploy", Scope.of(sides_on=False), NOW.date())
        assert (
            conn.execute(text("SELECT coalesce(sum(docs), 0) FROM recall_corpus")).scalar_one() == 1
        )
    engine.dispose()


def test_a_database_a_test_wrote_to_is_handed_on_as_new(databases: pg_reuse.Databases) -> None:
    first = databases.take()
    _write_and_index(first)
    databases.give_back(first)

    second = databases.take()
    assert databases.counts == {"cloned": 1, "reused": 1}
    engine = make_engine(second)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM notes")).scalar_one() == 0
        assert conn.execute(text("SELECT count(*) FROM recall_postings")).scalar_one() == 0
        assert (
            conn.execute(text("SELECT coalesce(sum(docs), 0) FROM recall_corpus")).scalar_one() == 0
        )
    engine.dispose()
    # And it is as new all through: the next note gets the first id, as in a new clone.
    _write_and_index(second)
    engine = make_engine(second)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT min(id) FROM notes")).scalar_one() == 1
    engine.dispose()
    databases.give_back(second)


def test_a_database_whose_schema_a_test_changed_is_dropped(
    databases: pg_reuse.Databases,
) -> None:
    first = databases.take()
    engine = make_engine(first)
    with engine.begin() as conn:
        conn.execute(text("CREATE INDEX left_behind ON notes (text)"))
    engine.dispose()
    databases.give_back(first)
    assert databases.spare == []

    databases.take()
    assert databases.counts == {"cloned": 2, "reused": 0}
