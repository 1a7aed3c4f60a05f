"""Secrets for the walks of every write path, and the database read back.

Each input gets secrets of its own (a GitHub token and a Korean password line), so a leak
names the input it came from. `leaks` reads every table and every column of the database
with raw SQL (the tables found in the database itself, not in db/tables.py: a table added
later is read too) and says where a secret was found as it was written.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import Engine, text

MARKER = "[redacted:"


def token(name: str) -> str:
    """A GitHub token of the right shape, unique to `name` (built from pieces, so this file
    does not look like a leak to code hosts' scanners)."""
    digest = hashlib.sha256(name.encode()).hexdigest()
    body = "".join(c.upper() if i % 3 == 0 else c for i, c in enumerate(digest))[:36]
    return "gh" + "p_" + body


def password(name: str) -> str:
    return "Pw" + hashlib.sha256(name.encode()).hexdigest()[:10] + "!"


def text_for(name: str) -> str:
    """A text with two secrets in it, in Korean and English."""
    return f"작업 메모 {token(name)} 그리고 비밀번호: {password(name)}"


def secrets_of(name: str) -> tuple[str, ...]:
    return token(name), password(name)


def tables(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            found = conn.execute(
                text("SELECT name FROM sqlite_master WHERE type = 'table'")
            ).scalars()
        else:
            found = conn.execute(
                text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            ).scalars()
        return sorted(found)


def every_value(engine: Engine) -> list[tuple[str, str, str]]:
    """(table, column, value as text) for every value of every row of every table."""
    out = []
    with engine.connect() as conn:
        for table in tables(engine):
            result = conn.execute(text(f'SELECT * FROM "{table}"'))
            names = list(result.keys())
            for row in result:
                for column, value in zip(names, row, strict=True):
                    if value is None:
                        continue
                    shown = value if isinstance(value, str) else json.dumps(value, default=str)
                    out.append((table, column, shown))
    return out


def leaks(engine: Engine, secrets: tuple[str, ...] | list[str]) -> list[tuple[str, str, str]]:
    """Where each secret is stored as it was written: (table, column, secret)."""
    return [
        (table, column, secret)
        for table, column, value in every_value(engine)
        for secret in secrets
        if secret in value
    ]


def markers(engine: Engine) -> int:
    return sum(value.count(MARKER) for _, _, value in every_value(engine))


def assert_scrubbed(engine: Engine, name: str, before: int, accepted: bool) -> int:
    """No secret of `name` stored; when the write was accepted, markers were stored for it.
    The number of markers now."""
    found = leaks(engine, secrets_of(name))
    assert not found, f"{name}: stored as written in {found}"
    now = markers(engine)
    if accepted:
        assert now > before, f"{name}: accepted, yet nothing of it was stored"
    return now


def dump_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
