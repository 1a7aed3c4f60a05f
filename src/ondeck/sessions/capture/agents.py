"""The agents whose hooks ondeck takes, and each one's payload made into the one a record is
made of (Claude Code's shape: the other agents' hooks were modelled on it).

Read from each agent's own source and checked against the real programs (tests/cli):

- Claude Code: its payload is the shape; nothing is changed (a record's fingerprint, which
  makes an event delivered twice one, stays what it was).
- Codex CLI (`~/.codex/hooks.json`): SessionStart (`source` startup, resume, clear,
  compact), Stop (`last_assistant_message`, may be null), PostCompact (`trigger` only: no
  summary), SessionEnd (`reason`; Codex cuts its hook at 3 s). Same field names.
- Gemini CLI (`~/.gemini/settings.json`): SessionStart (`source`), AfterAgent (the answer as
  `prompt_response`, the prompt as `prompt`: the brief is in it, and it is never kept),
  SessionEnd (`reason`; Gemini does not wait for it: best effort). Its PreCompress carries no
  summary and fires when nothing is compressed, so ondeck does not listen to it.

Only the fields a record reads are kept of another agent's payload (each is checked and cut
where the record is made, capture/events.py), so nothing else it sends is hashed or stored.
What an agent did not send is said in the record (its input notes), never guessed: a Codex
compaction without a summary, a turn whose answer came empty. A session whose end never
came is presumed lost by the grace rule, as a Claude Code session is.

Standard library only: this runs in every hook.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from typing import Any

CLAUDE_CODE = "claude-code"
CODEX = "codex"
GEMINI = "gemini-cli"
AGENTS = (CLAUDE_CODE, CODEX, GEMINI)
AGENT_PATTERN = f"^({'|'.join(AGENTS)})$"  # the API's and the CLI's filters
# How a payload says which agent it came from (set here, from the hook's `--agent`).
AGENT_KEY = "ondeck_agent"
INPUT = "ondeck_input"  # events.INPUT: the record's notes of its input

# The fields a record is made of (capture/events.py, transcript.py, brief_fields).
_KEPT = (
    *("session_id", "cwd", "transcript_path", "hook_event_name"),
    *("source", "reason", "trigger", "last_assistant_message", "compact_summary"),
)
# Another agent's name for a field ondeck reads.
_RENAMED = {GEMINI: {"prompt_response": "last_assistant_message"}}
# What each verb's text is, for saying when an agent sent none.
_TEXT = {"stop": "last_assistant_message", "post-compact": "compact_summary"}
_NO_TEXT = {
    "stop": "{agent} sent no answer for this turn",
    "post-compact": "{agent} sends no summary of a compaction",
}


def agent_of(payload: dict[str, Any]) -> str:
    """The agent a payload came from: as normalise marked it, else Claude Code."""
    value = payload.get(AGENT_KEY)
    return value if isinstance(value, str) and value in AGENTS else CLAUDE_CODE


def normalise(agent: str, verb: str, payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` of `agent`'s hook for `verb` as a record reads it, marked with its agent."""
    if agent == CLAUDE_CODE or agent not in AGENTS:
        if AGENT_KEY in payload:  # only the hook's `--agent` says whose it is, not its input
            return {k: v for k, v in payload.items() if k != AGENT_KEY}
        return payload
    renamed = _RENAMED.get(agent, {})
    out: dict[str, Any] = {}
    for name, value in payload.items():
        name = renamed.get(name, name)
        if name in _KEPT and name not in out:
            out[name] = value
    notes = [n for n in payload.get(INPUT) or () if isinstance(n, str)]
    field = _TEXT.get(verb)
    text = out.get(field) if field else None
    if field is not None and not (isinstance(text, str) and text.strip()):
        out.pop(field, None)
        notes.append(_NO_TEXT[verb].format(agent=agent))
    if notes:
        out[INPUT] = notes
    out[AGENT_KEY] = agent
    return out
