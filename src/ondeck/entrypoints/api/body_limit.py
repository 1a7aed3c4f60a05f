"""Request bodies over a limit are refused with 413 before anything reads them into memory.

A declared `Content-Length` over the limit is refused at once. A body without one (chunked
transfer encoding) is read here up to the limit and handed on whole, or refused as soon as
it passes it: a check of the header alone let a streamed body of any size through to the
JSON parser.
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ondeck.entrypoints.api.errors import error_response


class BodyLimit:
    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            # The server frames the body by this length, so it cannot grow past it.
            if declared.isdigit() and int(declared) > self.limit:  # bytes.isdigit: ASCII only
                await self._refuse(scope, receive, send)
            else:
                await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its body
            body += message.get("body", b"")
            if len(body) > self.limit:
                await self._refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(bytes(body), receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(413, "too_large", f"request body over {_size(self.limit)}")
        await response(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the disconnect, when it comes

    return replay


def describe(schema: dict[str, Any], limit: int) -> dict[str, Any]:
    """The API's description says what the limit answers: every operation that takes a body
    may be refused with 413 (the routes' own `responses` cannot: the limit is not theirs)."""
    refused = {
        "description": f"The request body is over {_size(limit)}; nothing was read or written.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}},
    }
    for item in schema.get("paths", {}).values():
        for operation in item.values():
            if isinstance(operation, dict) and "requestBody" in operation:
                operation.setdefault("responses", {}).setdefault("413", refused)
    return schema


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit} bytes"
