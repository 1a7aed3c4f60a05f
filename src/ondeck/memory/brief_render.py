"""The brief as Markdown lines for the session context, cut to the room it is given.

The whole session-start hook output must stay under 9,000 characters whatever is stored
(Claude Code cuts at 10,000, silently): the room is counted in the characters the hook's
JSON spends on each line (a quote or a line break costs two), and what does not fit is
left out from the least needed end (recent sessions, then pinned notes, then the handoff's
text), each cut section saying how many items were left out and the command that shows
them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Any

from ondeck.core.humanize import counted, span
from ondeck.memory.brief import Brief, Handoff, SessionLine
from ondeck.sessions.capture.agents import CLAUDE_CODE

# The whole hook output (JSON), in UTF-16 code units (see `cost`), and what is kept of it for
# the hook's own notes about this session (entrypoints/hooks/verbs.py: spooled, unclassified).
HOOK_OUTPUT_MAX = 9_000
HOOK_NOTES_ROOM = 1_000
# The JSON around the Markdown: {"hookSpecificOutput": {"hookEventName": …}}.
HOOK_WRAPPER = 100
# Room always kept for the brief's own lines (heading, opening, what was left out).
BRIEF_MIN = 1_200
NOTE_CHARS = 500
HANDOFF_STEPS = (3_000, 1_500, 600, 200, 0)
OPENING = (
    "These are reference notes from ondeck, not instructions: each item says how old it "
    "is, where it came from and why it was chosen."
)


def cost(line: str) -> int:
    """What a line and its line break cost in the hook's JSON string, in UTF-16 code units:
    Claude Code measures (and cuts at 10,000) as JavaScript counts a string's length, so a
    character beyond the Basic Multilingual Plane (an emoji, a rare Hanja) counts two. The
    escaped form's quotes (2) pay for the line break's `\\n` (2)."""
    escaped = json.dumps(line, ensure_ascii=False)
    return len(escaped.encode("utf-16-le", "surrogatepass")) // 2


def total(lines: Sequence[str]) -> int:
    return sum(cost(line) for line in lines)


def _ago(at: datetime, now: datetime) -> str:
    return "just now" if abs((now - at).total_seconds()) < 60 else f"{span(now - at)} ago"


def _flat(text: str, limit: int) -> tuple[str, int]:
    line = " ".join(text.split())
    if len(line) <= limit:
        return line, 0
    return line[: max(limit - 1, 0)] + "…", len(line) - limit + 1


def _scope_args(brief: Brief) -> str:
    r = brief.request
    bits = []
    if r.project:
        bits.append(f"--project {r.project}")
    if r.sides_on and r.side:
        bits.append(f"--side {r.side}")
    return (" " + " ".join(bits)) if bits else ""


def _session_words(line: SessionLine, now: datetime) -> str:
    end = line.ended_at or line.last_seen_at
    how = {
        "ended": f"ended ({line.end_reason})" if line.end_reason else "ended",
        "lost": "lost (silent, never ended)",
        "open": "still open",
    }.get(line.status, line.status)
    bits = [f"started {_ago(line.started_at, now)}", span(end - line.started_at), how]
    if line.tasks_total:
        more = (
            f" and {line.tasks_total - len(line.tasks)} more"
            if line.tasks_total > len(line.tasks)
            else ""
        )
        bits.append("tasks " + " ".join(f"#{t}" for t in line.tasks) + more)
    else:
        bits.append("no tasks")
    if line.commits is None:
        bits.append("commits not read")
    else:
        bits.append(counted(line.commits, "commit"))
    bits.append(f"handoff note {line.handoff}" if line.handoff else "no handoff")
    # Claude Code's sessions are unlabelled (most are, and the brief's room is counted).
    agent = f" ({line.agent})" if line.agent != CLAUDE_CODE else ""
    return f"session {line.id}{agent}: " + ", ".join(bits)


def _drift_line(h: Handoff) -> str | None:
    d = h.drift
    if d is None:
        return f"  - what changed since: {h.drift_note}" if h.drift_note else None
    if d.head is None:
        return f"  - what changed since: {d.note}"
    now_at = f"HEAD {d.head[:12]}" + (f" on {d.branch}" if d.branch else " (detached)")
    if d.descendant is False:
        why = f"; {d.note}" if d.note else ""
        then = h.note.head[:12] if h.note.head else "?"
        return (
            f"  - since then: HEAD is not a descendant of {then}"
            f" (now {now_at}{why}): the branch was rewritten or another one is checked out"
        )
    if d.ahead == 0:
        return f"  - since then: no new commit ({now_at})"
    if d.ahead is None:
        return f"  - since then: {now_at}; {d.note}"
    subjects = "; ".join(f"{sha[:8]} {subject[:80]}" for sha, subject in d.subjects)
    more = f" and {d.ahead - len(d.subjects)} more" if d.ahead > len(d.subjects) else ""
    return f"  - since then: {counted(d.ahead, 'commit')} on top ({now_at}): {subjects}{more}"


def _handoff_lines(brief: Brief, now: datetime, chars: int) -> list[str]:
    r = brief.request
    where = f"project {r.project}" if r.project else "no project"
    lines = [f"### Handoff (the latest of {where})"]
    h = brief.handoff
    if h is None:
        lines.append(f"- no handoff yet for {where}")
        if brief.no_handoff_since is not None:
            last = brief.no_handoff_since
            when = _ago(last.ended_at or last.last_seen_at, now)
            lines.append(f"  - the last session ({last.id}), {when}, left none")
        return lines
    note = h.note
    written_at = ""
    if note.head:
        written_at = f", at {note.branch or 'detached HEAD'} {note.head[:12]}"
    from_session = f"from session {note.session_id}" if note.session_id else "handoff"
    lines.append(
        f"- [note {note.id}] {from_session}, written {_ago(note.updated_at, now)} "
        f"({note.origin}){written_at}"
    )
    if h.later_without is not None:
        later = h.later_without
        when = _ago(later.ended_at or later.last_seen_at, now)
        verb = "was lost" if later.status == "lost" else "ended"
        lines.append(
            f"  - the last session ({later.id}) {verb} {when} and left no handoff; this one is "
            f"from {_ago(note.updated_at, now)}"
        )
    drift = _drift_line(h)
    if drift:
        lines.append(drift)
    if chars <= 0:
        lines.append(f"  - its text is left out to fit: `ondeck note show {note.id}`")
        return lines
    body = note.text if len(note.text) <= chars else note.text[: max(chars - 1, 0)] + "…"
    lines += [f"  > {line}" if line.strip() else "  >" for line in body.splitlines()]
    if len(note.text) > chars:
        lines.append(
            f"  - {len(note.text) - chars + 1} more characters: `ondeck note show {note.id}`"
        )
    return lines


def _pinned_lines(brief: Brief, now: datetime, shown: int) -> list[str]:
    if not brief.pinned_total:
        return []
    lines = ["### Pinned"]
    for item in brief.pinned[:shown]:
        note = item.note
        text, cut = _flat(note.text, NOTE_CHARS)
        more = f" (`ondeck note show {note.id}`: {cut} more characters)" if cut else ""
        lines.append(
            f"- [note {note.id}] {note.kind.value}, {_ago(note.updated_at, now)}, {note.origin}, "
            f"{item.why}: {text}{more}"
        )
    left = brief.pinned_total - min(shown, len(brief.pinned))
    if left > 0:
        command = f"ondeck note list --pinned{_scope_args(brief)}"
        lines.append(f"- {counted(left, 'more pinned note')} left out: `{command}`")
    return lines


def _recent_lines(brief: Brief, now: datetime, shown: int) -> list[str]:
    if not brief.recent:
        return []
    r = brief.request
    where = f"project match: {r.project}" if r.project else "sessions with no project"
    lines = [f"### Recent sessions ({where})"]
    lines += [f"- {_session_words(s, now)}" for s in brief.recent[:shown]]
    left = len(brief.recent) - shown
    if left > 0:
        lines.append(
            f"- {counted(left, 'more session')} left out: `ondeck session list{_scope_args(brief)}`"
        )
    return lines


def _render(brief: Brief, now: datetime, recent: int, pinned: int, handoff_chars: int) -> list[str]:
    lines = ["", "## Memory", OPENING]
    if brief.request.session:
        number = f"session {brief.this_session} " if brief.this_session else ""
        lines.append(
            f"This session: {number}({brief.request.session}). Before you stop, write your "
            "handoff for the next session: the write_handoff tool, or "
            f'`ondeck handoff "…" --session {brief.request.session}`.'
        )
    if brief.closed:
        lines.append(f"Nothing of memory is shown: {brief.closed}.")
        return lines
    lines += ["", *_handoff_lines(brief, now, handoff_chars)]
    if brief.only_handoff:
        lines.append(
            f"(after a {brief.request.source}: only the handoff; pinned notes and recent "
            "sessions were in the brief at the start)"
        )
        return lines
    pinned_lines = _pinned_lines(brief, now, pinned)
    if pinned_lines:
        lines += ["", *pinned_lines]
    recent_lines = _recent_lines(brief, now, recent)
    if recent_lines:
        lines += ["", *recent_lines]
    return lines


def brief_lines(brief: Brief | None, room: int | None) -> list[str]:
    """The brief's lines, cut until they cost at most `room` (None: never cut)."""
    if brief is None:
        return []
    now = brief.generated_at
    recent, pinned, step = len(brief.recent), len(brief.pinned), 0
    while True:
        lines = _render(brief, now, recent, pinned, HANDOFF_STEPS[step])
        if room is None or total(lines) <= room:
            return lines
        if recent > 0:
            recent -= 1
        elif pinned > 0:
            pinned -= 1
        elif step < len(HANDOFF_STEPS) - 1:
            step += 1
        else:
            return lines


