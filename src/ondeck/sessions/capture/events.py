"""Hook records: what an agent's hook event becomes before anything is stored (Claude Code's
payload is the shape; Codex's and Gemini's are made into it first, sessions/capture/agents.py).

A record is the hook's payload reduced to what ondeck keeps, already scrubbed and capped,
with the facts the hook saw (working directory, git) and the classification its rules gave.
The same record is applied to the database directly, sent to a running server, or appended
to the spool when neither can be reached, and applied later: so it carries its own time
(`at`, when the hook ran) and a fingerprint of what the hook received, which makes applying
it twice change nothing.

Privacy at the door: every text passes the scrubber (`core.scrubber`) before it is put in a
record, and a record of a session that does not capture carries no text, place, file or
commit at all: not even the spool sees them.

This module makes records on the hook's side; `git_changes` makes the end's second
record (what git says the session did); `events_check` checks a record on the store's
side when it comes back from the spool or over HTTP.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from ondeck.core.column_limits import COLUMN_LIMITS
from ondeck.sessions.capture.agents import CLAUDE_CODE, agent_of

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ondeck.host.git import Repo
    from ondeck.host.quick_settings import HookConfig
    from ondeck.sessions.classify import Classification

VERSION = 1
AGENT = CLAUDE_CODE  # the agent of a payload no other agent's hook marked (capture/agents.py)
KINDS = ("start", "stop", "compact", "end", "changes")
HOOK_KINDS = {  # `ondeck hook VERB` → record kind
    "session-start": "start",
    "stop": "stop",
    "post-compact": "compact",
    "session-end": "end",
}
LAST_WORD_MAX = 4_000
SUMMARY_MAX = 8_000
SUBJECT_MAX = 300
PATH_MAX = 1_000
PLACE_MAX = 4_000
EXTERNAL_ID_MAX = COLUMN_LIMITS["sessions.external_id"]
# Claude Code's short words, each as long as its column holds (PostgreSQL refuses longer).
WORD_LIMITS = {
    "source": COLUMN_LIMITS["sessions.start_source"],
    "reason": COLUMN_LIMITS["sessions.end_reason"],
    "trigger": COLUMN_LIMITS["session_compactions.trigger"],
}
WORD_MAX = max(WORD_LIMITS.values())
# What the hook mended in its input (sessions/capture/payload.INPUT_NOTE): kept in the record.
INPUT = "ondeck_input"
INPUT_NOTES_MAX, INPUT_NOTE_MAX = 5, 200
# The texts a hook keeps (capped at 4,000 and 8,000) are first cut to this window: the
# scrubber then reads a bounded text (a secret starting before the cap would have to be
# longer than the window to be cut), and the server path never sends megabytes.
TEXT_WINDOW = 65_536
TEXT_FIELDS = {"stop": "last_assistant_message", "compact": "compact_summary"}
TRIMMED = "ondeck_trimmed"  # the payload's note of the lengths before the window
SCRUBBED = "ondeck_scrubbed"  # its note of what the capturing machine's scrubber removed


def hook_output(markdown: str) -> dict[str, Any]:
    """The JSON Claude Code's SessionStart hook accepts on stdout: the context (here, not in
    context/render.py, whose imports would cost the hook on its server path)."""
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": markdown}}


def session_id_of(payload: dict[str, Any]) -> str | None:
    """The payload's session id, if it is one ondeck can key a record by."""
    value = payload.get("session_id")
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or len(value) > EXTERNAL_ID_MAX or not value.isprintable():
        return None
    return value


