"""What a session's hooks read from git, with `git` itself, each read bounded in time.

Every call shares one deadline (1 s by default): a hook must never hold a session up on a
huge repository or a hung network filesystem; what was not read in time is recorded as not
read, with the reason. Nothing here writes: `GIT_OPTIONAL_LOCKS=0` keeps `git diff` from
refreshing the index (and so from taking `index.lock` under the user's feet).
Outside a repository, or without git installed, every read gives nothing.

Git itself is run by host/git_run.py, which keeps every read from running a program a
repository names.
"""

from __future__ import annotations

import os

from ondeck.core.frozen import Frozen
from ondeck.core.humanize import counted
from ondeck.host.git_run import Deadline, GitFailed, driver_overrides, git_call, git_output

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from typing import Any

COMMITS_MAX = 50
FILES_MAX = 200


class Repo(Frozen):
    root: str | None = None
    branch: str | None = None  # None: detached HEAD, or not read
    head: str | None = None  # None: no commit yet, or not read
    remotes: dict[str, str] = {}  # noqa: RUF012 (Frozen copies it) name → URL as configured
    # The main checkout when `root` is a linked worktree (`git worktree add`): the same
    # repository, so the same project.
    worktree_of: str | None = None
    note: str | None = None  # why git gave less than it should have (it did not answer)


class Listing(Frozen):
    """Commits (sha, subject) or paths, at most a limit, with the total and why not read."""

    items: list[Any] | None  # (sha, subject) pairs, or paths
    total: int = 0
    note: str | None = None


def read_repo(cwd: str | None, deadline: Deadline, *, remotes: bool = False) -> Repo:
    """The repository holding `cwd`: top-level, branch, HEAD, the main checkout of a linked
    worktree, and (if asked) remote URLs. When git does not answer, what the files say
    (`found_on_disk`), with the reason in `note`: a slow git is not "not a repository"."""
    if not cwd or not os.path.isdir(cwd):
        return Repo()
    asked = ["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir"]
    try:
        lines = git_output(cwd, [*asked, "--git-dir", "HEAD", "--abbrev-ref", "HEAD"], deadline)
        root, common, own, head, branch = [*lines.splitlines(), "", "", "", "", ""][:5]
    except GitFailed as exc:
        if exc.unanswered:
            return found_on_disk(cwd, f"git did not answer ({exc})")
        # Not a repository, or one without a commit yet: then only the top-level and the
        # branch HEAD points to can be read.
        try:
            lines = git_output(cwd, [*asked, "--git-dir"], deadline)
            root, common, own = [*lines.splitlines(), "", "", ""][:3]
        except GitFailed as again:
            if again.unanswered:
                return found_on_disk(cwd, f"git did not answer ({again})")
            return Repo()
        head = ""
        try:
            branch = git_output(cwd, ["symbolic-ref", "--short", "-q", "HEAD"], deadline).strip()
        except GitFailed:
            branch = ""
    found: dict[str, str] = {}
    note = None
    if remotes:
        try:
            listed = git_output(cwd, ["config", "--get-regexp", r"^remote\..*\.url$"], deadline)
        except GitFailed as exc:  # no remote at all is also a failure of --get-regexp
            listed = ""
            note = f"remotes not read: git did not answer ({exc})" if exc.unanswered else None
        for line in listed.splitlines():
            key, _, url = line.partition(" ")
            name = key.removeprefix("remote.").removesuffix(".url")
            if name and url:
                found[name] = url.strip()
    return Repo(
        root=root or None,
        branch=branch if branch and branch != "HEAD" else None,
        head=head if len(head) >= 40 else None,
        remotes=found,
        worktree_of=_main_checkout(common) if common and own and common != own else None,
        note=note,
    )


def _main_checkout(common_dir: str) -> str:
    """The checkout a worktree belongs to, from the repository's common git directory:
    `/src/site/.git` → `/src/site`; a bare `/src/site.git` is named by itself."""
    common_dir = common_dir.rstrip("/")
    if os.path.basename(common_dir) == ".git":
        return os.path.dirname(common_dir)
    return common_dir


