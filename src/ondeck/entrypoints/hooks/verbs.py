"""`ondeck hook VERB`: the payload read from stdin, the event handed to the capture wing
(sessions/capture/verbs.py, where the order of server, database and spool is told), the
answer printed in the shape the agent reads. Nothing here decides anything about a record.
"""

from __future__ import annotations

import json

from ondeck.entrypoints.hooks.mod_answer import for_the_mod
from ondeck.sessions.capture import verbs as capture
from ondeck.sessions.capture.agents import CLAUDE_CODE, normalise

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from typing import Any, TextIO

# What a hook leaves for after its answer (client mode: a session end's git changes); the
# entry point runs it in a detached child once the answer is out (entrypoints/cli._hook).
AFTER = capture.AFTER


def read_payload(stream: TextIO, verb: str = "", agent: str = CLAUDE_CODE) -> dict[str, Any]:
    """The hook's JSON object, mended where it is not clean text (sessions/capture/payload),
    and made into Claude Code's shape when another agent sent it (sessions/capture/agents)."""
    from ondeck.sessions.capture.payload import read_payload as read

    return normalise(agent, verb, read(stream))


def session_start(
    stdin: TextIO, stdout: TextIO, db_url: str | None = None, agent: str = CLAUDE_CODE
) -> int:
    from ondeck.sessions.capture.events import hook_output

    payload = read_payload(stdin, "session-start", agent)
    markdown, classification = capture.start(payload, db_url, _hook_context)
    out = for_the_mod(hook_output(markdown), db_url, classification)
    stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    return 0


def run_hook(
    verb: str,
    stdin: TextIO,
    stdout: TextIO,
    db_url: str | None = None,
    agent: str = CLAUDE_CODE,
) -> int:
    """`ondeck hook stop|post-compact|session-end`: record the event; never fail the session."""
    payload = read_payload(stdin, verb, agent)
    message = capture.record(verb, payload, db_url)
    if agent == CLAUDE_CODE:  # the mod asks again for the brief after a compaction
        message = for_the_mod(message, db_url, brief="compact" if verb == "post-compact" else None)
    if message and agent != CLAUDE_CODE:
        # Codex refuses an answer with fields it does not know; Gemini reads JSON only.
        message = {k: v for k, v in message.items() if k == "systemMessage"}
    if message:
        stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
    return 0


def _hook_context(*args: Any) -> str:
    """The gateway's context for a start no server answered, imported only then (the gateway
    is off the server path's wall)."""
    from ondeck.entrypoints.gateway import hook_context

    return hook_context(*args)
