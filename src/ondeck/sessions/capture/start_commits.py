"""Where each session started, in git, as this machine's hooks saw it: kept beside the spool.

A session's end reads what it did (commits and files) from its start commit to the end's
HEAD. The store knows the start commit; but when the end cannot reach the store (client
mode with the server down at the end, a database busy with a jobs tick's drain), the end
is spooled and the store cannot be asked. Git is here, now, and will not be when the
spool drains (perhaps on another machine): so the hook keeps the start commit of every
session it started, and the end reads git from it whatever happens to the end's record.

One small file per session (0600, in a 0700 directory), named by a hash of the session id,
never rewritten (a resume keeps the first start, as the store does), removed at the end,
and swept after `KEEP_DAYS` (a session that never ended).
"""

from __future__ import annotations

import json
import os

from ondeck.core import clock

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from typing import Any

DIRECTORY = "session-starts"
KEEP_DAYS = 30
SWEEP_MAX = 2_000  # files looked at per sweep: a sweep never holds a hook up


def _path(data_dir: str, session: str) -> str:
    from ondeck.sessions.capture.events import digest

    return os.path.join(data_dir, DIRECTORY, f"{digest(session)}.json")


def remember(data_dir: str, session: str, start_head: Any, git_root: Any, at: Any = None) -> None:
    """Keep the start commit of `session` and when it began (`at`: an instant, or its ISO
    text), the first given: never overwritten."""
    if not isinstance(start_head, str) or not start_head or not isinstance(git_root, str):
        return
    folder = os.path.join(data_dir, DIRECTORY)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(
            _path(data_dir, session), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600
        )
    except FileExistsError:
        return
    except OSError:
        return  # a place that cannot be written: the end says its start is not known
    began = at.isoformat() if hasattr(at, "isoformat") else at if isinstance(at, str) else None
    text = {
        "session": session,
        "start_head": start_head[:64],
        "git_root": git_root[:4000],
        "at": began,
    }
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(text, ensure_ascii=False))
    _sweep(folder)


def recall(data_dir: str, session: str) -> dict[str, Any] | None:
    """The start as `changes_of` reads it (`start_head`, `git_root`), or None."""
    try:
        with open(_path(data_dir, session), encoding="utf-8") as handle:
            data = json.loads(handle.read(10_000))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("session") != session:
        return None
    head, root = data.get("start_head"), data.get("git_root")
    if not isinstance(head, str) or not isinstance(root, str):
        return None
    at = data.get("at")
    return {
        "start_head": head,
        "git_root": root,
        "capture": True,
        "at": at if isinstance(at, str) else None,
    }


def known(
    data_dir: str, spool_dir: str, session: str, stored: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The start an end reads git from: the store's (`stored`, the session as its end left
    it) when it holds the start's HEAD; else the one this machine kept when the session
    began (kept before the start was stored or spooled: the end may have been stored first
    and the start drained since, or still waiting); else the start still in the spool (made
    by a hook that kept none); else the store's. Every end reads it here: the hook's, and
    the server's for the hooks and the mod of its own machine."""
    if stored is not None and (not stored.get("capture", True) or stored.get("start_head")):
        return stored
    return recall(data_dir, session) or _in_spool(spool_dir, session) or stored


def _in_spool(spool_dir: str, session: str) -> dict[str, Any] | None:
    """The session's start, when it too waits in the spool (the database was away)."""
    from ondeck.sessions.capture import spool

    found = spool.find(
        spool_dir,
        lambda r: r.get("kind") == "start" and r.get("session") == session,
        containing=session,
    )
    if found is None:
        return None
    facts = found.get("facts") or {}
    return {
        "start_head": facts.get("head"),
        "git_root": facts.get("git_root"),
        "at": found.get("at"),
    }


def forget(data_dir: str, session: str) -> None:
    try:  # noqa: SIM105 (contextlib is an import a hook does not otherwise pay for)
        os.unlink(_path(data_dir, session))
    except OSError:
        pass


def _sweep(folder: str) -> None:
    cutoff = clock.now().timestamp() - KEEP_DAYS * 86_400
    try:
        with os.scandir(folder) as entries:
            for n, entry in enumerate(entries):
                if n >= SWEEP_MAX:
                    return
                try:
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.unlink(entry.path)
                except OSError:
                    continue
    except OSError:
        return