def found_on_disk(cwd: str, note: str) -> Repo:
    """The repository of `cwd` as its files show it, without git: the nearest folder with a
    `.git` (a directory, or a worktree's `gitdir:` file) and the branch its HEAD names.
    What git did not answer for stays unknown (`head`, remotes), and `note` says why."""
    for folder in _folders(cwd):
        dot_git = os.path.join(folder, ".git")
        if os.path.isdir(dot_git):
            return Repo(root=folder, branch=_branch_in(dot_git), note=note)
        if os.path.isfile(dot_git):
            own = _gitdir_of(dot_git)
            if own is None:
                continue
            common = own
            try:
                with open(os.path.join(own, "commondir"), encoding="utf-8") as handle:
                    common = os.path.normpath(os.path.join(own, handle.read(4096).strip()))
            except OSError:
                pass
            worktree_of = _main_checkout(common) if common != own else None
            return Repo(root=folder, branch=_branch_in(own), worktree_of=worktree_of, note=note)
    return Repo(note=note)


def _folders(cwd: str) -> list[str]:
    here, out = os.path.abspath(cwd), []
    while True:
        out.append(here)
        up = os.path.dirname(here)
        if up == here:
            return out
        here = up


def _gitdir_of(dot_git_file: str) -> str | None:
    try:
        with open(dot_git_file, encoding="utf-8") as handle:
            text = handle.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir:"):
        return None
    path = text.removeprefix("gitdir:").strip()
    return os.path.normpath(os.path.join(os.path.dirname(dot_git_file), path))


def _branch_in(git_dir: str) -> str | None:
    try:
        with open(os.path.join(git_dir, "HEAD"), encoding="utf-8") as handle:
            text = handle.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None
    ref = text.removeprefix("ref:").strip() if text.startswith("ref:") else ""
    return ref.removeprefix("refs/heads/") or None


def commits_between(root: str, start: str, end: str, deadline: Deadline) -> Listing:
    """The commits reachable from `end` and not from `start` (`git log start..end`), newest
    first: at most COMMITS_MAX (sha, subject), and how many there are in all."""
    try:
        out = git_output(
            root,
            [
                "log",
                "-z",
                "--no-color",
                "--no-show-signature",
                "--no-notes",
                "--format=%H%x1f%s",
                f"-n{COMMITS_MAX + 1}",
                f"{start}..{end}",
            ],
            deadline,
            drivers=True,
        )
    except GitFailed as exc:
        return Listing(items=None, note=f"commits not read: {exc}")
    items: list[tuple[str, str]] = []
    for entry in out.split("\0"):
        sha, sep, subject = entry.strip("\n").partition("\x1f")
        if sep:
            items.append((sha, subject))
    total = len(items)
    if total > COMMITS_MAX:
        try:
            counted = git_output(
                root, ["rev-list", "--count", f"{start}..{end}"], deadline, drivers=True
            )
            total = int(counted)
        except (GitFailed, ValueError):
            total = COMMITS_MAX + 1
        items = items[:COMMITS_MAX]
    return Listing(items=items, total=total)


SESSION_READ_MAX = 1_000  # commits read to find a session's own among them
CLOCK_SLACK_S = 5


def session_commits(
    root: str, start: str, end: str, deadline: Deadline, *, since: float | None = None
) -> Listing:
    """The commits a session made: reachable from its end's HEAD, not from its start commit,
    and authored and committed since the session began (`since`, a Unix time). A rebase
    onto main (or a pull) brings main's commits into `start..end`: they were made before the
    session and are not counted, and the note says so. When the start commit is no longer an
    ancestor of HEAD (a rebase of the session's branch, a reset, another branch), the note
    says history was rewritten. Without `since`, `commits_between` (and the note)."""
    if start == end:
        return Listing(items=[], total=0)
    try:
        named = driver_overrides(root, deadline)
        code, _, _ = git_call(root, ["merge-base", "--is-ancestor", start, end], deadline, named)
    except GitFailed as exc:
        return Listing(items=None, note=f"commits not read: {exc}")
    rewritten = None
    revisions = [f"{start}..{end}"]
    if code == 1:
        rewritten = (
            f"history was rewritten (the start commit {start[:12]} is no longer an ancestor "
            "of HEAD: a rebase, a reset or another branch)"
        )
    elif code != 0:  # 128: the start commit is not here (rewritten and collected, or never)
        rewritten = (
            f"history was rewritten (the start commit {start[:12]} is no longer in this repository)"
        )
        revisions = [end]
    if since is None:
        if code not in (0, 1):
            return Listing(items=None, note=f"commits not read: {rewritten}")
        listed = commits_between(root, start, end, deadline)
        if rewritten and listed.items is not None:
            unknown = "the commits listed may include others' (the session's start is not known)"
            return Listing(items=listed.items, total=listed.total, note=f"{rewritten}: {unknown}")
        return listed
    try:
        out = git_output(
            root,
            [
                "log",
                "-z",
                "--no-color",
                "--no-show-signature",
                "--no-notes",
                "--format=%H%x1f%at %ct%x1f%s",
                f"-n{SESSION_READ_MAX}",
                *revisions,
            ],
            deadline,
            drivers=True,
        )
    except GitFailed as exc:
        return Listing(
            items=None, note="; ".join(x for x in ("commits not read", rewritten, str(exc)) if x)
        )
    items: list[tuple[str, str]] = []
    older = 0
    for entry in out.split("\0"):
        parts = entry.strip("\n").split("\x1f", 2)
        if len(parts) != 3:
            continue
        sha, times, subject = parts
        # Authored and committed since: a rebase commits again (main's own commits keep
        # both times; the branch's older ones keep their author's).
        if all(t.isdigit() and int(t) >= since - CLOCK_SLACK_S for t in times.split()):
            items.append((sha, subject))
        else:
            older += 1
    notes = [rewritten] if rewritten else []
    if older and code in (0, 1):
        notes.append(
            f"{counted(older, 'commit')} made before the session began are not counted (brought in "
            "by a rebase, a merge or a pull)"
        )
    return Listing(items=items[:COMMITS_MAX], total=len(items), note="; ".join(notes) or None)


