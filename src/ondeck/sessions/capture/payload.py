"""A hook's standard input made into a payload whatever it holds: the event is kept, and
what had to be mended to keep it is said in the payload (`ondeck_input`, carried into the
record and its events):

- a lone UTF-16 surrogate (`\\ud83d`, a message cut in the middle of an emoji) is not text
  any store or encoder takes: each becomes U+FFFD;
- a structure nested deeper than DEPTH_MAX is cut (replaced by null): Python's parser gives
  up past about a thousand levels, and nothing ondeck reads lies that deep;
- input over MAX_STDIN is cut there, and the JSON cut mid-way is closed again.

Only the first mending costs anything on a clean payload (one walk of a small object); the
other two run when the plain parse failed.
"""

from __future__ import annotations

import json

# The mending is shared with session import, which reads the same agent's JSON from its
# transcripts (sessions/transcript_read.py): one rule for text that came from an agent.
from ondeck.sessions.capture.events import DEPTH_MAX, mended

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from typing import Any, BinaryIO

# A last word may be long (its texts are cut to a window later); past this, nothing is read.
MAX_STDIN = 256 * 1024 * 1024
INPUT_NOTE = "ondeck_input"  # the payload's note of what was mended (events.INPUT)


def read_payload(stream: Any) -> dict[str, Any]:
    """The hook's JSON object from `stream` (text or binary), mended as the module says;
    {} when nothing usable is there. Never raises."""
    notes: list[str] = []
    try:
        raw = _read(stream, notes)
        data = _parsed(raw, notes)
        if not isinstance(data, dict):
            return {}
        counts = {"surrogates": 0, "deep": 0}
        cleaned = mended(data, counts)
    except (MemoryError, RecursionError, ValueError, OSError):
        return {}
    from ondeck.core.humanize import counted

    if counts["surrogates"]:
        notes.append(f"{counted(counts['surrogates'], 'lone UTF-16 surrogate')} replaced by U+FFFD")
    if counts["deep"]:
        notes.append(f"{counted(counts['deep'], 'structure')} nested over {DEPTH_MAX} levels cut")
    if notes:
        cleaned[INPUT_NOTE] = notes
    return dict(cleaned)


def _read(stream: Any, notes: list[str]) -> bytes:
    source: BinaryIO = getattr(stream, "buffer", stream)
    data = source.read(MAX_STDIN + 1)
    if isinstance(data, str):  # a text stream without a buffer (tests, StringIO)
        data = data.encode("utf-8", "surrogatepass")
    if len(data) > MAX_STDIN:
        data = data[:MAX_STDIN]
        notes.append(f"standard input over {MAX_STDIN // 2**20} MiB: cut there")
    return bytes(data)


def _parsed(raw: bytes, notes: list[str]) -> Any:
    text = raw.decode("utf-8", "replace")
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except RecursionError:
        text, cut = _cut_deep(text)
        if cut:
            from ondeck.core.humanize import counted

            notes.append(f"{counted(cut, 'structure')} nested over {DEPTH_MAX} levels cut")
    except ValueError:
        if not notes:  # not cut: it is not JSON, and there is nothing to mend
            raise
    try:
        return json.loads(text)
    except ValueError:
        return _closed(text)


_TOKEN = r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]'


def _cut_deep(text: str) -> tuple[str, int]:
    """`text` with every array or object deeper than DEPTH_MAX replaced by null."""
    import re

    out: list[str] = []
    at = depth = cut = 0
    skip_from: int | None = None
    for match in re.finditer(_TOKEN, text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth == DEPTH_MAX + 1 and skip_from is None:
                skip_from = match.start()
        elif token in "]}":
            if depth == DEPTH_MAX + 1 and skip_from is not None:
                out += [text[at:skip_from], "null"]
                at, skip_from = match.end(), None
                cut += 1
            depth = max(depth - 1, 0)
    if skip_from is not None:  # never closed: the input was cut inside it
        out += [text[at:skip_from], "null"]
        cut += 1
        return "".join(out), cut
    out.append(text[at:])
    return "".join(out), cut


def _closed(text: str) -> Any:
    """JSON cut mid-way (input over MAX_STDIN) closed again: an open string ended, the open
    arrays and objects closed; a half-written member dropped. {} when that fails."""
    import re

    stack: list[str] = []
    in_string = False
    for match in re.finditer(r'"[^"\\]*(?:\\.[^"\\]*)*("?)|[\[\]{}]', text):
        token = match.group()
        if token.startswith('"'):
            in_string = not match.group(1) or len(token) == 1
            continue
        in_string = False
        if token in "[{":
            stack.append("]" if token == "[" else "}")
        elif stack:
            stack.pop()
    body = text
    if in_string:
        body = re.sub(r"\\(u[0-9a-fA-F]{0,3})?$", "", body) + '"'
    closers = "".join(reversed(stack))
    stripped = body.rstrip().rstrip(",").rstrip()
    cut_back = stripped[: stripped.rfind(",")] if "," in stripped else stripped
    for candidate in (stripped, stripped + ":null", stripped.rstrip(":") + ":null", cut_back):
        try:
            return json.loads(candidate + closers)
        except ValueError:
            continue
    return {}
