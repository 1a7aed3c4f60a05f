"""What git says a session did, read by the hook at its end: the end's second record
(`changes`), made after the end's own so that the end is stored first even if reading git
runs out of time. Every line is scrubbed before it is put in the record.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ondeck.sessions.capture.events import (
    PATH_MAX,
    SUBJECT_MAX,
    VERSION,
    clean_text,
    scrub_once,
    sha,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from typing import Any

    from ondeck.host.quick_settings import HookConfig


def changes_of(
    end: dict[str, Any], start: dict[str, Any] | None, config: HookConfig, at: datetime
) -> dict[str, Any] | None:
    """What git says the session did, from its start's HEAD (`start`: the session as the
    store knows it, None when unknown) to the end's: the end's second record."""
    import os

    from ondeck.core.scrubber import is_private_path
    from ondeck.host.git import FILES_MAX, changed_paths, session_commits
    from ondeck.host.git_run import Deadline

    if not end["capture"]:
        return None
    facts = end["facts"]
    note = None
    commits = files = None
    commits_total = files_total = private = 0
    cwd = facts.get("cwd")
    if start is None:
        note = "not read: the session's start is not known here (the database was unreachable)"
    elif not start.get("capture", True):
        return None
    elif isinstance(cwd, str) and not os.path.isdir(cwd):
        note = (
            f"not read: the session's directory {cwd} no longer exists (removed before the "
            "session ended), so git could not be asked what it did"
        )
    elif not facts.get("head") and facts.get("git_note"):
        note = f"not read: {facts['git_note']}"
    elif not start.get("start_head") or not facts.get("head"):
        note = "not read: no git HEAD at the session's start or end"
    elif start.get("git_root") not in _same_place(facts.get("git_root")):
        note = "not read: the session ended in another repository than it started in"
    else:
        root, deadline = facts["git_root"], Deadline()
        log = session_commits(
            root, start["start_head"], facts["head"], deadline, since=_started(start)
        )
        listing = changed_paths(root, start["start_head"], deadline)
        note = "; ".join(n for n in (log.note, listing.note) if n) or None
        if log.items is not None:
            commits = [(str(sha), str(subject)) for sha, subject in log.items]
            commits_total = log.total
        if listing.items is not None:
            paths = [str(p) for p in listing.items]
            public = [p for p in paths if not is_private_path(p, config.private_globs)]
            private = len(paths) - len(public)
            files, files_total = public[:FILES_MAX], len(public)
    return changes_record(
        end,
        at=at,
        commits=commits,
        commits_total=commits_total,
        files=files,
        files_total=files_total,
        files_private=private,
        note=note,
    )


def _same_place(root: str | None) -> tuple[str | None, ...]:
    """A git root as the hook reads it, and as the store keeps it (scrubbed: a folder may be
    named like a token), for telling whether a session ended where it started."""
    return (root,) if root is None else (root, scrub_once(root).text)


def _started(start: dict[str, Any]) -> float | None:
    """When the session began (a Unix time), as the store's row or a start record says."""
    value = start.get("started_at") or start.get("at")
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if isinstance(value, datetime):  # the stores keep UTC: a naive one is UTC
        return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()
    return None


def changes_record(
    end: dict[str, Any],
    *,
    at: datetime,
    commits: list[tuple[str, str]] | None,
    commits_total: int,
    files: list[str] | None,
    files_total: int,
    files_private: int,
    note: str | None,
) -> dict[str, Any]:
    """What the session did in git, read at its end: a record of its own, after the end's,
    so that the end is stored first even if reading git runs out of time."""
    from ondeck.core.scrubber import scrub

    redactions = 0
    kinds: dict[str, int] = {}

    def clean_lines(lines: list[str], limit: int) -> list[str]:
        nonlocal redactions
        flat = [clean_text(line).replace("\n", " ") for line in lines]
        # One scrub for all lines, as long as it keeps them apart (a `<private>` span opened
        # on one line and closed on another would not): else one scrub per line.
        results = [scrub("\n".join(flat))]
        if results[0].text.count("\n") != max(len(flat) - 1, 0):
            results = [scrub(line) for line in flat]
            texts = [r.text.replace("\n", " ") for r in results]
        else:
            texts = results[0].text.split("\n") if flat else []
        for result in results:
            redactions += result.redactions
            for name, count in result.kinds.items():
                kinds[name] = kinds.get(name, 0) + count
        return [text[:limit] for text in texts]

    shown_commits = None
    if commits is not None:
        subjects = clean_lines([subject for _, subject in commits], SUBJECT_MAX)
        shown_commits = [
            [sha[:64], subject] for (sha, _), subject in zip(commits, subjects, strict=False)
        ]
    shown_files = None if files is None else clean_lines(files, PATH_MAX)
    return {
        "v": VERSION,
        "kind": "changes",
        "agent": end["agent"],
        "session": end["session"],
        "at": at.astimezone(UTC).isoformat(),
        "fingerprint": sha(f"{end['fingerprint']}:changes"),
        "capture": True,
        "classification": end["classification"],
        "facts": end["facts"],
        "commits": shown_commits,
        "commits_total": commits_total,
        "files": shown_files,
        "files_total": files_total,
        "files_private": files_private,
        "note": note,
        "redactions": redactions,
        "kinds": kinds,
    }
