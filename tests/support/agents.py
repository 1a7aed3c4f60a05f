"""The real Codex CLI and Gemini CLI, from npm, talking to a stand-in for their model's API on
loopback (as support/claude.py does for Claude Code).

`install(folder, AGENT)` puts a pinned package into a folder of the test run (never globally).
`ModelApi` answers, with scripted text and recording every request:
- OpenAI's Responses API (`POST …/responses`), in the server-sent events Codex reads
  (response.created, response.output_item.done with the assistant's message,
  response.completed): Codex is pointed at it as a custom model provider (`base_url`,
  `wire_api = "responses"`) in its config.toml;
- the Gemini API (`POST /v1beta/models/M:streamGenerateContent?alt=sse`, and
  `:generateContent`): Gemini CLI is pointed at it by GOOGLE_GEMINI_BASE_URL with an API
  key's auth type chosen in its settings and a dummy GEMINI_API_KEY.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from support import npm


@dataclass(frozen=True)
class Agent:
    package: str
    version: str
    binary: str


CODEX = Agent("@openai/codex", "0.171.0", "codex")
GEMINI = Agent("@google/gemini-cli", "0.61.0", "gemini")


def install(folder: Path, agent: Agent) -> Path | str:
    """The executable of `agent` installed under `folder` (reused when it is there already),
    or why it could not be installed."""
    return npm.install(folder, agent.package, agent.version, agent.binary)


class ModelApi:
    """A Responses API and a Gemini API on 127.0.0.1, answering every turn with `answer`."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner.requests.append({"method": "GET", "path": self.path})
                self._send(200, "application/json", b'{"object": "list", "data": []}')

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                owner.requests.append(
                    {"method": "POST", "path": self.path, "body": raw.decode("utf-8", "replace")}
                )
                path = self.path.split("?")[0]
                if path.endswith("/responses"):
                    self._send(200, "text/event-stream", owner.responses_events())
                elif path.endswith(":streamGenerateContent"):
                    chunk = json.dumps(owner.gemini_answer())
                    self._send(200, "text/event-stream", f"data: {chunk}\n\n".encode())
                elif path.endswith(":generateContent"):
                    self._send(200, "application/json", json.dumps(owner.gemini_answer()).encode())
                elif path.endswith(":countTokens"):
                    self._send(200, "application/json", b'{"totalTokens": 1}')
                else:
                    self._send(404, "application/json", b"{}")

            def _send(self, status: int, kind: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def responses_events(self) -> bytes:
        message = {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "content": [{"type": "output_text", "text": self.answer}],
        }
        usage = {
            "input_tokens": 1,
            "input_tokens_details": None,
            "output_tokens": 1,
            "output_tokens_details": None,
            "total_tokens": 2,
        }
        events = [
            {"type": "response.created", "response": {"id": "resp_1"}},
            {"type": "response.output_item.done", "item": message},
            {"type": "response.completed", "response": {"id": "resp_1", "usage": usage}},
        ]
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()

    def gemini_answer(self) -> dict[str, Any]:
        content = {"role": "model", "parts": [{"text": self.answer}]}
        return {
            "candidates": [{"content": content, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {
                "promptTokenCount": 1,
                "candidatesTokenCount": 1,
                "totalTokenCount": 2,
            },
        }

    def bodies(self) -> list[str]:
        return [r["body"] for r in self.requests if r["method"] == "POST"]

    def __enter__(self) -> ModelApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
