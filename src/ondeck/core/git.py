"""What a session's hooks read from git, with `git` itself, each read bounded in time.

Every call shares one deadline (1 s by default): a hook must never hold a session up on a
huge repository or a hung network filesystem; what was not read in time is recorded as not
read, with the reason. Nothing here writes: `GIT_OPTIONAL_LOCKS=0` keeps `git diff` from
refreshing the index (and so from taking `index.lock` under the user's feet).
Outside a repository, or without git installed, every read gives nothing.
"""

from __future__ import annotations

import os
import time

from ondeck.core.frozen import Frozen

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see core/hook_config
if TYPE_CHECKING:
    from typing import Any

GIT_BUDGET_S = 1.0
COMMITS_MAX = 50
FILES_MAX = 200

_ENV_EXTRA = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_MESSAGES": "C"}


class Deadline:
    """The time left for git reads: each call gets what remains of one budget."""

    def __init__(self, seconds: float = GIT_BUDGET_S) -> None:
        self.until = time.monotonic() + seconds

    def left(self) -> float:
        return self.until - time.monotonic()


class Repo(Frozen):
    root: str | None = None
    branch: str | None = None  # None: detached HEAD, or not read
    head: str | None = None  # None: no commit yet, or not read
    remotes: dict[str, str] = {}  # noqa: RUF012 (Frozen copies it) name → URL as configured


class Listing(Frozen):
    """Commits (sha, subject) or paths, at most a limit, with the total and why not read."""

    items: list[Any] | None  # (sha, subject) pairs, or paths
    total: int = 0
    note: str | None = None


class _Failed(Exception):
    pass


def _git(cwd: str, args: list[str], deadline: Deadline) -> str:
    left = deadline.left()
    if left <= 0:
        raise _Failed("out of time (git reads share 1 s)")
    try:
        # No fsmonitor: a repository's config must not make a read run a program.
        code, out, err = run(["git", "-c", "core.fsmonitor=false", "-C", cwd, *args], left)
    except TimeoutError:
        raise _Failed("out of time (git reads share 1 s)") from None
    except OSError as exc:  # no git, or cwd gone
        raise _Failed(f"git could not run ({exc.strerror or exc})") from None
    if code != 0:
        message = err.decode("utf-8", "replace").strip().splitlines()
        raise _Failed(message[0][:200] if message else f"git exited {code}")
    return out.decode("utf-8", "replace")


def run(argv: list[str], timeout: float) -> tuple[int, bytes, bytes]:
    """`subprocess.run(argv, capture_output=True, stdin=DEVNULL, timeout=…)` for git, with
    `_ENV_EXTRA`: (exit code, stdout, stderr); TimeoutError (the process killed) or OSError.

    Not `subprocess`: its import (`selectors`, `signal`, `threading`, `contextlib`, locale)
    is a share of a hook's whole process, measured against `python -c pass`; `posix_spawn`
    and `poll` are what it would use here anyway."""
    import select

    until = time.monotonic() + timeout
    env = {**os.environ, **_ENV_EXTRA}
    out_r, out_w = os.pipe()  # both ends close-on-exec; the child gets its ends as 1 and 2
    err_r, err_w = os.pipe()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        actions = [
            (os.POSIX_SPAWN_DUP2, null, 0),
            (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2),
        ]
        pid = os.posix_spawnp(argv[0], argv, env, file_actions=actions)
    except BaseException:
        for fd in (out_r, err_r):
            os.close(fd)
        raise
    finally:
        for fd in (out_w, err_w, null):
            os.close(fd)
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    poller = select.poll()
    for fd in chunks:
        poller.register(fd, select.POLLIN)
    open_fds = set(chunks)
    try:
        while open_fds:
            left = until - time.monotonic()
            if left <= 0:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                raise TimeoutError(f"{argv[0]} did not finish in {timeout:.2f} s")
            for fd, _ in poller.poll(left * 1000):
                data = os.read(fd, 65536)
                if data:
                    chunks[fd].append(data)
                else:
                    poller.unregister(fd)
                    open_fds.discard(fd)
    finally:
        for fd in chunks:
            os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks[out_r]), b"".join(chunks[err_r])


def read_repo(cwd: str | None, deadline: Deadline, *, remotes: bool = False) -> Repo:
    """The repository holding `cwd`: top-level, branch, HEAD and (if asked) remote URLs."""
    if not cwd or not os.path.isdir(cwd):
        return Repo()
    try:
        lines = _git(
            cwd, ["rev-parse", "--show-toplevel", "HEAD", "--abbrev-ref", "HEAD"], deadline
        )
        root, head, branch = [*lines.splitlines(), "", "", ""][:3]
    except _Failed:
        # Not a repository, or one without a commit yet: then only the top-level and the
        # branch HEAD points to can be read.
        try:
            root = _git(cwd, ["rev-parse", "--show-toplevel"], deadline).strip()
        except _Failed:
            return Repo()
        head = ""
        try:
            branch = _git(cwd, ["symbolic-ref", "--short", "-q", "HEAD"], deadline).strip()
        except _Failed:
            branch = ""
    found: dict[str, str] = {}
    if remotes:
        try:
            listed = _git(cwd, ["config", "--get-regexp", r"^remote\..*\.url$"], deadline)
        except _Failed:  # no remote at all is also a failure of --get-regexp
            listed = ""
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
    )


def commits_between(root: str, start: str, end: str, deadline: Deadline) -> Listing:
    """The commits reachable from `end` and not from `start` (`git log start..end`), newest
    first: at most COMMITS_MAX (sha, subject), and how many there are in all."""
    try:
        out = _git(
            root,
            [
                "log",
                "-z",
                "--no-color",
                "--format=%H%x1f%s",
                f"-n{COMMITS_MAX + 1}",
                f"{start}..{end}",
            ],
            deadline,
        )
    except _Failed as exc:
        return Listing(items=None, note=f"commits not read: {exc}")
    items: list[tuple[str, str]] = []
    for entry in out.split("\0"):
        sha, sep, subject = entry.strip("\n").partition("\x1f")
        if sep:
            items.append((sha, subject))
    total = len(items)
    if total > COMMITS_MAX:
        try:
            total = int(_git(root, ["rev-list", "--count", f"{start}..{end}"], deadline))
        except (_Failed, ValueError):
            total = COMMITS_MAX + 1
        items = items[:COMMITS_MAX]
    return Listing(items=items, total=total)


def changed_paths(root: str, start: str, deadline: Deadline) -> Listing:
    """The files that differ between `start` and the working tree (committed since, or not
    committed yet), and new untracked files; all of them, sorted (the caller filters private
    paths out, then caps)."""
    try:
        tracked = _git(root, ["diff", "--name-only", "-z", "--no-renames", start], deadline)
        untracked = _git(root, ["ls-files", "-z", "--others", "--exclude-standard"], deadline)
    except _Failed as exc:
        return Listing(items=None, note=f"files not read: {exc}")
    paths = sorted({p for p in (tracked + "\0" + untracked).split("\0") if p})
    return Listing(items=paths, total=len(paths))


# --- what changed since a handoff (the brief, issue 15) ----------------------------------

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
    left = deadline.left()
    if left <= 0:
        return Drift(head=repo.head, branch=repo.branch, note="not read: out of time")
    try:
        code, _, _ = run(
            ["git", "-C", repo.root, "merge-base", "--is-ancestor", since, repo.head], left
        )
    except OSError:  # TimeoutError too
        return Drift(head=repo.head, branch=repo.branch, note="not read: git did not answer")
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
