"""Files only the owner can read: every file ondeck writes is 0600, every directory it makes
0700, whatever the umask. One home for it, so a new writer cannot forget it.

    make_dirs(path)          the directory and its missing parents, each made 0700; with
                             `own=True` (a directory that is ondeck's alone: the backups, the
                             spool) an existing one found too open is tightened too
    open_file(path, flags)   os.open with 0600; a file found too open is tightened
    create_file(path)        a new, empty file, 0600 (refused when it exists)
    write_new_text(…)        a new text file, 0600, written whole
    tighten(path)            a file or directory found open to others: their bits taken away
                             (0644 becomes 0600, 0755 0700; the owner's bits stay)

A file's mode at creation is the mode asked for minus the umask, so asking for 0600 gives
0600 or less under any umask. SQLite makes its `-wal`, `-shm` and `-journal` files with the
database file's mode: a database file made here keeps its companions private too.

What was found too open is tightened and logged, one line each (`ondeck.files`). Pure
standard library, with `logging` imported only when there is something to say: the session
hooks use this module, and `logging` costs them a third of their budget.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable

FILE_MODE = 0o600
DIR_MODE = 0o700
# Any bit for the group or others.
_OPEN_BITS = 0o077

Where = str | os.PathLike[str]


def _say(message: str) -> None:
    from ondeck.core import logs

    logs.logger("ondeck.files").warning("%s", message)


def make_dirs(path: Where, *, own: bool = False) -> None:
    """`path` as a directory; the ones made here 0700. `own`: tighten it if it exists."""
    path = os.fspath(path)
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        if own and os.path.isdir(path):
            tighten(path)
        return
    except FileNotFoundError:
        parent = os.path.dirname(os.path.abspath(path))
        if parent == os.path.abspath(path):
            raise
        make_dirs(parent)
        try:
            os.mkdir(path, DIR_MODE)
        except FileExistsError:  # made by another process meanwhile
            return
    # mkdir's mode passes through the umask too: 0700 minus any umask is 0700 or less, and
    # less (a umask of 0o277) would lock the owner out of their own directory.
    with contextlib.suppress(OSError):
        os.chmod(path, DIR_MODE)


def open_file(path: Where, flags: int) -> int:
    """`os.open(path, flags, 0o600)`; an existing file found too open is tightened."""
    fd = os.open(path, flags, FILE_MODE)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode) and mode & _OPEN_BITS:
            os.fchmod(fd, _owners(mode))
            _say(
                f"{os.fspath(path)} was readable by others ({_octal(mode)}): "
                f"now {_owners(mode):04o}"
            )
    except OSError:
        os.close(fd)
        raise
    return fd


def create_file(path: Where) -> None:
    """A new, empty file only the owner reads; FileExistsError when there is one."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))


def write_new_text(path: Where, text: str) -> None:
    """A new text file (UTF-8) only the owner reads, written whole; FileExistsError when
    there is one."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


def tighten(path: Where) -> bool:
    """Make `path` the owner's alone if it is not (0600 a file, 0700 a directory), saying
    so; whether it changed anything. A missing path is nothing to do; one that cannot be
    changed (another user's) is said and left."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    if not mode & _OPEN_BITS:
        return False
    wanted = _owners(mode)
    try:
        os.chmod(path, wanted)
    except OSError as exc:
        _say(
            f"{os.fspath(path)} is readable by others ({_octal(mode)}) and cannot be "
            f"changed: {exc.strerror or exc}"
        )
        return False
    _say(f"{os.fspath(path)} was readable by others ({_octal(mode)}): now {wanted:04o}")
    return True


def tighten_all(paths: Iterable[Where]) -> int:
    """`tighten` each path; how many it changed."""
    return sum(tighten(path) for path in paths)


def sqlite_files(database: Where) -> list[str]:
    """A SQLite database file and the companions SQLite keeps beside it."""
    base = os.fspath(database)
    return [base, *(base + suffix for suffix in ("-wal", "-shm", "-journal"))]


def _owners(mode: int) -> int:
    """The mode without the group's and others' bits. The owner's stay as they were: a
    file made read-only on purpose stays read-only (0444 becomes 0400, not 0600)."""
    return stat.S_IMODE(mode) & 0o700


def _octal(mode: int) -> str:
    return f"{stat.S_IMODE(mode):04o}"
