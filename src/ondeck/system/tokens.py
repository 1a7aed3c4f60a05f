"""Device tokens: making, listing, revoking and checking them.

A token is `odk_` and 43 characters of `secrets.token_urlsafe(32)` (256 random bits): the
prefix makes a pasted one recognisable (to people and to secret scanners), the rest makes it
unguessable. It is shown once, when made; the store keeps only its SHA-256, so neither a
copy of the database nor a backup gives anyone a token. A plain hash is enough where the
secret is random (no dictionary to try), and lets a request find its token by the index.

Checking is a read: `verify` says who the token is and whether its `last_used_at` is due an
update, which `touch` writes at most once a minute per token (not a write per request).
A revoked or expired token is refused from the next request on: nothing is cached.
Making and revoking are events (`token:<name>`), never with the token in them.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from ondeck.core.access import DeviceToken, Identity, TokenScope
from ondeck.core.clock import aware
from ondeck.core.errors import Conflict, InvalidInput, NotFound
from ondeck.core.models import choice
from ondeck.core.sides import check_side
from ondeck.db.tables import tokens
from ondeck.system import events

PREFIX = "odk_"
NAME_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"
EXPIRES_MAX = timedelta(days=3650)
# How stale `last_used_at` may be before a request writes it again.
TOUCH_EVERY = timedelta(minutes=1)
# Longer than any token this module makes: a pasted megabyte is not hashed.
_PRESENTED_MAX = 200
_NAME = re.compile(NAME_PATTERN)


@dataclass(frozen=True)
class Created:
    token: DeviceToken
    secret: str  # the token itself: shown once, stored nowhere


@dataclass(frozen=True)
class Verified:
    identity: Identity
    touch_due: bool  # its last_used_at is older than TOUCH_EVERY (or never written)


def check_name(value: str) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        shown = repr(value)[:40]
        raise InvalidInput(
            f"token name {shown} is not valid: 1 to 64 letters, digits, '.', '_' or '-'"
        )
    return value


def check_scope(value: str | TokenScope) -> TokenScope:
    return choice(TokenScope, value, "token scope")


def check_expires(value: timedelta | None) -> timedelta | None:
    if value is None:
        return None
    if value <= timedelta(0):
        raise InvalidInput("token expiry must be in the future, such as 90d")
    if value > EXPIRES_MAX:
        raise InvalidInput("token expiry is too far: at most 3650d")
    return value


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _from_row(row: Any) -> DeviceToken:
    return DeviceToken(
        name=row.name,
        scope=TokenScope(row.scope),
        created_at=row.created_at,
        last_used_at=row.last_used_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
        side=row.side,
    )


_COLUMNS = (
    tokens.c.name,
    tokens.c.scope,
    tokens.c.created_at,
    tokens.c.last_used_at,
    tokens.c.expires_at,
    tokens.c.revoked_at,
    tokens.c.side,
)


def create(
    conn: Connection,
    now: datetime,
    name: str,
    scope: str | TokenScope = TokenScope.WRITE,
    expires_in: timedelta | None = None,
    *,
    actor: str,
    side: str | None = None,
) -> Created:
    """A new token named `name`; refused while another live token has that name. `side`:
    the one side it sees and writes (the caller checks it is configured); None: every side."""
    now = aware(now)
    name, given = check_name(name), check_scope(scope)
    side = check_side(side)
    lifetime = check_expires(expires_in)
    expires_at = None if lifetime is None else now + lifetime
    secret = PREFIX + secrets.token_urlsafe(32)
    values: dict[str, Any] = {"name": name, "scope": given.value, "hash": digest(secret)}
    values.update(created_at=now, side=side)
    try:
        with conn.begin_nested():  # uq_tokens_name_live: the database decides
            conn.execute(insert(tokens).values(**values, expires_at=expires_at))
    except IntegrityError:
        raise Conflict(
            f"a token named {name!r} exists: revoke it first, or choose another name"
        ) from None
    events.record(
        conn,
        now,
        actor=actor,
        kind="token.created",
        subject=f"token:{name}",
        details={
            "scope": given.value,
            "expires_at": None if expires_at is None else expires_at.isoformat(),
            "side": side,
        },
    )
    made = DeviceToken(
        name=name,
        scope=given,
        created_at=now,
        last_used_at=None,
        expires_at=expires_at,
        revoked_at=None,
        side=side,
    )
    return Created(token=made, secret=secret)


def list_tokens(conn: Connection) -> list[DeviceToken]:
    """Every token, revoked ones too, oldest first."""
    rows = conn.execute(select(*_COLUMNS).order_by(tokens.c.created_at, tokens.c.id))
    return [_from_row(row) for row in rows]


def revoke(conn: Connection, now: datetime, name: str, *, actor: str) -> DeviceToken:
    """Revoke the live token named `name`: refused from the next request on."""
    now = aware(now)
    row = conn.execute(
        update(tokens)
        .where(tokens.c.name == check_name(name), tokens.c.revoked_at.is_(None))
        .values(revoked_at=now)
        .returning(*_COLUMNS)
    ).first()
    if row is None:
        raise NotFound(f"no live token named {name!r} (`ondeck token list` shows them)")
    events.record(conn, now, actor=actor, kind="token.revoked", subject=f"token:{name}")
    return _from_row(row)


def verify(conn: Connection, now: datetime, presented: str) -> Verified | None:
    """Who `presented` is, or None: unknown, revoked or expired."""
    if not presented.startswith(PREFIX) or len(presented) > _PRESENTED_MAX:
        return None
    row = conn.execute(
        select(tokens.c.name, tokens.c.scope, tokens.c.side, tokens.c.last_used_at).where(
            tokens.c.hash == digest(presented),
            tokens.c.revoked_at.is_(None),
            or_(tokens.c.expires_at.is_(None), tokens.c.expires_at > aware(now)),
        )
    ).first()
    if row is None:
        return None
    identity = Identity(token=row.name, scope=TokenScope(row.scope), side=row.side)
    due = row.last_used_at is None or row.last_used_at <= now - TOUCH_EVERY
    return Verified(identity=identity, touch_due=due)


def refusal(conn: Connection, now: datetime, presented: str) -> str:
    """Why `presented` is not a live token, naming it when it is one of ours (revoked or
    expired): whoever presents it holds it already, and the client can say which one."""
    if not presented.startswith(PREFIX) or len(presented) > _PRESENTED_MAX:
        return "not a token of this server"
    row = conn.execute(
        select(tokens.c.name, tokens.c.revoked_at, tokens.c.expires_at).where(
            tokens.c.hash == digest(presented)
        )
    ).first()
    if row is None:
        return "not a token of this server"
    if row.revoked_at is not None:
        return f"token {row.name!r} is revoked"
    if row.expires_at is not None and row.expires_at <= aware(now):
        return f"token {row.name!r} has expired"
    return f"token {row.name!r} is not live"


def touch(conn: Connection, now: datetime, name: str) -> bool:
    """Write the live token's `last_used_at`, unless another request did in the last minute."""
    now = aware(now)
    changed = conn.execute(
        update(tokens)
        .where(
            tokens.c.name == name,
            tokens.c.revoked_at.is_(None),
            or_(tokens.c.last_used_at.is_(None), tokens.c.last_used_at <= now - TOUCH_EVERY),
        )
        .values(last_used_at=now)
    )
    return changed.rowcount == 1
