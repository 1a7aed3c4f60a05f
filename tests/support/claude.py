"""The real Claude Code, from npm, talking to a stand-in for the Messages API on loopback.

`install(folder)` puts a pinned `@anthropic-ai/claude-code` into a folder of the test run
(never globally); `Messages` answers `POST /v1/messages` with scripted text in the streaming
format Claude Code reads (message_start, content_block_start, content_block_delta,
content_block_stop, message_delta, message_stop) and records every request, so a whole turn
runs with no login and no network.
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from support import npm

VERSION = "2.1.332"
PACKAGE = f"@anthropic-ai/claude-code@{VERSION}"


def run_env(home: Path, root: Path, db_url: str, port: int, **more: str) -> dict[str, str]:
    """The environment a test runs the real Claude Code (and ondeck beside it) in: `home`,
    no login, no network of its own, ondeck on `db_url` with its data and config in `root`."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "TERM": "xterm-256color",
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_DATA_DIR": str(root / "data"),
        "ONDECK_CONFIG": str(root / "no-config.toml"),
        "ONDECK_TZ": "UTC",
        "ONDECK_PORT": str(port),
        **more,
    }


# The last Claude Code before mods (2.1.287): `ondeck setup claude-code` gives it settings hooks.
BEFORE_MODS = "2.1.286"


def install(folder: Path, version: str = VERSION) -> Path | str:
    """The `claude` executable of `version` installed under `folder` (reused when it is there
    already), or why it could not be installed."""
    return npm.install(folder, "@anthropic-ai/claude-code", version, "claude", timeout=600)


class Messages:
    """A Messages API on 127.0.0.1 answering every request with `answer`; with `tool_call`
    (a tool's name as the model sees it, or its end, and its input), a request that offers
    that tool and holds no result of it yet is answered with a call of it instead."""

    def __init__(self, answer: str, tool_call: tuple[str, dict[str, Any]] | None = None) -> None:
        self.answer = answer
        self.tool_call = tool_call
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner.requests.append({"method": "GET", "path": self.path})
                self._json(404, {"type": "error", "error": {"type": "not_found_error"}})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                owner.requests.append({"method": "POST", "path": self.path, "body": body})
                if not self.path.split("?")[0].endswith("/v1/messages"):
                    if "count_tokens" in self.path:
                        self._json(200, {"input_tokens": 10})
                    else:
                        self._json(404, {"type": "error", "error": {"type": "not_found_error"}})
                    return
                model = str(body.get("model") or "claude-sonnet-4-5")
                call = owner.call_for(body)
                if call is not None:
                    self._send_events(owner.tool_events(model, *call))
                elif body.get("stream"):
                    self._stream(model)
                else:
                    self._json(200, owner.message(model))

            def _json(self, status: int, data: dict[str, Any]) -> None:
                out = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def _stream(self, model: str) -> None:
                self._send_events(owner.events(model))

            def _send_events(self, events: list[tuple[str, dict[str, Any]]]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for name, data in events:
                    line = f"event: {name}\ndata: {json.dumps(data)}\n\n"
                    self.wfile.write(line.encode())
                    self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def message(self, model: str) -> dict[str, Any]:
        return {
            "id": "msg_ondeck_test",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": self.answer}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 8},
        }

    def call_for(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """The tool to call in answer to this request, or None."""
        if self.tool_call is None or not body.get("stream"):
            return None
        wanted, given = self.tool_call
        names = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
        name = next((n for n in names if isinstance(n, str) and n.endswith(wanted)), None)
        if name is None or "tool_result" in json.dumps(body.get("messages")):
            return None
        return name, given

    def tool_events(
        self, model: str, name: str, given: dict[str, Any]
    ) -> list[tuple[str, dict[str, Any]]]:
        start = {**self.message(model), "content": [], "stop_reason": None}
        block = {"type": "tool_use", "id": "toolu_ondeck_1", "name": name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(given)}
        return [
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                               "usage": {"output_tokens": 8}}),
            ("message_stop", {"type": "message_stop"}),
        ]  # fmt: skip

    def events(self, model: str) -> list[tuple[str, dict[str, Any]]]:
        start = {**self.message(model), "content": [], "stop_reason": None}
        start["usage"] = {"input_tokens": 12, "output_tokens": 1}
        half = len(self.answer) // 2
        return [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            ("ping", {"type": "ping"}),
            *[
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": part},
                    },
                )
                for part in (self.answer[:half], self.answer[half:])
            ],
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 8},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]

    def __enter__(self) -> Messages:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
