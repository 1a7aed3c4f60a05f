"""Device tokens in the store (system/tokens.py): made, checked, revoked, expired; only
their hashes are kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, func, select

from ondeck.core.access import TokenScope
from ondeck.core.errors import Conflict, InvalidInput, NotFound
from ondeck.db.tables import events, tokens
from ondeck.system import tokens as device_tokens

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


def _make(engine: Engine, name: str = "laptop", **kw: object) -> device_tokens.Created:
    with engine.begin() as conn:
        return device_tokens.create(conn, NOW, name, actor="cli", **kw)  # type: ignore[arg-type]


def _verify(engine: Engine, secret: str, at: datetime = NOW) -> device_tokens.Verified | None:
    with engine.begin() as conn:
        return device_tokens.verify(conn, at, secret)


def test_it_makes_a_token_that_verifies_as_its_name_and_scope(engine: Engine) -> None:
    made = _make(engine, scope="read")
    assert made.secret.startswith("odk_") and len(made.secret) == 47
    found = _verify(engine, made.secret)
    assert found is not None
    assert (found.identity.token, found.identity.scope) == ("laptop", TokenScope.READ)
    assert found.identity.actor("api") == "api:laptop"
    assert _verify(engine, made.secret[:-1] + "x") is None
    assert _verify(engine, "not-even-prefixed") is None


def test_it_keeps_only_the_hash(engine: Engine) -> None:
    made = _make(engine)
    with engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(select(tokens))]
        logged = [tuple(r) for r in conn.execute(select(events))]
    assert rows and made.secret not in repr(rows) + repr(logged)
    assert device_tokens.digest(made.secret) in repr(rows)


def test_a_revoked_token_is_refused_and_its_name_free_again(engine: Engine) -> None:
    made = _make(engine)
    with engine.begin() as conn:
        gone = device_tokens.revoke(conn, NOW, "laptop", actor="cli")
    assert gone.state(NOW) == "revoked"
    assert _verify(engine, made.secret) is None
    again = _make(engine)
    assert _verify(engine, again.secret) is not None
    with engine.connect() as conn:
        listed = device_tokens.list_tokens(conn)
        kinds = conn.execute(select(events.c.kind, events.c.subject)).all()
    assert [t.state(NOW) for t in listed] == ["revoked", "active"]
    assert [tuple(k) for k in kinds] == [
        ("token.created", "token:laptop"),
        ("token.revoked", "token:laptop"),
        ("token.created", "token:laptop"),
    ]


def test_an_expired_token_is_refused(engine: Engine) -> None:
    made = _make(engine, expires_in=timedelta(days=90))
    assert _verify(engine, made.secret, NOW + timedelta(days=89)) is not None
    assert _verify(engine, made.secret, NOW + timedelta(days=90)) is None


def test_last_used_is_written_at_most_once_a_minute(engine: Engine) -> None:
    made = _make(engine)
    first = _verify(engine, made.secret)
    assert first is not None and first.touch_due
    with engine.begin() as conn:
        assert device_tokens.touch(conn, NOW, "laptop")
        assert not device_tokens.touch(conn, NOW + timedelta(seconds=30), "laptop")
    soon = _verify(engine, made.secret, NOW + timedelta(seconds=30))
    assert soon is not None and not soon.touch_due
    later = _verify(engine, made.secret, NOW + timedelta(seconds=61))
    assert later is not None and later.touch_due
    with engine.connect() as conn:
        [listed] = device_tokens.list_tokens(conn)
    assert listed.last_used_at == NOW


@pytest.mark.parametrize(
    ("name", "kw", "error"),
    [
        ("bad name", {}, InvalidInput),
        ("", {}, InvalidInput),
        ("x" * 65, {}, InvalidInput),
        ("ok", {"scope": "admin"}, InvalidInput),
        ("ok", {"expires_in": timedelta(0)}, InvalidInput),
        ("ok", {"expires_in": timedelta(days=4000)}, InvalidInput),
        ("laptop", {}, Conflict),
    ],
)
def test_bad_input_changes_nothing(
    engine: Engine, name: str, kw: dict[str, object], error: type[Exception]
) -> None:
    _make(engine)
    with pytest.raises(error):
        _make(engine, name, **kw)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(tokens)).scalar_one() == 1
        assert conn.execute(select(func.count()).select_from(events)).scalar_one() == 1


def test_revoking_an_unknown_name_is_not_found(engine: Engine) -> None:
    with pytest.raises(NotFound), engine.begin() as conn:
        device_tokens.revoke(conn, NOW, "nobody", actor="cli")
