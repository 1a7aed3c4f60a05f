"""Who is asking, and what they may do: the admin token, device tokens and their scopes.

    admin     `ONDECK_TOKEN` on the server: every scope, and managing device tokens.
    write     a device token that may change data (and read it).
    read      a device token that may read the context, recall, lists and the calendar feed.

Changes are recorded with the identity's actor: `api` for the admin token (or a server
without one), `api:<token name>` for a device token. Storing and checking tokens is
system/tokens.py; this module is the vocabulary, pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, tzinfo
from enum import StrEnum
from typing import Any

from ondeck.core.clock import iso
from ondeck.core.sides import OWNER, Access


class TokenScope(StrEnum):
    READ = "read"
    WRITE = "write"


# HTTP methods that change nothing: all a `read` token may use.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True, kw_only=True)
class Identity:
    """Who a request is: the admin (or anyone, on a server without a token) or a device."""

    token: str | None  # the device token's name; None for the admin
    scope: TokenScope
    # The one side a device token sees and writes (`token create --side`); None: every side.
    side: str | None = None

    @property
    def admin(self) -> bool:
        return self.token is None

    def actor(self, surface: str = "api") -> str:
        return surface if self.token is None else f"{surface}:{self.token}"

    def may(self, method: str) -> bool:
        return self.scope is TokenScope.WRITE or method.upper() in READ_METHODS

    def access(self) -> Access:
        """What this identity may see and write, as every door reads it."""
        if self.token is None:
            return OWNER
        return Access(
            side=self.side, write=self.scope is TokenScope.WRITE, who=f"token {self.token!r}"
        )


ADMIN = Identity(token=None, scope=TokenScope.WRITE)


@dataclass(frozen=True, kw_only=True)
class DeviceToken:
    """A device token as listed: never the token itself (only its hash is stored)."""

    name: str
    scope: TokenScope
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None
    side: str | None = None  # the one side it sees and writes; None: every side

    def state(self, now: datetime) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"

    def to_json(self, now: datetime, zone: tzinfo) -> dict[str, Any]:
        return {
            "name": self.name,
            "scope": self.scope.value,
            "state": self.state(now),
            "created_at": iso(self.created_at, zone),
            "last_used_at": iso(self.last_used_at, zone),
            "expires_at": iso(self.expires_at, zone),
            "revoked_at": iso(self.revoked_at, zone),
            "side": self.side,
        }


# A DNS name (letters, digits, hyphens, dots; any script's name arrives here as punycode),
# an IPv4 address, or an IPv6 address in brackets; then an optional port.
_HOST = re.compile(
    r"(?P<host>\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?)(?::(?P<port>[0-9]{1,5}))?"
)


def split_host(value: str) -> tuple[str, int | None] | None:
    """A Host header (or a configured name) as (host, port): lower case, an IPv6 address
    without its brackets, None for no port; None when it is not a host at all."""
    found = _HOST.fullmatch(value.strip().lower().rstrip("."))
    if found is None:
        return None
    port = found["port"]
    if port is not None and not 0 < int(port) <= 65535:
        return None
    return found["host"].strip("[]"), None if port is None else int(port)


LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback_host(host: str) -> bool:
    """A name or address that can only mean this machine."""
    import ipaddress

    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
