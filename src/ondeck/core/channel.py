"""The owner-only channel: the Unix domain socket on which `ondeck serve` also listens, for
the hooks of this machine (issue 21 item 2).

Any user of the machine can listen on 127.0.0.1:$ONDECK_PORT while ondeck is down; only the
owner can make or open a socket in a directory that is the owner's alone. So a hook on the
server's own machine talks to its server only through `socket_path()`, never through the TCP
port: a listener that is not ondeck gets neither a token nor a byte of text.

    where   `$ONDECK_DATA_DIR/run/server-<port>.sock`: beside the spool, so the server and
            the hooks find it from the same settings (`$XDG_RUNTIME_DIR` is set in a login
            session and not in a system service, so the two would disagree)
    checks  the directory is a real directory (not a symlink), owned by this user and of
            no group or world access (mode 0700): else it is refused, by the server before
            it binds and by a hook before it connects; a hook also asks the kernel who
            listens (SO_PEERCRED) and talks only to a process of its own user
    paths   a hook connects through `/proc/self/fd/<dir>/…` of the directory it checked, so
            the directory cannot be swapped between the check and the connect, and a long
            data directory does not meet the 108-byte limit of a socket's path

Imported by every hook: `os` only (the socket itself is `_socket`, in entrypoints/hook_http).
"""

from __future__ import annotations

import os

DIR_NAME = "run"


class ChannelRefused(OSError):
    """The socket's directory is not the owner's alone: nothing is sent through it."""


def socket_dir(data_dir: str) -> str:
    return os.path.join(data_dir, DIR_NAME)


def socket_name(port: int) -> str:
    return f"server-{port}.sock"


def socket_path(data_dir: str, port: int) -> str:
    return os.path.join(socket_dir(data_dir), socket_name(port))


def dir_problem(st: os.stat_result, path: str) -> str | None:
    """Why the directory of `st` is not the owner's alone, or None."""
    import stat

    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != os.getuid():
        return f"{path} belongs to user id {st.st_uid}, not to this user ({os.getuid()})"
    if st.st_mode & 0o077:
        return (
            f"{path} has mode {st.st_mode & 0o777:o}: the group or others may reach it "
            "(it must be 0700)"
        )
    return None


def open_private_dir(path: str) -> int:
    """A descriptor of the directory `path` once it is checked (ChannelRefused saying why);
    FileNotFoundError when it is not there (no server has made it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:  # ELOOP, ENOTDIR: a symlink or a file where the directory goes
        raise ChannelRefused(f"{path}: not a directory of its own ({exc.strerror})") from None
    try:
        problem = dir_problem(os.fstat(fd), path)
    except OSError:
        os.close(fd)
        raise
    if problem is not None:
        os.close(fd)
        raise ChannelRefused(problem)
    return fd


def through(fd: int, name: str, path: str) -> str:
    """The path to give connect() or bind() for `name` in the directory of `fd` (checked):
    `/proc/self/fd/<fd>/name` where /proc is there, else `path` itself."""
    proc = f"/proc/self/fd/{fd}"
    return f"{proc}/{name}" if os.path.isdir(proc) else path
