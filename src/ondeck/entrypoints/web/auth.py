"""Dashboard login and CSRF.

Login (only when `ONDECK_TOKEN` is set): the login form takes the token, compared in
constant time; success sets `ondeck_session`, an itsdangerous-signed, timestamped value
(HttpOnly, SameSite=Strict, Secure over HTTPS) that every page except the login page and
static files requires. The cookie carries a random session id whose hash the store keeps
(system/dashboard_logins.py); logging out deletes it there, so a copy of the cookie
opens nothing afterwards, and clears the browser's cookies. The API keeps its own bearer
check (api/app.py); the calendar feed takes `?token=` because calendar apps cannot log in.

CSRF (always, with or without a token): a signed double-submit cookie. `ondeck_csrf` holds
a random nonce (HttpOnly, SameSite=Strict); every form carries `csrf_token`, the nonce
signed with the dashboard secret (htmx requests may send it as `X-CSRF-Token`). A POST is
accepted only when the signature is good and the signed nonce equals the cookie's. Another
site can neither read the cookie nor forge the signature. Logging in rotates the nonce.

The secret: with a token, derived from it (HMAC), so sessions survive a restart and die
when the token changes; without one, random per process (a restart only asks for a reload).

Wrong tokens: the login form, the calendar feed and the API's bearer check count them per
caller in one window (core/throttle.py): a remote address, or a user of this machine
(`throttle_key`); after 10 within a minute that caller is refused (429 with `Retry-After`)
until the burst leaves the window, whatever token it then gives. The user the server runs
as is never refused: it can read the token anyway, and nobody may lock the owner out.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request
from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.responses import Response

from ondeck.core import logs
from ondeck.core.access import ADMIN, Identity
from ondeck.core.errors import Unavailable
from ondeck.core.throttle import FailureWindow
from ondeck.entrypoints.gateway import Call, call_of
from ondeck.host.quick_settings_rules import check_token

log = logs.logger("ondeck.auth")

SESSION_COOKIE = "ondeck_session"
CSRF_COOKIE = "ondeck_csrf"
FLASH_COOKIE = "ondeck_flash"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
SESSION_MAX_AGE = 30 * 24 * 3600
_NONCE_BYTES = 24
_NONCE_CHARS = 32  # token_urlsafe(24) is 32 characters


class LoginRequired(Exception):
    """No valid session while a token is configured: the handler sends the login page."""


class CsrfRefused(Exception):
    """A form without a valid CSRF token: refused with 403, nothing written."""


@dataclass(frozen=True)
class Guard:
    """The dashboard's signing keys and the configured token (None: no login), and the wrong
    tokens each address gave (the login's and the API's)."""

    token: str | None
    secret: bytes
    failures: FailureWindow = field(default_factory=FailureWindow)

    @classmethod
    def create(cls, token: str | None) -> Guard:
        """The guard of a server with `token` (None: no login). A token too weak to guard
        anything is refused here too, not only by the settings (ValueError, saying why)."""
        if token is not None:
            check_token(token)
        if token:
            secret = hmac.new(token.encode(), b"ondeck-dashboard-v1", hashlib.sha256).digest()
        else:
            secret = secrets.token_bytes(32)
        return cls(token=token, secret=secret)

    @property
    def login_enabled(self) -> bool:
        return self.token is not None

    def _serializer(self, salt: str) -> URLSafeTimedSerializer:
        return URLSafeTimedSerializer(self.secret, salt=salt)

    def token_matches(self, given: str) -> bool:
        if self.token is None:
            return False
        return hmac.compare_digest(given.encode(), self.token.encode())

    def refusal(self, call: Call, presented: str) -> str:
        """Why `presented` is refused (system/tokens.refusal): call it off the event loop."""
        from ondeck.system import tokens

        with call.read() as conn:
            return tokens.refusal(conn, call.now(), presented)

    def identify(self, call: Call, presented: str) -> Identity | None:
        """Who `presented` is: the admin (`ONDECK_TOKEN`), a live device token, or nobody.
        Reads the database for a device token (and writes its "last used", at most once a
        minute): call it off the event loop."""
        if self.token_matches(presented):
            return ADMIN
        from ondeck.system import tokens

        with call.read() as conn:
            found = tokens.verify(conn, call.now(), presented)
        if found is None:
            return None
        if found.touch_due and found.identity.token is not None:
            # Best effort: a busy database delays the "last used" time, never the request.
            with contextlib.suppress(Unavailable), call.write() as conn:
                tokens.touch(conn, call.now(), found.identity.token)
        return found.identity

    # --- wrong tokens ---------------------------------------------------------------

    def retry_after(self, request: Request, now: datetime) -> int | None:
        """Seconds until this request's caller may give a token again; None: now."""
        if not self.failures.counting(now.timestamp()):
            return None  # nobody gave a wrong token: not worth finding out who asks
        key = throttle_key(request)
        return None if key is None else self.failures.retry_after(key, now.timestamp())

    def wrong_token(self, request: Request, now: datetime) -> None:
        key = throttle_key(request)
        if key is None:
            log.info("a wrong token from this machine's owner (%s)", client_address(request))
            return
        if self.failures.fail(key, now.timestamp()):
            log.warning(
                "refusing %s for a minute: %d wrong tokens within %d s",
                key,
                self.failures.limit,
                self.failures.window,
            )

    # --- the session ----------------------------------------------------------------

    def session_value(self, session_id: str) -> str:
        return str(self._serializer("session").dumps({"sid": session_id}))

    def session_id(self, request: Request) -> str | None:
        """The id the request's session cookie carries, if this server signed it and it is
        not older than SESSION_MAX_AGE; whether the session is still live is the store's."""
        value = request.cookies.get(SESSION_COOKIE)
        if not value:
            return None
        try:
            signed = self._serializer("session").loads(value, max_age=SESSION_MAX_AGE)
        except BadSignature:  # also covers an expired signature
            return None
        found = signed.get("sid") if isinstance(signed, dict) else None
        return found if isinstance(found, str) and found else None

    def has_session(self, request: Request) -> bool:
        """Whether the request is logged in: a cookie this server signed, for a session not
        ended (a read of the store: call it off the event loop). Asked once per request."""
        if not self.login_enabled:
            return True
        known = getattr(request.state, "ondeck_session_live", None)
        if known is not None:
            return bool(known)
        session_id = self.session_id(request)
        live = False
        if session_id is not None:
            from ondeck.system import dashboard_logins

            call = call_of(request)
            with call.read() as conn:
                live = dashboard_logins.live(conn, call.now(), session_id)
        request.state.ondeck_session_live = live
        return live

    # --- the message a redirect carries back --------------------------------------------

    def sign_flash(self, message: str) -> str:
        return str(self._serializer("flash").dumps(message[:300]))

    def read_flash(self, value: str) -> str | None:
        """The message, if this server signed it in the last two minutes."""
        try:
            message = self._serializer("flash").loads(value, max_age=120)
        except BadSignature:
            return None
        return message if isinstance(message, str) else None

    # --- CSRF -----------------------------------------------------------------------

    def form_token(self, nonce: str) -> str:
        return str(self._serializer("csrf").dumps(nonce))

    def csrf_ok(self, request: Request, given: str | None) -> bool:
        nonce = _cookie_nonce(request)
        if nonce is None or not given:
            return False
        try:
            signed = self._serializer("csrf").loads(given)
        except BadSignature:
            return False
        return isinstance(signed, str) and hmac.compare_digest(signed.encode(), nonce.encode())