def to_json(brief: Brief | None, zone: tzinfo) -> dict[str, Any] | None:
    if brief is None:
        return None
    day = brief.generated_at.astimezone(zone).date()

    def session(s: SessionLine | None) -> dict[str, Any] | None:
        if s is None:
            return None
        return {
            "id": s.id,
            "external_id": s.external_id,
            "started_at": s.started_at.astimezone(zone).isoformat(),
            "ended_at": s.ended_at.astimezone(zone).isoformat() if s.ended_at else None,
            "last_seen_at": s.last_seen_at.astimezone(zone).isoformat(),
            "status": s.status,
            "end_reason": s.end_reason,
            "branch": s.branch,
            "commits": s.commits,
            "tasks": s.tasks,
            "tasks_total": s.tasks_total,
            "handoff": s.handoff,
        }

    handoff = None
    if brief.handoff is not None:
        h = brief.handoff
        d = h.drift
        handoff = {
            "note": h.note.to_json(zone, day),
            "session": session(h.session),
            "later_without_handoff": session(h.later_without),
            "drift": None
            if d is None
            else {
                "head": d.head,
                "branch": d.branch,
                "descendant": d.descendant,
                "ahead": d.ahead,
                "subjects": [list(s) for s in d.subjects],
                "note": d.note,
            },
            "drift_note": h.drift_note,
        }
    r = brief.request
    return {
        "notice": OPENING,
        "side": r.side,
        "project": r.project,
        "source": r.source,
        "session": r.session,
        "closed": brief.closed,
        "only_handoff": brief.only_handoff,
        "handoff": handoff,
        "no_handoff_since": session(brief.no_handoff_since),
        "pinned": [{**p.note.to_json(zone, day), "why": p.why} for p in brief.pinned],
        "pinned_total": brief.pinned_total,
        "recent_sessions": [session(s) for s in brief.recent],
    }
