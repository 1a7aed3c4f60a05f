"""What a browser may ask of this server, checked before routing, for every route alike
(the API and its description, the dashboard, `/mcp`, the calendar feed):

    Host        a loopback name or address, the address the request came in on, or a name of
                `ONDECK_PUBLIC_HOSTS`, with the server's port (a public name given without
                one: any port); else 421. A page of another site that rebinds its name to
                127.0.0.1 sends its own name, and gets nothing.
    Origin      a request that may change something (not GET, HEAD, OPTIONS) whose Origin or
                Referer is another origin, or whose Sec-Fetch-Site says another site, is
                refused with 403. Ports count: a page on 127.0.0.1:9000 is another origin.
    embedding   a page of another site may link to ondeck (a navigation) but not load it as
                a script, an image, a fetch or a frame (Sec-Fetch-Mode other than navigate,
                or Sec-Fetch-Dest a frame): 403.
    API writes  a body sent to `/api/` must be JSON (`Content-Type: application/json`)
                unless the request carries a header no cross-site form can send
                (Authorization, X-Ondeck-*): 415. A form or a `text/plain` fetch is what a
                page of another site can send without asking the browser first.

A request over a Unix socket (no server address: only the owner can open it) is not a
browser's, and is let through. Refusals have the API's error shape. A plain ASGI middleware,
as the Guard in app.py is, for the same reason (no task group per request).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from ondeck.core.access import READ_METHODS, is_loopback_host, split_host
from ondeck.entrypoints.api.errors import error_response
from ondeck.host.channel import channel_peer

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
# Headers a cross-site form or a "simple" fetch cannot carry (the browser would ask first,
# and ondeck answers no preflight).
_NON_SIMPLE = (b"authorization", b"x-ondeck-")
# A navigation inside another site's page (clickjacking): a link, not a frame.
_FRAMES = frozenset({"iframe", "frame", "embed", "object"})


class Boundary:
    def __init__(self, app: ASGIApp, *, public_hosts: list[str]) -> None:
        self.app = app
        self.public_any_port: set[str] = set()
        self.public: set[tuple[str, int]] = set()
        for name in public_hosts:
            parsed = split_host(name)
            if parsed is None:  # the settings refuse such a name; skip it rather than fail
                continue
            host, port = parsed
            if port is None:
                self.public_any_port.add(host)
            else:
                self.public.add((host, port))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The owner-only socket (entrypoints/server/serve.py marks its requests; uvicorn gives them
        # the socket's path as the server, with no port) is no browser's.
        if (
            scope["type"] != "http"
            or channel_peer(scope) is not None
            or scope.get("server") is None
        ):
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, code, message = refusal
        await error_response(status, code, message)(scope, receive, send)

    def refusal(self, scope: Scope) -> tuple[int, str, str] | None:
        headers: dict[bytes, bytes] = {}
        non_simple = False
        for name, value in scope["headers"]:
            headers.setdefault(name, value)
            if name.startswith(_NON_SIMPLE):
                non_simple = True
        scheme = scope.get("scheme", "http")
        host_header = headers.get(b"host", b"").decode("latin-1")
        own = self._own_host(host_header, scope, scheme)
        if own is None:
            shown = host_header[:80] or "(none)"
            return (
                421,
                "misdirected_request",
                f"this server does not answer to the host {shown!r}: reach it as "
                "127.0.0.1 or localhost, or add the name to ONDECK_PUBLIC_HOSTS",
            )
        fetch_site = headers.get(b"sec-fetch-site", b"").decode("latin-1").lower()
        foreign_site = fetch_site in ("cross-site", "same-site")
        method = scope["method"].upper()
        if method in READ_METHODS:
            mode = headers.get(b"sec-fetch-mode", b"").decode("latin-1").lower()
            dest = headers.get(b"sec-fetch-dest", b"").decode("latin-1").lower()
            if foreign_site and (mode != "navigate" or dest in _FRAMES):
                return (
                    403,
                    "forbidden",
                    "refused: a page of another site may link to ondeck, not load from it",
                )
            return None
        if foreign_site or self._foreign(headers, own):
            return (
                403,
                "forbidden",
                f"refused: a {method} from a page of another origin (nothing was changed)",
            )
        if scope["path"].startswith("/api/") and not non_simple and _has_body(headers):
            kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if kind != b"application/json" and not kind.endswith(b"+json"):
                return (
                    415,
                    "unsupported_media_type",
                    "the API takes JSON: send Content-Type: application/json",
                )
        return None

    def _own_host(self, value: str, scope: Scope, scheme: str) -> tuple[str, int] | None:
        """The Host as (host, port) when this server answers to it, else None."""
        parsed = split_host(value)
        if parsed is None:
            return None
        host, given_port = parsed
        server_host, server_port = scope["server"]
        port = given_port if given_port is not None else _DEFAULT_PORTS.get(scheme, 80)
        if host in self.public_any_port:
            return host, port
        if port != server_port and (host, port) not in self.public:
            return None
        if (
            is_loopback_host(host)
            or host == str(server_host).lower()
            or (host, port) in self.public
        ):
            return host, port
        return None

    def _foreign(self, headers: dict[bytes, bytes], own: tuple[str, int]) -> bool:
        """Whether the Origin (or, without one, the Referer) names another origin."""
        given = headers.get(b"origin") or headers.get(b"referer")
        if given is None:
            return False  # not a browser (a hook, the CLI, curl): they send neither
        text = given.decode("latin-1").strip()
        if text.lower() == "null":
            return True  # a sandboxed frame or a page of no origin
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError:
            return True
        if not parts.hostname:
            return True
        port = port if port is not None else _DEFAULT_PORTS.get(parts.scheme.lower())
        host, own_port = own
        # The scheme is not compared: behind a proxy that ends TLS, the page is https and
        # the request here plain http; the same host and port cannot be two servers.
        same_port = port == own_port or {port, own_port} <= {80, 443}
        return parts.hostname.lower().rstrip(".") != host or not same_port


def _has_body(headers: dict[bytes, bytes]) -> bool:
    length = headers.get(b"content-length")
    if length is not None:
        return length.strip() not in (b"0", b"")
    return b"transfer-encoding" in headers
