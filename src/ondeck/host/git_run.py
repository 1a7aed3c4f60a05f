"""Running git so that it runs nothing else: each key that names a program overridden, an
environment of our own, and one time budget shared by every call (host/git.py reads the
facts with it).

Nothing here runs a program a repository names. A repository is untrusted (a clone is
someone else's `.gitattributes` and, once its owner edits it, a `.git/config` that may say
anything), and git runs programs for reads too. Each key that names one, for the commands
host/git.py runs, is overridden from the environment (`GIT_CONFIG_COUNT`, which outranks
every config file, and is passed on to any git that git itself starts):

    core.fsmonitor                    index reads (diff, ls-files): a hook program
    filter.<driver>.clean/process     diff against the worktree hashes stat-dirty files
                                      through them (smudge, required: turned off too)
    diff.external, diff.<d>.command,  patch output only (not asked for), and refused with
      diff.<d>.textconv                 --no-ext-diff --no-textconv besides
    log.showSignature (gpg.program,   git log verifies a signed commit with them:
      gpg.<format>.program)             --no-show-signature, and log.showSignature=false
    protocol.allow, protocol.<x>.allow  a lazy fetch of a partial clone's missing objects
      (remote URLs, core.sshCommand,    (ssh, `ext::` commands, remote helpers) is never
      credential helpers, askpass)      allowed: no transport, so none of these is reached
    core.hooksPath                    no read runs a hook; a hook directory of nowhere even so
    core.pager, pager.<cmd>           output is a pipe; GIT_PAGER=cat even so
    submodule.recurse, diff.ignoreSubmodules  a dirty-submodule check runs `git status` in
                                      each submodule under its own config: not done

Not overridden: `include`/`includeIf` (they read files, run nothing), `core.editor` (no
read edits), `uploadpack.*` (served fetches only) and `safe.directory` (git honours it from
the owner's own files only; a repository of another user stays refused, as it should).
Git gets no environment of ours: only the variables it needs to find the owner's own
config and speak plain text (`_ENV_KEPT`); no ondeck token or database URL, and no
`GIT_*` of the caller (GIT_DIR, GIT_CONFIG_PARAMETERS...) that would point it elsewhere.
"""

from __future__ import annotations

import os
import time

GIT_BUDGET_S = 1.0

_ENV_EXTRA = {
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_NO_LAZY_FETCH": "1",  # git 2.44 and later; protocol.allow=never does it before
    "LC_MESSAGES": "C",
}
# What git may see of the caller's environment: where the owner's config is, the locale, the
# time zone. Everything else (ONDECK_TOKEN, ONDECK_DATABASE_URL, PGPASSWORD, GIT_DIR...) is
# left out.
_ENV_KEPT = (
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)
# Keys that name (or let git reach) a program, each set to what runs nothing.
_SAFE_CONFIG = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("log.showSignature", "false"),
    ("diff.external", ""),
    ("protocol.allow", "never"),
    ("credential.helper", ""),
    ("core.askPass", ""),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "dirty"),
)
# The same for every driver or protocol a repository's config names (`filter.pwn.clean`).
_PER_NAME = {
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    "diff": (("command", ""), ("textconv", "")),
    "protocol": (("allow", "never"),),
}
_OUT_OF_TIME = "git did not answer: out of time (git reads share 1 s)"


class Deadline:
    """The time left for git reads: each call gets what remains of one budget."""

    def __init__(self, seconds: float = GIT_BUDGET_S) -> None:
        self.until = time.monotonic() + seconds
        # Per repository: the overrides of the drivers its config names (`driver_overrides`).
        self.named: dict[str, list[tuple[str, str]]] = {}

    def left(self) -> float:
        return self.until - time.monotonic()


class GitFailed(Exception):
    def __init__(self, message: str, *, unanswered: bool = False) -> None:
        super().__init__(message)
        self.unanswered = unanswered  # git did not answer (out of time, or could not run)


def git_output(cwd: str, args: list[str], deadline: Deadline, *, drivers: bool = False) -> str:
    """git's output for `args` in `cwd`. `drivers`: the command may reach the worktree's
    filters or fetch missing objects, so the drivers the repository's config names are
    turned off too (one `git config` read per repository and deadline)."""
    named = driver_overrides(cwd, deadline) if drivers else []
    code, out, err = git_call(cwd, args, deadline, named)
    if code != 0:
        message = err.decode("utf-8", "replace").strip().splitlines()
        raise GitFailed(message[0][:200] if message else f"git exited {code}")
    return out.decode("utf-8", "replace")


def git_call(
    cwd: str, args: list[str], deadline: Deadline, named: list[tuple[str, str]]
) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of git for `args`, with the drivers `named` turned off;
    GitFailed when git did not answer (out of time, or could not run)."""
    left = deadline.left()
    if left <= 0:
        raise GitFailed(_OUT_OF_TIME, unanswered=True)
    try:
        return run(["git", "-C", cwd, *args], left, config=[*_SAFE_CONFIG, *named])
    except TimeoutError:
        raise GitFailed(_OUT_OF_TIME, unanswered=True) from None
    except OSError as exc:  # no git, or cwd gone
        raise GitFailed(f"git could not run ({exc.strerror or exc})", unanswered=True) from None


def driver_overrides(cwd: str, deadline: Deadline) -> list[tuple[str, str]]:
    """The overrides for every filter, diff driver and protocol `cwd`'s config names."""
    if cwd in deadline.named:
        return deadline.named[cwd]
    code, out, err = git_call(
        cwd, ["config", "-z", "--get-regexp", r"^(filter|diff|protocol)\."], deadline, []
    )
    if code not in (0, 1):  # 1: no such key at all
        message = err.decode("utf-8", "replace").strip().splitlines()
        raise GitFailed(message[0][:200] if message else f"git exited {code}")
    found: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        key = entry.split("\n", 1)[0]
        section, _, rest = key.partition(".")
        name, dot, _variable = rest.rpartition(".")
        if section not in _PER_NAME or not dot or (section, name) in seen:
            continue
        seen.add((section, name))
        found += [(f"{section}.{name}.{var}", value) for var, value in _PER_NAME[section]]
    deadline.named[cwd] = found
    return found


def git_env(config: list[tuple[str, str]] | tuple[tuple[str, str], ...] = ()) -> dict[str, str]:
    """The environment git runs in: `_ENV_KEPT` of ours, `_ENV_EXTRA`, and `config` as
    `GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` (exact keys: a driver named `a=b` or `x.y` is
    still one key, where `-c` would split it)."""
    env = {name: os.environ[name] for name in _ENV_KEPT if name in os.environ}
    env.update(_ENV_EXTRA)
    env["GIT_CONFIG_COUNT"] = str(len(config))
    for n, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    return env


def run(
    argv: list[str],
    timeout: float,
    *,
    config: list[tuple[str, str]] | tuple[tuple[str, str], ...] = _SAFE_CONFIG,
) -> tuple[int, bytes, bytes]:
    """`subprocess.run(argv, capture_output=True, stdin=DEVNULL, timeout=…)` for git, in
    `git_env(config)`: (exit code, stdout, stderr); TimeoutError (the process killed) or
    OSError.

    Not `subprocess`: its import (`selectors`, `signal`, `threading`, `contextlib`, locale)
    is a share of a hook's whole process, measured against `python -c pass`; `posix_spawn`
    and `poll` are what it would use here anyway."""
    import select

    until = time.monotonic() + timeout
    env = git_env(config)
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
