"""The API's bearer check, when the server has `ONDECK_TOKEN`: who a request is, and whether
it may do what it asks.

    the admin token     `ONDECK_TOKEN`: everything; recorded as `api`
    a device token      `ondeck token create`: its scope; recorded as `api:<name>`
    `read`              GET, HEAD and OPTIONS only; anything else is 403 naming the token
    no token            401 (not counted as a wrong token: a client not yet set up)
    wrong token         401, counted for the address (unknown, revoked and expired alike)
    a refused caller    429 with `Retry-After`, whatever token it gives: a remote address,
                        or a user of this machine, never the user the server runs as
                        (web/auth.throttle_key)
    over MCP (`/mcp`)   the same check, recorded as `mcp`, `mcp:<name>`; a `read` token is
                        held to the read-only tools by the MCP server (entrypoints/mcp/http.py)
    the owner socket    no token asked, whatever the server's: the kernel says who connected
                        (SO_PEERCRED). The user the server runs as is the admin; any other
                        user, or a peer the kernel did not name, is refused (403) on every
                        path, token or not (`admit_channel`)

The identity reaches the routes on the request's Call (`store.identify_as`), so every change
a route makes is recorded with it, in one place.
"""

from __future__ import annotations

import os

from fastapi import Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ondeck.core.access import ADMIN
from ondeck.core.errors import Forbidden, OndeckError, Unauthorized
from ondeck.entrypoints.api import errors
from ondeck.entrypoints.gateway import call_of, identify_as
from ondeck.entrypoints.web.auth import guard_of, throttle_key
from ondeck.host.channel import UNKNOWN_PEER, channel_peer, from_owner


async def admit(request: Request, *, browsable: bool, surface: str = "api") -> Response | None:
    """None when the request may go on (its Call now acts as who it is); else the refusal.
    `browsable`: the API's description, which a browser logged in to the dashboard may read.
    `surface` "mcp": every request is a POST, so a `read` token is held to the tools that
    change nothing by the MCP server itself (entrypoints/mcp/http.py), which reads the
    identity here."""
    if browsable:
        try:
            if await run_in_threadpool(guard_of(request).has_session, request):
                return None
        except OndeckError as exc:  # the store is unavailable: no answer either way
            return errors.error_response(exc.http_status, exc.code, exc.message)
    call = call_of(request)
    guard = guard_of(request)
    wait = guard.retry_after(request, call.now())
    if wait is not None:
        refused = errors.error_response(
            429,
            "too_many_attempts",
            f"too many wrong tokens from {throttle_key(request)}: try again in {wait} s",
        )
        refused.headers["Retry-After"] = str(wait)
        return refused
    try:
        presented = _bearer(request)
        if presented is None:
            raise Unauthorized("missing bearer token")
        # The database is unavailable: 503, no answer either way.
        identity = await run_in_threadpool(guard.identify, call, presented)
        if identity is None:
            guard.wrong_token(request, call.now())
            reason = await run_in_threadpool(guard.refusal, call, presented)
            raise Unauthorized(f"wrong bearer token: {reason}")
        if surface == "api" and not identity.may(request.method):
            raise Forbidden(
                f"token {identity.token!r} may only read: {request.method} changes data "
                "and needs a write token"
            )
    except OndeckError as exc:
        return errors.error_response(exc.http_status, exc.code, exc.message)
    request.state.ondeck_identity = identity
    identify_as(request, identity.actor(surface), identity.access())
    return None


def admit_channel(request: Request, *, surface: str | None) -> Response | None:
    """A request over the owner socket (entrypoints/server/serve.py): None when the process
    that connected is of the user this server runs as, who then acts as the admin on
    `surface` ("api", "mcp"; None: a path of the dashboard, whose own login decides, as over
    TCP); else the refusal, whatever token it gives. Its directory (0700) lets no other user
    connect: this is the check behind it, closed when the kernel did not say who it is."""
    uid = channel_peer(request.scope)
    if not from_owner(request.scope):
        who = "an unknown process" if uid == UNKNOWN_PEER else f"user id {uid}"
        return errors.error_response(
            403,
            "forbidden",
            f"the owner socket serves only the user the server runs as (user id "
            f"{os.getuid()}), not {who}",
        )
    if surface is not None:
        request.state.ondeck_identity = ADMIN
        identify_as(request, ADMIN.actor(surface), ADMIN.access())
    return None


def _bearer(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    value = value.strip()
    return value if scheme.lower() == "bearer" and value else None


def from_loopback(request: Request) -> bool:
    """Whether the request came from this machine: only such a caller's paths (a session's
    directory) are paths here, for the server to read git in. The owner-only socket
    (entrypoints/server/serve.py) is this machine's owner."""
    import ipaddress

    if channel_peer(request.scope) is not None:
        return from_owner(request.scope)
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