def fingerprint(kind: str, payload: dict[str, Any], size: int | None = None) -> str:
    """What ondeck keeps of what the hook received, as a short hash: the same event twice has
    the same one.

    The hash is of the payload as the scrubber leaves it (every string, keys too): a hash of
    the raw payload would be a function of what the scrubber removed, and a `<private>`
    span or a short secret can be found again from it by trying candidates. What is hashed
    here is only what may be stored anyway.

    The transcript's size is part of it: two turns that end with the same words ("Done.")
    are two events, while one event delivered twice (a hook installed in two settings
    files, a spool drained again after a crash) is one.
    """
    if size is None:
        size = transcript_size(payload)
    text = json.dumps(_kept(payload), sort_keys=True, ensure_ascii=False, default=str)
    return sha(f"{kind}\n{size}\n{text}".encode("utf-8", "surrogatepass"))


def _kept(value: Any) -> Any:
    if isinstance(value, str):
        return scrub_once(value).text
    if isinstance(value, dict):
        return {_kept(str(key)): _kept(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_kept(item) for item in value]
    return value


_SCRUBBED_BEFORE: dict[str, Any] = {}


def scrub_once(text: str) -> Any:
    """`scrub(text)`, once per text in a process: the fingerprint and the record's text read
    the same long message, which costs a hook a millisecond a scan."""
    from ondeck.core.scrubber import scrub

    found = _SCRUBBED_BEFORE.get(text)
    if found is None:
        if len(_SCRUBBED_BEFORE) > 64:  # a server process sees many: keep the last few
            _SCRUBBED_BEFORE.clear()
        found = _SCRUBBED_BEFORE[text] = scrub(text)
    return found


def trim(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with its long texts cut to TEXT_WINDOW (and their lengths noted), then
    scrubbed (and what was removed counted): what both paths make a record of, so an event
    has one fingerprint whichever path it took, and what the hook sends to its server
    (entrypoints/hooks/delivery.Server) is scrubbed on the machine that captured it. Scrubbing
    a scrubbed text removes nothing more, so the server's trim of a payload the hook trimmed
    gives the same payload."""
    long = {
        name: len(value)
        for name in TEXT_FIELDS.values()
        if isinstance(value := payload.get(name), str) and len(value) > TEXT_WINDOW
    }
    if long:
        cut = {name: payload[name][:TEXT_WINDOW] for name in long}
        payload = {**payload, **cut, TRIMMED: {**counts_of(payload.get(TRIMMED)), **long}}
    return _scrub_texts(payload)


def counts_of(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _scrub_texts(payload: dict[str, Any]) -> dict[str, Any]:
    texts = [n for n in TEXT_FIELDS.values() if isinstance(payload.get(n), str) and payload[n]]
    if not texts:  # session-start and session-end: no text, no scrubber to import
        return payload
    from ondeck.core.scrubber import scrub

    changed: dict[str, Any] = {}
    noted = counts_of(payload.get(SCRUBBED))
    for name in texts:
        clean = scrub(clean_text(payload[name]))
        if clean.text == payload[name] and not clean.redactions:
            continue
        changed[name] = clean.text
        before = counts_of(noted.get(name))
        kinds = counts_of(before.get("kinds"))
        for kind, count in clean.kinds.items():
            kinds[kind] = int(kinds.get(kind, 0) or 0) + count
        redactions = before.get("redactions", 0)
        total = (redactions if isinstance(redactions, int) else 0) + clean.redactions
        noted[name] = {"redactions": total, "kinds": kinds}
    if not changed:
        return payload
    return {**payload, **changed, SCRUBBED: noted}


def clean_text(value: str) -> str:
    """Text as the stores take it: no NUL (PostgreSQL refuses it), no lone surrogates (not
    UTF-8: a JSON payload may hold `\\ud800`)."""
    if "\x00" in value:
        value = value.replace("\x00", "")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value


# Past this depth a structure an agent wrote is cut (None): Python's parser gives up past
# about a thousand levels, and nothing ondeck reads lies that deep.
DEPTH_MAX = 64


def mended(value: Any, counts: dict[str, int], depth: int = 0) -> Any:
    """Parsed JSON an agent wrote (a hook's payload, a transcript's entry) as text any store
    or encoder takes: each lone UTF-16 surrogate (`\\ud83d`, a message cut in the middle
    of an emoji) becomes U+FFFD, counted in `counts["surrogates"]`; a structure deeper than
    DEPTH_MAX becomes None, counted in `counts["deep"]`."""
    if isinstance(value, str):
        return _mended_text(value, counts)
    if isinstance(value, dict | list) and depth >= DEPTH_MAX:
        counts["deep"] = counts.get("deep", 0) + 1
        return None
    if isinstance(value, dict):
        return {_mended_text(k, counts): mended(v, counts, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [mended(v, counts, depth + 1) for v in value]
    return value


def _mended_text(value: str, counts: dict[str, int]) -> str:
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        pass
    out = []
    for ch in value:
        if "\ud800" <= ch <= "\udfff":
            counts["surrogates"] = counts.get("surrogates", 0) + 1
            out.append("\ufffd")
        else:
            out.append(ch)
    return "".join(out)


def transcript_size(payload: dict[str, Any]) -> int:
    """The size of the session's transcript now (-1: none), part of an event's identity."""
    import os

    path = payload.get("transcript_path")
    if isinstance(path, str) and path:
        try:
            return os.stat(path).st_size
        except (OSError, ValueError):
            return -1
    return -1


def word(value: Any, limit: int = WORD_MAX) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()[:limit]
    return value if value and value.isprintable() else None


def scrubbed(text: str, limit: int, chars: int | None = None) -> dict[str, Any]:
    """A text as a record keeps it: scrubbed whole (so a secret cut in two by the cap is still
    found), then capped; with its length before the cap (`chars`, when the payload's window
    cut it already) and what the scrubber removed."""
    clean = scrub_once(clean_text(text))
    kept = clean.text
    return {
        "value": kept[:limit],
        "chars": chars if chars is not None else len(kept),
        "redactions": clean.redactions,
        "kinds": dict(clean.kinds),
    }


def observe(cwd: Any, config: HookConfig) -> tuple[dict[str, Any], Classification]:
    """The facts of a working directory (marker file, git) and their classification under
    the config's rules."""
    import os

    from ondeck.host.git import read_repo
    from ondeck.host.git_run import Deadline
    from ondeck.sessions.classify import Facts, Rules, classify, read_marker, strip_credentials

    # Only an absolute path is a place: a relative one would be read from wherever this
    # process runs (and say something of another directory).
    usable = isinstance(cwd, str) and cwd.startswith("/") and "\x00" not in cwd
    place = clean_text(cwd) if usable else None
    # Classified where it really is: a symlink does not move a directory to another side.
    real = os.path.realpath(place) if place else None
    repo = read_repo(place, Deadline(), remotes=bool(config.remotes))
    gone = None
    if place and real and not os.path.isdir(real):
        gone = f"the working directory {place} does not exist (removed?)"
    facts = Facts(
        cwd=place,
        real_cwd=real if real != place else None,
        marker=read_marker(real),
        git_root=repo.root,
        worktree_of=repo.worktree_of,
        git_note=gone or repo.note,
        branch=repo.branch,
        head=repo.head,
        remotes={name: strip_credentials(url) for name, url in repo.remotes.items()},
    )
    shown = {"cwd": place, "git_root": repo.root, "branch": repo.branch, "head": repo.head}
    shown.update(worktree_of=repo.worktree_of, git_note=gone or repo.note)
    return shown, classify(facts, Rules.of(config))


def brief_fields(
    payload: dict[str, Any], classification: dict[str, Any], *, sides_on: bool, unclassified: bool
) -> dict[str, Any]:
    """What the brief needs to know of a starting session (the fields of
    memory/brief.BriefRequest), read from the hook's payload as received: its side and
    project as classified, how it started, its id, its directory (absolute, no NUL)."""
    session = payload.get("session_id")
    source = payload.get("source")
    cwd = payload.get("cwd")
    return {
        "agent": agent_of(payload),
        "sides_on": sides_on,
        "side": (classification.get("side") or {}).get("value"),
        "project": (classification.get("project") or {}).get("value"),
        "unclassified": unclassified,
        "source": source if _is_source(source) else None,
        "session": session.strip()[:200] if isinstance(session, str) and session.strip() else None,
        "cwd": cwd if isinstance(cwd, str) and cwd.startswith("/") and "\x00" not in cwd else None,
    }


def _is_source(value: Any) -> bool:
    """A start's source as the context's question takes it (`[a-z_]{1,16}`): a payload's
    other text (`시작`, `Startup`) is not one."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= 16
        and value.isascii()
        and value.replace("_", "a").isalpha()
        and value.islower()
    )


def repo_of(facts: Any, cwd: Any) -> Repo | None:
    """The repository of `cwd` as a record's facts hold it (read moments ago by `observe`),
    for the brief's drift not to read it again; None when the facts are not of `cwd` (a
    session that does not capture keeps none)."""
    from ondeck.host.git import Repo

    if not isinstance(facts, dict) or not cwd or facts.get("cwd") != cwd:
        return None
    return Repo(root=facts.get("git_root"), branch=facts.get("branch"), head=facts.get("head"))


def make_record(
    kind: str,
    payload: dict[str, Any],
    config: HookConfig,
    at: datetime,
    *,
    size: int | None = None,
    last: dict[str, Any] | None = None,
    classified: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any] | None:
    """The record of a hook event as the hook saw it (None: no usable session id). `last`:
    at an end, the transcript's last assistant message (sessions/capture/transcript_tail.py).
    `classified` is given the record's classification as soon as it is known: a session
    start in client mode asks for its context with it, in the record's request."""
    if session_id_of(payload) is None:
        return None
    payload = trim(payload)
    facts, classification = observe(payload.get("cwd"), config)
    from ondeck.sessions.capture.transcript_tail import owned_transcript

    transcript = owned_transcript(payload.get("transcript_path"))
    if transcript is not None:
        facts["transcript"] = transcript
    if classified is not None:
        classified(_classification_json(classification))
    record = new_record(kind, payload, at=at, facts=facts, classification=classification, size=size)
    if kind == "end" and record["capture"] and last is not None:
        add_last_message(record, last)
    return record


def add_last_message(end: dict[str, Any], last: Any) -> None:
    """The end carries the transcript's last answer (scrubbed, capped) and its time: what a
    Stop that Claude Code cancelled should have brought. Malformed input adds nothing."""
    if not isinstance(last, dict) or not isinstance(last.get("text"), str):
        return
    text = last["text"][:TEXT_WINDOW]
    if not text.strip():
        return
    try:
        said_at = instant(last.get("at")) if last.get("at") is not None else None
    except ValueError:
        said_at = None
    end_at = datetime.fromisoformat(end["at"])
    # The answer came before the end that read it; a timestamp after it is not to be trusted.
    if said_at is None or said_at > end_at:
        said_at = end_at
    end["text"] = scrubbed(
        text, LAST_WORD_MAX, len(last["text"]) if len(last["text"]) > TEXT_WINDOW else None
    )
    end["text_at"] = said_at.isoformat()


def new_record(
    kind: str,
    payload: dict[str, Any],
    *,
    at: datetime,
    facts: dict[str, Any],
    classification: Classification,
    size: int | None = None,
) -> dict[str, Any]:
    """The record of a hook event (`kind` in start, stop, compact, end)."""
    session = session_id_of(payload)
    if session is None:
        raise ValueError("no usable session_id in the hook's input")
    capture = bool(classification.capture.value)
    record: dict[str, Any] = {
        "v": VERSION,
        "kind": kind,
        "agent": agent_of(payload),
        "session": session,
        "at": at.astimezone(UTC).isoformat(),
        "fingerprint": fingerprint(kind, payload, size),
        "capture": capture,
        "classification": _classification_json(classification),
        "facts": _facts(facts) if capture else {},
    }
    if kind == "start":
        record["source"] = word(payload.get("source"), WORD_LIMITS["source"])
    elif kind == "end":
        record["reason"] = word(payload.get("reason"), WORD_LIMITS["reason"])
    elif kind == "compact":
        record["trigger"] = word(payload.get("trigger"), WORD_LIMITS["trigger"])
    mended = input_notes(payload.get(INPUT))
    if mended:
        record["input"] = mended
    text_field = TEXT_FIELDS.get(kind)
    if text_field is not None and capture:
        value = payload.get(text_field)
        if isinstance(value, str):
            limit = LAST_WORD_MAX if kind == "stop" else SUMMARY_MAX
            trimmed = payload.get(TRIMMED)
            chars = trimmed.get(text_field) if isinstance(trimmed, dict) else None
            text = scrubbed(value, limit, chars if isinstance(chars, int) else None)
            record["text"] = _with_earlier(text, counts_of(payload.get(SCRUBBED)).get(text_field))
    return record


def _classification_json(classification: Classification) -> dict[str, Any]:
    """As a record carries it: a session that does not capture keeps no place."""
    return classification.to_json(private=not classification.capture.value)


def _with_earlier(text: dict[str, Any], earlier: Any) -> dict[str, Any]:
    """A record's text counting what was removed before it was made (at capture: trim)."""
    if not isinstance(earlier, dict):
        return text
    count = earlier.get("redactions")
    kinds = dict(text["kinds"])
    for kind, n in (
        (earlier.get("kinds") or {}).items() if isinstance(earlier.get("kinds"), dict) else ()
    ):
        if isinstance(kind, str) and isinstance(n, int) and n > 0:
            kinds[kind] = kinds.get(kind, 0) + n
    more = count if isinstance(count, int) and count > 0 else 0
    return {**text, "redactions": text["redactions"] + more, "kinds": kinds}


def digest(text: str) -> str:
    """A short hash of `text` (32 hex digits), as record fingerprints are made."""
    return sha(text)


def sha(data: str | bytes) -> str:
    """SHA-256, 32 hex digits. Python's own (3.11): `hashlib` loads OpenSSL first, a share
    of a hook's whole process (as host/channel's key of a known store id)."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        from hashlib import sha256

    return str(sha256(data.encode() if isinstance(data, str) else data).hexdigest()[:32])


# Facts a record may carry besides the place: the main checkout of a worktree, why git
# gave less than it should have (it did not answer), and the session's transcript (checked
# on the hook's machine: transcript.owned_transcript). Older records have none of them.
MORE_FACTS = (("worktree_of", PLACE_MAX), ("git_note", 300), ("transcript", PATH_MAX))


def _facts(facts: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, limit in (("cwd", PLACE_MAX), ("git_root", PLACE_MAX), ("branch", 255), ("head", 64)):
        value = facts.get(key)
        out[key] = clean_text(value)[:limit] if isinstance(value, str) and value else None
    for key, limit in MORE_FACTS:
        value = facts.get(key)
        if isinstance(value, str) and value:
            out[key] = clean_text(value)[:limit]
    return out


def input_notes(value: Any) -> list[str] | None:
    """What the hook mended in its input, as a record keeps it (None: nothing)."""
    if not isinstance(value, list) or not value:
        return None
    notes = [clean_text(v)[:INPUT_NOTE_MAX] for v in value[:INPUT_NOTES_MAX] if isinstance(v, str)]
    return notes or None


def instant(value: Any) -> datetime:
    if not isinstance(value, str) or len(value) > 40:
        raise ValueError("record at must be an ISO-8601 instant with its offset")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError("record at must be an ISO-8601 instant with its offset") from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValueError("record at must carry its offset (an instant, not a wall-clock time)")
    if not 2000 <= parsed.year <= 9000:
        raise ValueError("record at is out of range")
    return parsed.astimezone(UTC)
