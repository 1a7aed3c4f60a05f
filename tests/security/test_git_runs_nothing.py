"""Reading git runs nothing a repository names.

Each test builds a real repository whose config names a program for one key (a script that
writes a marker file when run), makes the read that would reach it (the same reads the
hooks and the server make: host/git.py), and checks that the marker never appears, while
the read still gives its answer. Then the whole hook path and the whole server path, with
every key at once, and git's environment (no ondeck secret).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ondeck.host.git import changed_paths, commits_between, drift, read_repo
from ondeck.host.git_run import Deadline
from support.hooks import SESSION_ID, commit_file, git, new_repo, payload, run_hook
from support.pg import free_port
from support.served import serving


def pwn_script(tmp_path: Path) -> tuple[Path, Path]:
    """A program that leaves a marker (its arguments and environment) when run, and passes
    its input through (so a filter that ran would not break the read it ran for)."""
    marker = tmp_path / "ran.txt"
    script = tmp_path / "pwn.sh"
    script.write_text(f'#!/bin/sh\n{{ echo "ran: $0 $*"; env; }} >> "{marker}"\ncat\n')
    script.chmod(0o755)
    return script, marker


def signed_commit(repo: Path, signature: str) -> str:
    """A commit on HEAD carrying a `gpgsig` header (no key needed: verifying it is what
    would run the program)."""
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    parent = git(repo, "rev-parse", "HEAD")
    sig = "\n".join(" " + line if n else line for n, line in enumerate(signature.splitlines()))
    body = (
        f"tree {tree}\nparent {parent}\n"
        "author t <t@example.org> 1700000000 +0000\n"
        "committer t <t@example.org> 1700000000 +0000\n"
        f"gpgsig {sig}\n\nsigned (서명된) commit\n"
    )
    done = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-t", "commit", "-w", "--stdin"],
        input=body,
        capture_output=True,
        text=True,
        check=True,
    )
    sha = done.stdout.strip()
    git(repo, "update-ref", "HEAD", sha)
    return sha


PGP = "-----BEGIN PGP SIGNATURE-----\n\niQEzBAABCAAdFiEE\n-----END PGP SIGNATURE-----"
X509 = "-----BEGIN SIGNED MESSAGE-----\nMIIB\n-----END SIGNED MESSAGE-----"
SSH = "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----"


class Hostile:
    """A repository with a start commit, a session's work after it, and a config naming
    `script` for one key."""

    def __init__(self, root: Path, script: Path) -> None:
        self.root, self.script = root, script

    def config(self, key: str, value: str | None = None) -> None:
        git(self.root, "config", key, value if value is not None else str(self.script))


def base_repo(tmp_path: Path) -> tuple[Path, str]:
    repo = new_repo(tmp_path / "clone")
    commit_file(repo, ".gitattributes", "* filter=pwn diff=pwn\n", "attributes")
    commit_file(repo, "a.txt", "one\n", "a")
    start = git(repo, "rev-parse", "HEAD")
    commit_file(repo, "b.txt", "two\n", "b")
    return repo, start


def partial_clone(tmp_path: Path) -> tuple[Path, str]:
    """A clone without trees (`--filter=tree:0`): reading an old commit's tree fetches it
    from the promisor remote, which is where a program could be run."""
    origin = new_repo(tmp_path / "origin")
    commit_file(origin, "a.txt", "one\n", "a")
    start = git(origin, "rev-parse", "HEAD")
    commit_file(origin, "sub/b.txt", "two\n", "b")
    git(origin, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--filter=tree:0", f"file://{origin}", str(clone)],
        check=True,
        capture_output=True,
    )
    return clone, start


def _filter_clean(r: Hostile) -> None:
    r.config("filter.pwn.clean")
    r.config("filter.pwn.required", "true")


def _filter_process(r: Hostile) -> None:
    r.config("filter.pwn.process")


def _fsmonitor(r: Hostile) -> None:
    r.config("core.fsmonitor")


def _signature(key: str, signature: str, *extra: tuple[str, str]) -> Callable[[Hostile], None]:
    def setup(r: Hostile) -> None:
        r.config("log.showSignature", "true")
        r.config(key)
        for k, v in extra:
            r.config(k, v)
        signed_commit(r.root, signature)

    return setup


def _ssh_allowed(r: Hostile) -> None:
    allowed = r.root.parent / "allowed_signers"
    allowed.write_text("t@example.org ssh-ed25519 AAAA\n")
    _signature("gpg.ssh.program", SSH, ("gpg.ssh.allowedSignersFile", str(allowed)))(r)


def _uploadpack(r: Hostile) -> None:
    r.config("remote.origin.uploadpack")


def _ext_transport(r: Hostile) -> None:
    r.config("protocol.ext.allow", "always")
    r.config("remote.origin.url", f"ext::{r.script} %S")


def _ssh_command(r: Hostile) -> None:
    r.config("protocol.ssh.allow", "always")
    r.config("remote.origin.url", "ssh://git.example.org/acme/site.git")
    r.config("core.sshCommand")


KEYS: dict[str, tuple[Callable[[Path], tuple[Path, str]], Callable[[Hostile], None]]] = {
    "filter.clean": (base_repo, _filter_clean),
    "filter.process": (base_repo, _filter_process),
    "core.fsmonitor": (base_repo, _fsmonitor),
    "gpg.program": (base_repo, _signature("gpg.program", PGP)),
    "gpg.openpgp.program": (base_repo, _signature("gpg.openpgp.program", PGP)),
    "gpg.x509.program": (base_repo, _signature("gpg.x509.program", X509)),
    "gpg.ssh.program": (base_repo, _ssh_allowed),
    "remote.uploadpack (lazy fetch)": (partial_clone, _uploadpack),
    "ext:: transport (lazy fetch)": (partial_clone, _ext_transport),
    "core.sshCommand (lazy fetch)": (partial_clone, _ssh_command),
}


def _every_read(root: Path, start: str) -> None:
    """Every read the hooks and the server make of a repository."""
    deadline = Deadline(10)
    repo = read_repo(str(root), deadline, remotes=True)
    assert repo.head is not None
    (root / "a.txt").touch()  # stat-dirty: a worktree diff hashes it again
    time.sleep(0.01)
    commits_between(str(root), start, repo.head, deadline)
    changed_paths(str(root), start, deadline)
    drift(str(root), start, deadline, repo=repo)


@pytest.mark.parametrize("key", list(KEYS))
def test_no_key_of_a_repositorys_config_runs_a_program(tmp_path: Path, key: str) -> None:
    script, marker = pwn_script(tmp_path)
    make, setup = KEYS[key]
    root, start = make(tmp_path)
    setup(Hostile(root, script))
    _every_read(root, start)
    assert not marker.exists(), marker.read_text()[:400]


def test_the_reads_still_answer_in_a_hostile_repository(tmp_path: Path) -> None:
    script, marker = pwn_script(tmp_path)
    root, start = base_repo(tmp_path)
    r = Hostile(root, script)
    for setup in (_filter_clean, _fsmonitor, _signature("gpg.program", PGP)):
        setup(r)
    (root / "a.txt").write_text("changed (바뀜)\n")
    deadline = Deadline(10)
    head = read_repo(str(root), deadline).head
    assert head is not None
    log = commits_between(str(root), start, head, deadline)
    assert log.items is not None and [s for _, s in log.items] == ["signed (서명된) commit", "b"]
    assert changed_paths(str(root), start, deadline).items == ["a.txt", "b.txt"]
    assert not marker.exists()


def test_a_partial_clone_never_fetches_it_says_what_it_could_not_read(tmp_path: Path) -> None:
    root, start = partial_clone(tmp_path)
    listing = changed_paths(str(root), start, Deadline(10))
    assert listing.items is None and listing.note and listing.note.startswith("files not read")


# --- the hook path and the server path, every key at once ---------------------------------


def everything_hostile(tmp_path: Path) -> tuple[Path, Path, str]:
    """One clone with every key that a plain (not partial) clone can carry."""
    script, marker = pwn_script(tmp_path)
    root, start = base_repo(tmp_path)
    r = Hostile(root, script)
    for setup in (_filter_clean, _fsmonitor, _signature("gpg.program", PGP)):
        setup(r)
    r.config("diff.pwn.textconv")
    r.config("diff.pwn.command")
    r.config("diff.external")
    r.config("core.pager")
    r.config("pager.log")
    hooks = root / ".git" / "hooks"
    for name in ("post-index-change", "reference-transaction", "post-checkout", "pre-commit"):
        (hooks / name).write_text(f"#!/bin/sh\necho hook {name} >> '{marker}'\n")
        (hooks / name).chmod(0o755)
    return root, marker, start


def git_spy(tmp_path: Path) -> tuple[str, Path]:
    """A `git` first on PATH that records the environment it was given, then runs git."""
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    spy_dir = tmp_path / "spy"
    spy_dir.mkdir()
    seen = tmp_path / "git-env.txt"
    spy = spy_dir / "git"
    git_path = real.stdout.strip()
    spy.write_text(f'#!/bin/sh\nenv >> "{seen}"\necho --- >> "{seen}"\nexec {git_path} "$@"\n')
    spy.chmod(0o755)
    return f"{spy_dir}:{os.environ['PATH']}", seen


def _session(root: Path, env: dict[str, str], transcript: Path) -> list[dict[str, str]]:
    outs = []
    for verb, name in (("session-start", "start"), ("stop", "stop"), ("session-end", "end")):
        if verb == "session-end":
            (root / "a.txt").touch()
            (root / "c.txt").write_text("new\n")
        data = payload(name, cwd=str(root), transcript_path=str(transcript))
        done = run_hook(verb, data, env)
        assert done.returncode == 0, done.stderr
        outs.append(json.loads(done.stdout) if done.stdout.strip() else {})
    return outs


def _wait_for_changes(engine: object, tries: int = 200) -> object:
    from ondeck.sessions import records as svc

    s = None
    for _ in range(tries):
        with engine.connect() as conn:  # type: ignore[attr-defined]
            s = svc.find_session(conn, SESSION_ID)
        if s.files is not None or s.git_note:
            return s
        time.sleep(0.05)
    return s


SECRET_TOKEN = "ondeck-token-that-git-must-never-see-0123456789"


def test_the_hook_path_runs_nothing_and_hands_git_no_secret(
    engine: object, db_url: str, tmp_path: Path
) -> None:
    root, marker, _ = everything_hostile(tmp_path)
    path, seen = git_spy(tmp_path)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    env = {
        "PATH": path,
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_DATA_DIR": str(tmp_path / "data"),
        "ONDECK_PORT": str(free_port()),  # nothing listens: the hooks store themselves
        "ONDECK_TOKEN": SECRET_TOKEN,
        "PGPASSWORD": SECRET_TOKEN,
        "GIT_DIR": str(tmp_path / "elsewhere"),
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor={root.parent / 'pwn.sh'}'",
    }
    _session(root, env, transcript)
    s = _wait_for_changes(engine)
    assert not marker.exists(), marker.read_text()[:400]
    assert s.files is not None and "c.txt" in s.files["paths"], s  # type: ignore[attr-defined]
    assert s.commits is not None  # type: ignore[attr-defined]
    calls = seen.read_text()
    assert calls.count("---") >= 3, "the hooks ran git"
    for leaked in ("ONDECK_", SECRET_TOKEN, db_url, "GIT_DIR=", "GIT_CONFIG_PARAMETERS"):
        assert leaked not in calls, leaked


@pytest.mark.slow
def test_the_server_path_runs_nothing_and_hands_git_no_secret(
    engine: object, db_url: str, tmp_path: Path
) -> None:
    root, marker, _ = everything_hostile(tmp_path)
    path, seen = git_spy(tmp_path)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    port = free_port()
    common = {
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_DATA_DIR": str(tmp_path / "data"),
        "ONDECK_PORT": str(port),
        "ONDECK_TOKEN": SECRET_TOKEN,
        "ONDECK_DEBUG": "1",
        "ONDECK_TZ": "UTC",
    }
    server_env = {**os.environ, **common, "PATH": path}
    with serving(server_env, "--no-jobs", url=f"http://127.0.0.1:{port}"):
        transcript.write_text("")
        env = dict(common)
        outs = []
        for verb, name in (("session-start", "start"), ("stop", "stop"), ("session-end", "end")):
            if verb == "session-end":
                (root / "a.txt").touch()
                (root / "c.txt").write_text("new\n")
            data = payload(name, cwd=str(root), transcript_path=str(transcript))
            done = run_hook(verb, data, env)
            assert done.returncode == 0, done.stderr
            assert f"stored through {tmp_path}" in done.stderr, done.stderr  # the owner socket
            outs.append(done)
        s = _wait_for_changes(engine)
    assert not marker.exists(), marker.read_text()[:400]
    assert s.files is not None and "c.txt" in s.files["paths"], s  # type: ignore[attr-defined]
    calls = seen.read_text()
    assert calls.count("---") >= 3, "the server ran git"
    for leaked in ("ONDECK_", SECRET_TOKEN, db_url):
        assert leaked not in calls, leaked