def client_address(request: Request) -> str:
    """The address a request came from: behind a reverse proxy named in
    `ONDECK_TRUSTED_PROXIES`, its `X-Forwarded-For`; else the connection's own."""
    return request.client.host if request.client else "unknown"


def throttle_key(request: Request) -> str | None:
    """Whose wrong tokens these are, for the limit: a remote caller by its address; a caller
    on this machine by its user (every local process shares 127.0.0.1, so one user's
    guesses would lock out every other's hooks); None for the user the server runs as.

    That user is never refused: whatever it runs can read the server's token from its
    files and its environment anyway, so slowing it protects nothing, and refusing it would
    lock the owner out of their own machine (a stale token in one hook's settings, or
    another process's guesses). Every other user, local or remote, is slowed as before."""
    address = client_address(request)
    server = request.scope.get("server")
    if request.client is None or server is None:
        return address  # a Unix socket or a test client: no peer to look up
    from ondeck.entrypoints.server.peer import is_loopback_address, peer_uid

    if not is_loopback_address(address):
        return address
    uid = peer_uid(address, request.client.port, server[1])
    if uid is None:
        return address  # not found (not Linux, or the peer went away): the address alone
    if uid == os.getuid():
        return None
    return f"{address} (uid {uid})"


def _cookie_nonce(request: Request) -> str | None:
    value = request.cookies.get(CSRF_COOKIE, "")
    if len(value) != _NONCE_CHARS or not all(c.isalnum() or c in "-_" for c in value):
        return None
    return value


