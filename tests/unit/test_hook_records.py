"""Hook records: scrubbed before anything is stored (each kind of secret), capped, with a
fingerprint of what was received; and checked field by field when they come back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import NOW
from ondeck.sessions.capture.events import LAST_WORD_MAX, SUMMARY_MAX, fingerprint, new_record
from ondeck.sessions.capture.events_check import parse_record
from ondeck.sessions.capture.git_changes import changes_record
from ondeck.sessions.classify import Facts, Marker, Rules, classify
from support.hooks import payload

# One sample per kind of secret the issue names (the scrubber's own tests hold the near
# misses); each must be gone from the record, counted under its kind.
SECRETS = {
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\n"
    + "MIIEowIBAAKCAQEA7bq0ZqOxxlYmvS7iHr0l1Q\n" * 3
    + "-----END RSA PRIVATE KEY-----",
    "aws_key_id": "AKIA" + "QWERTYUIOPASDFGH",
    "aws_secret": "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github_token": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "gitlab_token": "glpat-" + "xY7zQ2vB9nM4kL1pR8sT",
    "slack_token": "xoxb-" + "123456789012-abcdefghijKLMNOP",
    "stripe_key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "jwt": "eyJhbGciOiJIUzI1NiJ9."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "password": "password=" + "hunter2-but-longer",
    "secret": "client_secret: " + "9f8e7d6c5b4a39281706",
    "api_key": "API_KEY=" + "a8f5f167f44f4964e6c998dee827110c",
    "token": "token = " + "Zm9vYmFyYmF6cXV4MTIzNDU2",
    "high_entropy": "Qm9sZW5vbWF0aC1rN3pYcTJ3Rjh2TjFtUDVoTDlzRDNn",
}


def _rec(kind: str, text_field: str | None, text: str, **rules: Any) -> dict[str, Any]:
    data = payload(kind, **({text_field: text} if text_field else {}))
    facts = Facts(cwd="/home/me/site")
    return new_record(
        kind,
        data,
        at=NOW,
        facts={"cwd": "/home/me/site", "git_root": None, "branch": None, "head": None},
        classification=classify(facts, Rules(**rules)),
    )


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_of_secret_is_redacted_before_it_is_stored(kind: str) -> None:
    secret = SECRETS[kind]
    for hook, field in (("stop", "last_assistant_message"), ("compact", "compact_summary")):
        record = _rec(hook, field, f"before {secret} after")
        text = record["text"]
        assert f"[redacted:{kind}]" in text["value"], text
        stored = json.dumps(record, ensure_ascii=False)
        for piece in (secret.split("=")[-1].split(": ")[-1].strip()[:24],):
            assert piece not in stored
        assert text["redactions"] >= 1 and text["kinds"].get(kind, 0) >= 1


def test_private_spans_are_removed_and_counted_never_kept() -> None:
    record = _rec("stop", "last_assistant_message", "a <private>my diary 일기</private> b")
    assert record["text"]["value"] == "a  b"
    assert record["text"]["kinds"] == {"private": 1}
    assert "diary" not in json.dumps(record, ensure_ascii=False)


def test_texts_are_scrubbed_whole_then_capped() -> None:
    long = "x" * (LAST_WORD_MAX - 10) + " " + SECRETS["github_token"] + " tail"
    text = _rec("stop", "last_assistant_message", long)["text"]
    assert len(text["value"]) == LAST_WORD_MAX and "ghp_" not in text["value"]
    assert text["chars"] > LAST_WORD_MAX and text["redactions"] == 1
    summary = _rec("compact", "compact_summary", "한" * (SUMMARY_MAX + 5))["text"]
    assert len(summary["value"]) == SUMMARY_MAX and summary["chars"] == SUMMARY_MAX + 5


def test_capture_off_records_carry_no_text_and_no_place() -> None:
    marker = Marker(path="/home/me/site/.ondeck.toml", capture=False)
    c = classify(Facts(cwd="/home/me/site", marker=marker), Rules())
    record = new_record(
        "stop",
        payload("stop"),
        at=NOW,
        facts={
            "cwd": "/home/me/site",
            "git_root": "/home/me/site",
            "branch": "m",
            "head": "a" * 40,
        },
        classification=c,
    )
    assert "text" not in record and record["facts"] == {} and record["capture"] is False
    assert "/home/me" not in json.dumps(record) and "upload job" not in json.dumps(record)
    assert parse_record(record)["text"] is None


def test_changes_are_scrubbed_and_a_private_span_across_lines_keeps_them_apart() -> None:
    end = _rec("end", None, "")
    token = SECRETS["github_token"]
    changes = changes_record(
        end,
        at=NOW,
        commits=[
            ("a" * 40, f"rotate {token}"),
            ("b" * 40, "<private> one"),
            ("c" * 40, "two </private>"),
        ],
        commits_total=3,
        files=["src/app.py", f"notes/{token}.txt"],
        files_total=2,
        files_private=1,
        note=None,
    )
    # Scrubbed line by line: an unclosed <private> hides the rest of its own line only.
    assert [s for _, s in changes["commits"]] == [
        "rotate [redacted:github_token]",
        "",
        "two </private>",
    ]
    assert changes["files"] == ["src/app.py", "notes/[redacted:github_token].txt"]
    assert token not in json.dumps(changes)
    assert parse_record(changes)["files_private"] == 1


def test_the_fingerprint_is_of_what_was_received_and_the_transcript_size(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("one\n")
    data = payload("stop", transcript_path=str(transcript))
    first = fingerprint("stop", data)
    assert fingerprint("stop", dict(reversed(list(data.items())))) == first
    assert fingerprint("compact", data) != first
    transcript.write_text("one\ntwo\n")
    assert fingerprint("stop", data) != first, "the next turn ending with the same words"


def test_a_record_round_trips_through_json() -> None:
    record = _rec("stop", "last_assistant_message", "끝 ✓")
    back = parse_record(json.loads(json.dumps(record)))
    assert back["text"]["value"] == "끝 ✓" and back["at"] == NOW and back["kind"] == "stop"


BAD = [
    ("not an object", [], "JSON object"),
    ("old version", {"v": 0}, "version"),
    ("kind", {"kind": "other"}, "kind"),
    ("agent", {"agent": "x"}, "agent"),
    ("no session", {"session": ""}, "session"),
    ("session with NUL", {"session": "a\x00b"}, "session"),
    ("naive time", {"at": "2026-06-15T09:00:00"}, "offset"),
    ("no time", {"at": 5}, "instant"),
    ("year 1", {"at": "0001-01-01T00:00:00+00:00"}, "range"),
    ("fingerprint", {"fingerprint": "../../x"}, "fingerprint"),
    ("capture", {"capture": "yes"}, "capture"),
    ("classification", {"classification": []}, "classification"),
    ("text too long", {"text": {"value": "x" * (LAST_WORD_MAX + 1)}}, "at most"),
    ("text NUL", {"text": {"value": "a\x00"}}, "NUL"),
    ("surrogate", {"text": {"value": "\ud800"}}, "not valid text"),
    ("negative count", {"text": {"value": "a", "redactions": -1}}, "count"),
    ("facts", {"facts": {"cwd": 7}}, "facts.cwd"),
    ("source", {"source": "x" * 100}, "short word"),
]


@pytest.mark.parametrize(("name", "change", "message"), BAD, ids=[b[0] for b in BAD])
def test_a_malformed_record_is_refused_with_the_reason(
    name: str, change: Any, message: str
) -> None:
    good = json.loads(json.dumps(_rec("stop", "last_assistant_message", "ok")))
    data = change if not isinstance(change, dict) else {**good, **change}
    with pytest.raises(ValueError, match=message):
        parse_record(data)


def test_a_capture_off_record_with_text_or_place_is_refused() -> None:
    marker = Marker(path="/p/.ondeck.toml", capture=False)
    c = classify(Facts(cwd="/p", marker=marker), Rules())
    record = new_record("stop", payload("stop"), at=NOW, facts={}, classification=c)
    with pytest.raises(ValueError, match="carries text"):
        parse_record({**record, "text": {"value": "leak"}})
    with pytest.raises(ValueError, match="keeps no place"):
        parse_record({**record, "facts": {"cwd": "/p"}})


def test_long_texts_are_cut_to_a_window_first_and_one_event_has_one_fingerprint() -> None:
    """The server path sends the trimmed payload and makes the record there; the local path
    trims the same way: the same event is the same fingerprint whichever path it took."""
    from ondeck.host.quick_settings import HookConfig
    from ondeck.sessions.capture.events import TEXT_WINDOW, make_record, trim

    text = "word " * (TEXT_WINDOW // 2) + SECRETS["github_token"]
    data = payload("stop", cwd="/nowhere/at/all", last_assistant_message=text)
    local = make_record("stop", data, HookConfig(), NOW)
    sent = json.loads(json.dumps(trim(data)))  # what travels to the server
    served = make_record("stop", sent, HookConfig(), NOW)
    assert local is not None and served is not None
    assert local["fingerprint"] == served["fingerprint"]
    assert local["text"] == served["text"]
    assert local["text"]["chars"] == len(text) and len(local["text"]["value"]) == LAST_WORD_MAX
    assert "ghp_" not in json.dumps(local)


def test_nul_and_lone_surrogates_are_cleaned_not_refused() -> None:
    record = _rec("stop", "last_assistant_message", "a\x00b \ud800 c")
    assert record["text"]["value"] == "ab ? c"
    assert parse_record(json.loads(json.dumps(record)))["text"]["value"] == "ab ? c"


def test_only_an_absolute_working_directory_is_a_place(tmp_path: Path) -> None:
    from ondeck.host.quick_settings import HookConfig
    from ondeck.sessions.capture.events import observe

    (tmp_path / ".ondeck.toml").write_text('project = "here"\n')
    for cwd in ("relative/dir", "", None, 5, "/a\x00b"):
        facts, c = observe(cwd, HookConfig())
        assert facts["cwd"] is None and c.project.value is None
    facts, c = observe(str(tmp_path), HookConfig())
    assert facts["cwd"] == str(tmp_path) and c.project.value == "here"


def test_the_classification_is_given_before_the_fingerprint_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A session start asks for its context with the classification while the fingerprint
    is made (it scrubs every string of the payload): the same classification the record
    carries, private where the session does not capture."""
    from ondeck.host.quick_settings import HookConfig
    from ondeck.sessions.capture import events as hook_events

    order: list[str] = []
    given: list[dict[str, Any]] = []
    fingerprint = hook_events.fingerprint

    def counted(*args: Any, **kwargs: Any) -> str:
        order.append("fingerprint")
        return fingerprint(*args, **kwargs)

    def classified(classification: dict[str, Any]) -> None:
        order.append("classified")
        given.append(classification)

    monkeypatch.setattr(hook_events, "fingerprint", counted)
    data = payload("start", cwd="/nowhere/at/all")
    record = hook_events.make_record("start", data, HookConfig(), NOW, classified=classified)
    assert record is not None
    assert order == ["classified", "fingerprint"]
    assert given == [record["classification"]]
