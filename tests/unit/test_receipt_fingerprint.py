"""A hook receipt's fingerprint is a function of what was kept, never of what the scrubber
removed: "door code 4711" inside `<private>` was found again from the
unsalted hash of the raw payload by trying the 10,000 codes."""

from __future__ import annotations

import hashlib
import json

from ondeck.core.scrubber import scrub
from ondeck.sessions.capture.events import fingerprint

GITHUB = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5"
OTHER = "gh" + "p_" + "Zz9yX8wV7uT6sR5qP4oN3mL2kJ1iH0gF9eD8"


def _stop(message: str, **more: str) -> dict[str, str]:
    return {
        "session_id": "3f1c2d3e-5b6a-4c7d-8e9f-0123456789ab",
        "cwd": "/home/me/site",
        "hook_event_name": "Stop",
        "last_assistant_message": message,
        **more,
    }


def test_what_was_removed_changes_nothing_of_the_fingerprint() -> None:
    codes = {
        fingerprint("stop", _stop(f"ok <private>door code {n:04}</private>")) for n in range(50)
    }
    assert len(codes) == 1
    assert fingerprint("stop", _stop(f"key {GITHUB}")) == fingerprint("stop", _stop(f"key {OTHER}"))
    assert fingerprint("stop", _stop("x", cwd=f"/home/{GITHUB}")) == fingerprint(
        "stop", _stop("x", cwd=f"/home/{OTHER}")
    )


def test_the_raw_payload_cannot_be_tried_against_it() -> None:
    data = _stop("ok <private>door code 4711</private>")
    raw = json.dumps(data, sort_keys=True, ensure_ascii=False)
    tried = hashlib.sha256(f"stop\n-1\n{raw}".encode()).hexdigest()[:32]
    assert fingerprint("stop", data) != tried


def test_what_was_kept_still_tells_events_apart_and_a_scrubbed_payload_is_the_same_event() -> None:
    first = fingerprint("stop", _stop("first turn"))
    assert fingerprint("stop", _stop("second turn")) != first
    assert fingerprint("stop", _stop("first turn")) == first  # the same event twice: stored once
    data = _stop(f"token {GITHUB} <private>x</private>")
    kept = {k: scrub(v).text for k, v in data.items()}
    assert fingerprint("stop", kept) == fingerprint("stop", data)  # scrubbed on the client first
