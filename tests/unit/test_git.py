"""Reading git for session records: real repositories, bounded in time, nothing written."""

from __future__ import annotations

import time
from pathlib import Path

from ondeck.host.git import COMMITS_MAX, changed_paths, commits_between, read_repo
from ondeck.host.git_run import Deadline
from support.hooks import commit_file, git, new_repo


def test_read_repo_gives_top_level_branch_head_and_remotes(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "r")
    (repo / "sub").mkdir()
    git(repo, "remote", "add", "origin", "https://tok@github.com/acme/r.git")
    found = read_repo(str(repo / "sub"), Deadline(), remotes=True)
    assert found.root == str(repo) and found.branch == "main"
    assert found.head == git(repo, "rev-parse", "HEAD")
    assert found.remotes == {"origin": "https://tok@github.com/acme/r.git"}
    assert read_repo(str(repo), Deadline()).remotes == {}, "remotes only when asked"


def test_detached_empty_and_outside(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "r", commits=2)
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    detached = read_repo(str(repo), Deadline())
    assert detached.branch is None and detached.head == git(repo, "rev-parse", "HEAD")
    empty = new_repo(tmp_path / "empty", commits=0)
    found = read_repo(str(empty), Deadline())
    assert (found.root, found.branch, found.head) == (str(empty), "main", None)
    outside = tmp_path / "plain"
    outside.mkdir()
    assert read_repo(str(outside), Deadline()).root is None
    assert read_repo(str(tmp_path / "gone"), Deadline()).root is None
    assert read_repo(None, Deadline()).root is None


def test_commits_between_start_and_end_at_most_fifty_with_the_total(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "r")
    start = git(repo, "rev-parse", "HEAD")
    for n in range(COMMITS_MAX + 3):
        git(repo, "commit", "-q", "--allow-empty", "-m", f"변경 {n}\n\nbody line")
    log = commits_between(str(repo), start, git(repo, "rev-parse", "HEAD"), Deadline())
    assert log.items is not None and len(log.items) == COMMITS_MAX and log.total == COMMITS_MAX + 3
    assert log.items[0][1] == f"변경 {COMMITS_MAX + 2}" and log.note is None
    bad = commits_between(str(repo), "0" * 40, start, Deadline())
    assert bad.items is None and bad.note and bad.note.startswith("commits not read")


def test_changed_paths_include_uncommitted_and_untracked_files(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "r")
    commit_file(repo, "kept.txt", "a\n", "kept")
    start = git(repo, "rev-parse", "HEAD")
    commit_file(repo, "src/새 파일.py", "x\n", "add")
    (repo / "kept.txt").write_text("changed, not committed\n")
    (repo / "untracked.md").write_text("new\n")
    (repo / ".gitignore").write_text("ignored.log\n")
    (repo / "ignored.log").write_text("noise\n")
    listing = changed_paths(str(repo), start, Deadline())
    assert listing.items == [".gitignore", "kept.txt", "src/새 파일.py", "untracked.md"]
    assert not (repo / ".git" / "index.lock").exists()


def test_reads_stop_when_the_budget_is_spent(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "r")
    spent = Deadline(0.0)
    time.sleep(0.01)
    # Not root None, as if not a repository: what the files say, and why.
    found = read_repo(str(repo), spent)
    assert (found.root, found.branch, found.head) == (str(repo), "main", None)
    assert found.note and "git did not answer" in found.note
    log = commits_between(str(repo), "HEAD", "HEAD", spent)
    assert log.items is None and "out of time" in (log.note or "")
