"""`ondeck token create|list|revoke`: the token printed once, stored only as a hash."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, select

from ondeck.db.tables import events, tokens

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONDECK_TZ", "UTC")


def _stored(engine: Engine) -> str:
    with engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(select(tokens))]
        rows += [tuple(r) for r in conn.execute(select(events))]
    return repr(rows)


def test_create_prints_the_token_once_and_stores_its_hash(ondeck: Any, engine: Engine) -> None:
    code, out, err = ondeck("token", "create", "laptop", "--scope", "read", "--expires", "90d")
    assert code == 0, err
    secret = out.strip()
    assert secret.startswith("odk_") and "\n" not in secret
    assert "'laptop' (read, expires: 2026-09-13T09:00:00+00:00)" in err
    assert secret not in _stored(engine)

    code, out, err = ondeck("token", "list")
    assert code == 0, err
    assert "laptop" in out and "read" in out and secret not in out
    [listed] = json.loads(ondeck("token", "list", "--json")[1])
    assert listed == {
        "name": "laptop",
        "scope": "read",
        "state": "active",
        "created_at": "2026-06-15T09:00:00+00:00",
        "last_used_at": None,
        "expires_at": "2026-09-13T09:00:00+00:00",
        "revoked_at": None,
        "side": None,  # every side (`token create --side` limits it to one)
    }


def test_create_json_gives_the_token_too(ondeck: Any, engine: Engine) -> None:
    code, out, err = ondeck("token", "create", "phone", "--json")
    assert code == 0, err
    made = json.loads(out)
    assert made["scope"] == "write" and made["expires_at"] is None
    assert made["token"].startswith("odk_") and made["token"] not in _stored(engine)


def test_revoke_marks_it_revoked_and_then_it_is_not_found(ondeck: Any) -> None:
    assert ondeck("token", "create", "laptop")[0] == 0
    code, out, err = ondeck("token", "revoke", "laptop")
    assert (code, out.strip()) == (0, "revoked token 'laptop'"), err
    [listed] = json.loads(ondeck("token", "list", "--json")[1])
    assert listed["state"] == "revoked" and listed["revoked_at"] == "2026-06-15T09:00:00+00:00"
    code, _, err = ondeck("token", "revoke", "laptop")
    assert code == 4 and err.count("\n") == 1 and "no live token named 'laptop'" in err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["bad name"], "token name 'bad name' is not valid"),
        (["ok", "--scope", "admin"], "token scope 'admin': use one of read, write"),
        (["ok", "--expires", "soon"], "--expires 'soon' is not a duration"),
        (["ok", "--expires", "0d"], "token expiry must be in the future"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_changes_nothing(
    ondeck: Any, engine: Engine, args: list[str], says: str
) -> None:
    before = _stored(engine)
    code, out, err = ondeck("token", "create", *args)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and says in err, err
    assert _stored(engine) == before


def test_a_name_in_use_is_a_conflict(ondeck: Any) -> None:
    assert ondeck("token", "create", "laptop")[0] == 0
    code, _, err = ondeck("token", "create", "laptop")
    assert code == 3 and "a token named 'laptop' exists: revoke it first" in err


def test_a_token_may_be_limited_to_one_configured_side(
    ondeck: Any, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONDECK_SIDES", json.dumps({"work": ["/w"], "personal": ["/p"]}))
    code, out, err = ondeck("token", "create", "work-laptop", "--side", "work")
    assert code == 0, err
    assert "side work only" in err
    [listed] = json.loads(ondeck("token", "list", "--json")[1])
    assert listed["side"] == "work"
    code, out, err = ondeck("token", "create", "other", "--side", "nope")
    assert code == 2 and "'nope' is not configured" in err and out == ""
    with engine.connect() as conn:
        stored = dict(conn.execute(select(tokens.c.name, tokens.c.side)).all())
    assert stored == {"work-laptop": "work"}
