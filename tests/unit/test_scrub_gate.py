"""The one gate (db/gate.py): every text and JSON column of db/tables.py is scrubbed as it is
bound, or exempt for a stated reason; the plain path's list is the tables' own; what the
plain statements bind to those columns is scrubbed too."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sqlalchemy import JSON, String, Text

from ondeck.db import gate
from ondeck.db.schema import metadata  # recall's tables too
from ondeck.db.types import Json, ScrubbedJson, ScrubbedText
from ondeck.sessions import rows_sql as session_rows_sql

SECRET = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5"


def _columns():  # type: ignore[no-untyped-def]
    for table in metadata.sorted_tables:
        for column in table.columns:
            yield table.name, column


def _is_text(column_type: object) -> bool:
    return isinstance(column_type, String | Text | JSON | Json | ScrubbedText)


def test_every_text_or_json_column_is_scrubbed_or_exempt_with_its_reason() -> None:
    unguarded = [
        f"{table}.{column.name}"
        for table, column in _columns()
        if _is_text(column.type)
        and not isinstance(column.type, ScrubbedText | ScrubbedJson)
        and (table, column.name) not in gate.EXEMPT
    ]
    assert not unguarded, f"neither scrubbed nor exempt (db/gate.py EXEMPT): {unguarded}"
    names = {(table, column.name): column for table, column in _columns()}
    for key, reason in gate.EXEMPT.items():
        assert key in names, f"{key} is exempt but no such column"
        assert not isinstance(names[key].type, ScrubbedText | ScrubbedJson), key
        assert len(reason) > 10, key


def test_the_plain_paths_list_is_the_tables_own() -> None:
    texts: dict[str, dict[str, int | None]] = {}
    jsons: dict[str, set[str]] = {}
    for table, column in _columns():
        if isinstance(column.type, ScrubbedText):
            texts.setdefault(table, {})[column.name] = column.type.length
        elif isinstance(column.type, ScrubbedJson):
            jsons.setdefault(table, set()).add(column.name)
    assert texts == gate.SCRUBBED
    assert {t: frozenset(c) for t, c in jsons.items()} == gate.SCRUBBED_JSON


def test_a_bound_text_is_scrubbed_and_fits_its_column() -> None:
    column = ScrubbedText(16)
    assert column.process_bind_param(f"a {SECRET}", None) == "a [redacted:gith"  # type: ignore[arg-type]
    assert column.process_bind_param("plain 한국어", None) == "plain 한국어"  # type: ignore[arg-type]
    value = {"title": [f"old {SECRET}", "new"], SECRET: 1, "n": 3}
    kept = ScrubbedJson().process_bind_param(value, None)  # type: ignore[arg-type]
    assert kept == {
        "title": ["old [redacted:github_token]", "new"],
        "[redacted:github_token]": 1,
        "n": 3,
    }
    same = {"a": ["b", 1, None]}
    assert ScrubbedJson().process_bind_param(same, None) is same  # type: ignore[arg-type]


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_the_plain_statements_bind_their_texts_through_the_gate(dialect: str) -> None:
    statement = session_rows_sql.sql(type("Db", (), {"dialect": dialect})(), "insert_session")  # type: ignore[arg-type]
    gated = {name: kind for name, kind, _ in gate.gated_params(statement)}
    assert gated["cwd"] == "text" and gated["classification"] == "json"
    assert "external_id" not in gated and "agent" not in gated
    params = {"cwd": f"/home/me/{SECRET}", "classification": f'{{"reason": "{SECRET}"}}'}
    bound = gate.bind(statement, {**params, "agent": "claude-code"})
    assert SECRET not in str(bound) and bound["agent"] == "claude-code"
    event = session_rows_sql.sql(type("Db", (), {"dialect": dialect})(), "event")  # type: ignore[arg-type]
    # The subject is ondeck's own <kind>:<id> (db/gate.py EXEMPT).
    assert {n for n, _, _ in gate.gated_params(event)} == {"actor", "details"}
    update = "UPDATE sessions SET last_word = :last_word, files = JSON(:files) WHERE id = :id"
    from ondeck.db.plain import render

    assert {n for n, _, _ in gate.gated_params(render(dialect, update))} == {"last_word", "files"}


def test_a_write_the_gate_cannot_read_is_refused() -> None:
    with pytest.raises(gate.UnreadWrite):
        gate.gated_params("UPDATE tasks SET title = :a || :b WHERE id = :id")
    with pytest.raises(gate.UnreadWrite):
        gate.gated_params("INSERT INTO notes (text, origin) VALUES (:t)")
    assert gate.gated_params("SELECT * FROM tasks WHERE title = :t") == ()


def test_the_gate_imports_no_sqlalchemy() -> None:
    probe = "import sys, ondeck.db.gate; print('sqlalchemy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