def guard_of(request: Request) -> Guard:
    guard: Guard = request.app.state.dashboard_guard
    return guard


def csrf_nonce(request: Request) -> str:
    """The nonce this response's forms are signed with; a new one is set as a cookie."""
    existing = getattr(request.state, "csrf_nonce", None) or _cookie_nonce(request)
    if existing:
        request.state.csrf_nonce = existing
        return existing
    nonce = secrets.token_urlsafe(_NONCE_BYTES)
    request.state.csrf_nonce = nonce
    request.state.csrf_new = True
    return nonce


def rotate_csrf(request: Request) -> None:
    request.state.csrf_nonce = secrets.token_urlsafe(_NONCE_BYTES)
    request.state.csrf_new = True


def form_token(request: Request) -> str:
    return guard_of(request).form_token(csrf_nonce(request))


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def store_cookies(request: Request, response: Response) -> None:
    """Set the CSRF cookie when this request made a new nonce."""
    if getattr(request.state, "csrf_new", False):
        response.set_cookie(
            CSRF_COOKIE,
            request.state.csrf_nonce,
            httponly=True,
            samesite="strict",
            secure=_secure(request),
            path="/",
        )


def start_session(request: Request, response: Response) -> None:
    """A new session on the server, and its cookie."""
    from datetime import timedelta

    from ondeck.system import dashboard_logins

    session_id = secrets.token_urlsafe(32)
    call = call_of(request)
    with call.write() as conn:
        dashboard_logins.begin(conn, call.now(), session_id, timedelta(seconds=SESSION_MAX_AGE))
    response.set_cookie(
        SESSION_COOKIE,
        guard_of(request).session_value(session_id),
        max_age=SESSION_MAX_AGE,
        httponly=True,
        samesite="strict",
        secure=_secure(request),
        path="/",
    )


def end_session(request: Request, response: Response) -> None:
    """End the session on the server (a copy of the cookie opens nothing after this), and
    drop the browser's cookies."""
    session_id = guard_of(request).session_id(request)
    if session_id is not None:
        from ondeck.system import dashboard_logins

        with call_of(request).write() as conn:
            dashboard_logins.end(conn, session_id)
    for name in (SESSION_COOKIE, CSRF_COOKIE):
        response.delete_cookie(
            name, path="/", httponly=True, samesite="strict", secure=_secure(request)
        )


# --- dependencies ---------------------------------------------------------------------


def require_login(request: Request) -> None:
    if not guard_of(request).has_session(request):
        raise LoginRequired


async def require_csrf(request: Request) -> None:
    """Every dashboard POST: the form's (or header's) token must match the cookie's nonce."""
    given = request.headers.get(CSRF_HEADER)
    if not given:
        form = await request.form()  # parsed once; the route's Form fields reuse it
        value = form.get(CSRF_FIELD)
        given = value if isinstance(value, str) else None
    if not guard_of(request).csrf_ok(request, given):
        raise CsrfRefused


LoggedIn = Annotated[None, Depends(require_login)]
CsrfChecked = Annotated[None, Depends(require_csrf)]
