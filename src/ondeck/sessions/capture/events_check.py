"""Checking a hook record that comes back to the store (from the spool, over HTTP from a hook
or a client): each field as the store applies it, or a ValueError naming what is wrong; and
the record scrubbed again, since the store trusts no hook to have done it.

A record is made on the hook's side (`capture/events`); this is the server's side of the same
shape, so the limits are `capture/events`' own.
"""

from __future__ import annotations

from ondeck.sessions.capture.agents import AGENTS
from ondeck.sessions.capture.events import (
    INPUT_NOTE_MAX,
    INPUT_NOTES_MAX,
    KINDS,
    LAST_WORD_MAX,
    MORE_FACTS,
    PATH_MAX,
    PLACE_MAX,
    SUBJECT_MAX,
    SUMMARY_MAX,
    VERSION,
    WORD_LIMITS,
    input_notes,
    instant,
    session_id_of,
    word,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from typing import Any


def checked_who(data: dict[str, Any]) -> tuple[str, str]:
    """A record's agent and session (every kind of record: a hook's, an import's)."""
    agent = data.get("agent")
    if agent not in AGENTS:
        raise ValueError(f"record agent {str(agent)[:40]!r} is not one of {', '.join(AGENTS)}")
    session = session_id_of({"session_id": data.get("session")})
    if session is None:
        raise ValueError("record session must be a session id (1 to 200 printable characters)")
    return str(agent), session


def checked_classified(
    data: dict[str, Any], *, same_capture: bool = True
) -> tuple[str, bool, dict[str, Any]]:
    """A record's fingerprint, capture and classification (every kind of record); with
    `same_capture`, the classification's capture must be the record's."""
    from ondeck.sessions.classify import from_json as classification_from_json

    fp = data.get("fingerprint")
    if not isinstance(fp, str) or not (8 <= len(fp) <= 64) or not fp.isalnum():
        raise ValueError("record fingerprint must be 8 to 64 letters and digits")
    capture = data.get("capture")
    if not isinstance(capture, bool):
        raise ValueError("record capture must be true or false")
    classification = classification_from_json(data.get("classification"))
    if same_capture and classification["capture"]["value"] is not capture:
        raise ValueError("record capture and its classification's capture differ")
    return fp, capture, classification


def parse_record(data: Any) -> dict[str, Any]:
    """A record read from the spool or received over HTTP, checked field by field: the
    record as the store applies it, or ValueError naming what is wrong."""
    if not isinstance(data, dict):
        raise ValueError("a record must be a JSON object")
    if data.get("v") != VERSION:
        raise ValueError(f"record version {str(data.get('v'))[:10]!r} is not {VERSION}")
    kind = data.get("kind")
    if kind not in KINDS:
        raise ValueError(f"record kind {str(kind)[:20]!r} is not one of {', '.join(KINDS)}")
    agent, session = checked_who(data)
    at = instant(data.get("at"))
    fp, capture, classification = checked_classified(data, same_capture=kind != "changes")
    record: dict[str, Any] = {
        "v": VERSION,
        "kind": kind,
        "agent": agent,
        "session": session,
        "at": at,
        "fingerprint": fp,
        "capture": capture,
        "classification": classification,
        "facts": checked_facts(data.get("facts"), capture),
    }
    store = data.get("store")  # the store it was captured for (client mode; None: the first met)
    if store is not None and not (
        isinstance(store, str) and 16 <= len(store) <= 32 and store.isascii() and store.isalnum()
    ):
        raise ValueError("record store must be a store id (16 to 32 letters and digits)")
    if store is not None:
        record["store"] = store
    for key, limit in WORD_LIMITS.items():
        value = data.get(key)
        if value is not None and (word(value, limit) != value):
            raise ValueError(f"record {key} must be a short word (at most {limit} characters)")
        record[key] = value
    if data.get("input") is not None:
        notes = input_notes(data.get("input"))
        if not notes or notes != data.get("input"):
            raise ValueError(
                f"record input must be at most {INPUT_NOTES_MAX} notes of at most "
                f"{INPUT_NOTE_MAX} characters"
            )
        record["input"] = notes
    text = data.get("text")
    if text is not None:
        if kind not in ("stop", "compact", "end") or not capture:
            raise ValueError(
                "only a stop, a compaction or an end of a captured session carries text"
            )
        record["text"] = checked_text(text, SUMMARY_MAX if kind == "compact" else LAST_WORD_MAX)
    else:
        record["text"] = None
    # An end's text is the transcript's last answer: when it was said (else the end's time).
    said = data.get("text_at")
    record["text_at"] = instant(said) if kind == "end" and said is not None else None
    if kind == "changes":
        if not capture:
            raise ValueError("a session that does not capture has no changes record")
        record.update(_checked_changes(data))
    return record


def rescrubbed(record: dict[str, Any]) -> dict[str, Any]:
    """A checked record (parse_record) scrubbed again where it is stored: the server trusts
    no hook to have scrubbed what it sends (an old or altered client may not have). What
    this removes is counted with what the hook said it removed."""
    from ondeck.core.scrubber import scrub

    out = dict(record)
    text = record.get("text")
    if text is not None:
        clean = scrub(text["value"])
        if clean.redactions or clean.text != text["value"]:
            kinds = dict(text["kinds"])
            for kind, n in clean.kinds.items():
                kinds[kind] = kinds.get(kind, 0) + n
            out["text"] = {
                **text,
                "value": clean.text,
                "redactions": text["redactions"] + clean.redactions,
                "kinds": kinds,
            }
    if record.get("kind") == "changes":
        extra = 0
        kinds = dict(record.get("kinds") or {})

        def again(line: str) -> str:
            nonlocal extra
            clean = scrub(line)
            extra += clean.redactions
            for kind, n in clean.kinds.items():
                kinds[kind] = kinds.get(kind, 0) + n
            return clean.text.replace("\n", " ")

        if record.get("commits") is not None:
            out["commits"] = [[sha, again(subject)] for sha, subject in record["commits"]]
        if record.get("files") is not None:
            out["files"] = [again(path) for path in record["files"]]
        out["redactions"] = int(record.get("redactions") or 0) + extra
        out["kinds"] = kinds
    return out


def _line(value: Any, name: str, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        raise ValueError(f"record {name} must be text of at most {limit} characters")
    _encodable(value, name)
    return value or None


def _encodable(value: str, name: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"record {name} is not valid text") from None


def checked_facts(value: Any, capture: bool) -> dict[str, Any]:
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ValueError("record facts must be an object")
    out = {
        "cwd": _line(value.get("cwd"), "facts.cwd", PLACE_MAX),
        "git_root": _line(value.get("git_root"), "facts.git_root", PLACE_MAX),
        "branch": _line(value.get("branch"), "facts.branch", 255),
        "head": _line(value.get("head"), "facts.head", 64),
    }
    for key, limit in MORE_FACTS:
        more = _line(value.get(key), f"facts.{key}", limit)
        if more is not None:
            out[key] = more
    if not capture and any(out.values()):
        raise ValueError("a session that does not capture keeps no place (facts)")
    return out


def count_of(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**9:
        raise ValueError(f"record {name} must be a count")
    return value


def kinds_of(value: Any) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > 50:
        raise ValueError("record redaction kinds must be an object of counts")
    out = {}
    for key, count in value.items():
        if not isinstance(key, str) or not key.isprintable() or len(key) > 40:
            raise ValueError("record redaction kinds must be named by short words")
        out[key] = count_of(count, "redaction count")
    return out


def checked_text(value: Any, limit: int) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("record text must be an object")
    text = value.get("value")
    if not isinstance(text, str) or len(text) > limit or "\x00" in text:
        raise ValueError(f"record text must be at most {limit} characters, without NUL")
    _encodable(text, "text")
    return {
        "value": text,
        "chars": count_of(value.get("chars", len(text)), "text chars"),
        "redactions": count_of(value.get("redactions", 0), "text redactions"),
        "kinds": kinds_of(value.get("kinds")),
    }


def _checked_changes(data: dict[str, Any]) -> dict[str, Any]:
    commits = data.get("commits")
    if commits is not None:
        if not isinstance(commits, list) or len(commits) > 50:
            raise ValueError("record commits must be a list of at most 50")
        for item in commits:
            if (
                not isinstance(item, list)
                or len(item) != 2
                or _line(item[0], "commit sha", 64) is None
                or not isinstance(item[1], str)
            ):
                raise ValueError("record commits must be [sha, subject] pairs")
            _line(item[1], "commit subject", SUBJECT_MAX)
    files = data.get("files")
    if files is not None:
        if not isinstance(files, list) or len(files) > 200:
            raise ValueError("record files must be a list of at most 200")
        for item in files:
            if _line(item, "file path", PATH_MAX) is None:
                raise ValueError("record files must be paths")
    return {
        "commits": commits,
        "commits_total": count_of(data.get("commits_total", 0), "commits_total"),
        "files": files,
        "files_total": count_of(data.get("files_total", 0), "files_total"),
        "files_private": count_of(data.get("files_private", 0), "files_private"),
        "note": _line(data.get("note"), "note", 1000),
        "redactions": count_of(data.get("redactions", 0), "redactions"),
        "kinds": kinds_of(data.get("kinds")),
    }