def changed_paths(root: str, start: str, deadline: Deadline) -> Listing:
    """The files that differ between `start` and the working tree (committed since, or not
    committed yet), and new untracked files; all of them, sorted (the caller filters private
    paths out, then caps)."""
    try:
        tracked = git_output(
            root,
            [
                "diff",
                "--name-only",
                "-z",
                "--no-renames",
                "--no-ext-diff",
                "--no-textconv",
                "--ignore-submodules=dirty",
                start,
                "--",
            ],
            deadline,
            drivers=True,
        )
        untracked = git_output(root, ["ls-files", "-z", "--others", "--exclude-standard"], deadline)
    except GitFailed as exc:
        return Listing(items=None, note=f"files not read: {exc}")
    paths = sorted({p for p in (tracked + "\0" + untracked).split("\0") if p})
    return Listing(items=paths, total=len(paths))


# --- what changed since a handoff (the brief) -------------------------------------------

DRIFT_SUBJECTS = 5


class Drift(Frozen):
    """Where `cwd`'s repository is now against a commit a handoff was written at."""

    head: str | None = None  # HEAD now
    branch: str | None = None  # the branch now (None: detached, or not read)
    descendant: bool | None = None  # HEAD has the commit in its history (None: not known)
    ahead: int | None = None  # commits on top of it (when a descendant)
    subjects: list[tuple[str, str]] = []  # noqa: RUF012 (Frozen copies it) newest, (sha, subject)
    note: str | None = None  # why something was not read


def drift(cwd: str | None, since: str, deadline: Deadline, *, repo: Repo | None = None) -> Drift:
    """What changed in `cwd`'s repository since commit `since`: commits on top, or that HEAD
    does not descend from it (a rewritten branch, another branch, a commit not here).
    `repo`: `cwd`'s repository as the caller has just read it (`read_repo`), not read again."""
    if repo is None:
        repo = read_repo(cwd, deadline)
    if repo.root is None:
        return Drift(note="not read: the working directory is not in a git repository")
    if repo.head is None:
        return Drift(branch=repo.branch, note="not read: the repository has no commit yet")
    if repo.head.startswith(since) or since.startswith(repo.head):
        return Drift(head=repo.head, branch=repo.branch, descendant=True, ahead=0)
    try:
        named = driver_overrides(repo.root, deadline)
        code, _, _ = git_call(
            repo.root, ["merge-base", "--is-ancestor", since, repo.head], deadline, named
        )
    except GitFailed as exc:
        return Drift(head=repo.head, branch=repo.branch, note=f"not read: {exc}")
    if code == 1:
        return Drift(head=repo.head, branch=repo.branch, descendant=False)
    if code != 0:
        # 128: the commit is not in this repository (rewritten and collected, or never here).
        return Drift(
            head=repo.head,
            branch=repo.branch,
            descendant=False,
            note=f"commit {since[:12]} is not in this repository",
        )
    log = commits_between(repo.root, since, repo.head, deadline)
    if log.items is None:
        return Drift(head=repo.head, branch=repo.branch, descendant=True, note=log.note)
    return Drift(
        head=repo.head,
        branch=repo.branch,
        descendant=True,
        ahead=log.total,
        subjects=[(sha, subject) for sha, subject in log.items[:DRIFT_SUBJECTS]],
    )
