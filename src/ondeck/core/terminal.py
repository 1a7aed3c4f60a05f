"""Stored text as a terminal is given it: every control character shown, none obeyed.

A task's title, a note, a session's last word or a commit subject came from outside (an
agent, a repository, a paste), and may hold escape sequences: a window title, an OSC 52
write to the clipboard, a cursor move or a carriage return that hides the line before it,
a bidirectional override that shows text in another order than it is stored. The CLI writes
such text only through `visible` (human lines) or `json_visible` (JSON), so a terminal
shows `\\x1b]52;c;…` as those characters instead of running it.

Line breaks and tabs are kept: they are how text is laid out, and they command nothing.
"""

from __future__ import annotations

# Unicode's bidirectional embeddings, overrides and isolates (and the Arabic letter mark):
# they reorder what follows on the line ("Trojan Source"), so they are shown, not applied.
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
# C0 controls but line break and tab, DEL, and the C1 controls (U+009B is a one-character
# CSI to a terminal that reads UTF-8 as Latin-1 controls, as xterm may).
_CONTROLS = (*(c for c in range(0x20) if c not in (0x09, 0x0A)), 0x7F, *range(0x80, 0xA0))


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_SHOWN = {code: _escape(code) for code in (*_CONTROLS, *_BIDI)}
# JSON already escapes C0 controls; what it leaves (DEL, C1, bidi) gets JSON's own escape,
# so the document still parses to the same strings.
_JSON = {code: f"\\u{code:04x}" for code in (0x7F, *range(0x80, 0xA0), *_BIDI)}


def visible(text: str) -> str:
    """`text` with every control character written out (`\\x1b`, `\\u202e`); a Windows line
    end is a line end."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text.translate(_SHOWN)


def json_visible(document: str) -> str:
    """A JSON document (or JSON lines) whose strings hold no control character raw: the same
    values, escaped as JSON escapes them."""
    return document.translate(_JSON)
