"""Client mode: a command talks to the server's HTTP API instead of the database.

With `ONDECK_SERVER_URL` (or `--server`) set, this machine has no database of its own: a
command sends the request the API's route takes and renders the JSON it answers, the same
objects `--json` prints against a database. The rules stay in the services behind the
routes; nothing here decides anything but how to reach the server and what its refusals
mean as exit codes.

The server's refusals come back as the exception of the same `code` (so `ondeck task
claim` against a server exits 3 for a conflict, as it does locally); no answer at all is
`Unavailable` (exit 5) naming the server and the reason; a refused token is `Unauthorized`
(exit 6) naming the token's name when the server knows it, or "no token".

Only the standard library: the client imports neither SQLAlchemy nor a database driver.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode, urlsplit

from ondeck.core import errors
from ondeck.core.errors import OndeckError, Unauthorized, Unavailable

TIMEOUT_S = 10.0
MAX_ANSWER = 64 * 1024 * 1024


def _by_code() -> dict[str, type[OndeckError]]:
    found: dict[str, type[OndeckError]] = {}
    pending: list[type[OndeckError]] = [OndeckError]
    while pending:
        kind = pending.pop()
        found.setdefault(kind.code, kind)
        pending += kind.__subclasses__()
    return found


class ApiClient:
    """The server at `url`, asked with `token` (None: no Authorization header)."""

    def __init__(self, url: str, token: str | None, *, timeout: float = TIMEOUT_S) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def json(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        store: str | None = None,
    ) -> Any:
        """The route's JSON answer; its refusal raised as the matching OndeckError. With
        `store`, a server serving another database refuses (409) and changes nothing."""
        answer = self.text(method, path, params=params, body=body, store=store)
        return json.loads(answer or "null")

    def text(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        store: str | None = None,
    ) -> str:
        """The route's answer as text (Markdown routes); refusals raised."""
        status, answer = self._send(method, path, params, body, store)
        if status >= 400:
            raise self._refusal(status, answer)
        return answer.decode("utf-8", "replace")

    def _send(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None,
        body: Any,
        store: str | None = None,
    ) -> tuple[int, bytes]:
        import http.client

        query = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        target = "/api/v1" + path + (f"?{urlencode(query, doseq=True)}" if query else "")
        headers = {"Accept": "application/json", "User-Agent": "ondeck-cli"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if store is not None:  # the database the caller's records belong to (api/deps.py)
            headers["X-Ondeck-Store-Expected"] = store
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode()
            headers["Content-Type"] = "application/json"
        parts = urlsplit(self.url)
        connection: http.client.HTTPConnection
        try:
            if parts.scheme == "https":
                import ssl

                connection = http.client.HTTPSConnection(
                    parts.hostname or "",
                    parts.port,
                    timeout=self.timeout,
                    context=ssl.create_default_context(),
                )
            else:
                connection = http.client.HTTPConnection(
                    parts.hostname or "", parts.port, timeout=self.timeout
                )
            try:
                connection.request(method, target, body=data, headers=headers)
                response = connection.getresponse()
                answer = response.read(MAX_ANSWER + 1)
            finally:
                connection.close()
        except (OSError, http.client.HTTPException) as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise Unavailable(f"server {self.url} unreachable: {reason}") from None
        if len(answer) > MAX_ANSWER:
            raise Unavailable(f"server {self.url} answered more than {MAX_ANSWER} bytes")
        return response.status, answer

    def _refusal(self, status: int, answer: bytes) -> OndeckError:
        code, message = "", ""
        try:
            error = json.loads(answer)["error"]
            code, message = str(error["code"]), str(error["message"])
        except (ValueError, KeyError, TypeError):
            message = answer[:200].decode("utf-8", "replace")
        if status in (401, 403):
            who = "no token" if not self.token else "the token given"
            denied = errors.Forbidden if status == 403 else Unauthorized
            return denied(f"server {self.url} refused {who}: {message or status}")
        if status == 429:
            return Unauthorized(f"server {self.url}: {message or 'too many wrong tokens'}")
        kind: type[OndeckError] | None = _by_code().get(code)
        if kind is None:
            kind = {
                404: errors.NotFound,
                409: errors.Conflict,
                413: errors.InvalidInput,  # a body over the server's limit: smaller input
                422: errors.InvalidInput,
                503: Unavailable,
            }.get(status, OndeckError)
        if kind is OndeckError or (status >= 500 and kind is not Unavailable):
            return OndeckError(f"server {self.url} answered {status}: {message}")
        return kind(message or f"server {self.url} answered {status}", code=code or None)


def _param(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value
