"""Where a session started in git, kept beside the spool by this machine's hooks."""

from __future__ import annotations

import os
import stat
import time
from datetime import UTC, datetime
from pathlib import Path

from ondeck.sessions.capture import start_commits


def test_the_first_start_is_kept_for_the_owner_only_and_forgotten_at_the_end(
    tmp_path: Path,
) -> None:
    at = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
    before = os.umask(0o022)  # the usual umask: the file is the owner's all the same
    try:
        start_commits.remember(str(tmp_path), "세션-1", "a" * 40, "/src/사이트", at)
    finally:
        os.umask(before)
    start_commits.remember(str(tmp_path), "세션-1", "b" * 40, "/src/other", at)  # a resume
    found = start_commits.recall(str(tmp_path), "세션-1")
    assert found == {
        "start_head": "a" * 40,
        "git_root": "/src/사이트",
        "capture": True,
        "at": at.isoformat(),
    }
    folder = tmp_path / start_commits.DIRECTORY
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    [kept] = list(folder.iterdir())
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert start_commits.recall(str(tmp_path), "another") is None
    start_commits.forget(str(tmp_path), "세션-1")
    assert start_commits.recall(str(tmp_path), "세션-1") is None


def test_starts_of_sessions_that_never_ended_are_swept(tmp_path: Path) -> None:
    start_commits.remember(str(tmp_path), "old", "a" * 40, "/r")
    [old] = list((tmp_path / start_commits.DIRECTORY).iterdir())
    long_ago = time.time() - (start_commits.KEEP_DAYS + 1) * 86_400
    os.utime(old, (long_ago, long_ago))
    start_commits.remember(str(tmp_path), "new", "b" * 40, "/r")
    assert start_commits.recall(str(tmp_path), "old") is None
    assert start_commits.recall(str(tmp_path), "new") is not None


def test_nothing_without_a_head_and_a_file_that_is_not_ours_is_not_believed(
    tmp_path: Path,
) -> None:
    start_commits.remember(str(tmp_path), "s", None, "/r")
    assert not (tmp_path / start_commits.DIRECTORY).exists()
    start_commits.remember(str(tmp_path), "s", "a" * 40, "/r")
    [kept] = list((tmp_path / start_commits.DIRECTORY).iterdir())
    kept.write_text('{"session": "other", "start_head": "c", "git_root": "/x"}')
    assert start_commits.recall(str(tmp_path), "s") is None
