"""The owner-only channel: the Unix domain socket on which `ondeck serve` also listens, for
the hooks of this machine.

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

Imported by every hook: `os` only (the socket itself is `_socket`, in host/http_client).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from collections.abc import Mapping

DIR_NAME = "run"

# The ASGI scope's mark of a request that came over the socket (entrypoints/server/serve.py):
# the user id the kernel gives for the process at the other end (SO_PEERCRED, read when it
# connected), or -1 when the kernel did not say. Who that is decides who the request is
# (api/access.admit_channel), whatever token it carries.
SCOPE_MARK = "ondeck.owner_channel"
UNKNOWN_PEER = -1


def channel_peer(scope: Mapping[str, object]) -> int | None:
    """The peer's user id of a request over the owner socket (UNKNOWN_PEER when the kernel
    did not say); None for a request that did not come over it (TCP)."""
    if SCOPE_MARK not in scope:
        return None
    uid = scope[SCOPE_MARK]
    return uid if isinstance(uid, int) and not isinstance(uid, bool) else UNKNOWN_PEER


def from_owner(scope: Mapping[str, object]) -> bool:
    """Whether the request came over the owner socket from a process of the user this
    server runs as. An unknown peer is nobody's (fail closed)."""
    uid = channel_peer(scope)
    return uid is not None and uid != UNKNOWN_PEER and uid == os.getuid()


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


# --- the store id a hook expects ------------------------------------------------------------

KNOWN_NAME = "store.json"


def _key(salt: str, url: str) -> str:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover
        from hashlib import sha256
    return str(sha256(f"{salt}\n{url}".encode()).hexdigest())


def _entries(fd: int) -> list[dict[str, str]]:
    import json

    try:
        handle = os.open(KNOWN_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        with os.fdopen(handle, "rb") as found:
            data = json.loads(found.read(16384))
    except (OSError, ValueError):
        return []
    listed = data.get("stores") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return []
    return [
        e
        for e in listed
        if isinstance(e, dict) and all(isinstance(e.get(k), str) for k in KNOWN_KEYS)
    ]


KNOWN_KEYS = ("salt", "key", "store_id")
KNOWN_MAX = 8  # databases remembered (configs sharing a data directory)


def read_known(data_dir: str, url: str) -> str | None:
    """The id of the database at `url`, as this machine's owner last learned it from the
    database itself (a hook that stored there, or the server at its start): None when it is
    not known. Read from the owner-only directory, never asked of a listener. A URL is kept
    only as a salted hash (it may hold a password)."""
    try:
        fd = open_private_dir(socket_dir(data_dir))
    except OSError:
        return None
    try:
        entries = _entries(fd)
    finally:
        os.close(fd)
    for entry in entries:
        if entry["key"] == _key(entry["salt"], url):
            return entry["store_id"]
    return None


def write_known(data_dir: str, url: str, store_id: str) -> None:
    """Remember `store_id` as the id of the database at `url` (mode 0600 in the 0700
    directory, made if missing; replaced whole, never half written). Best effort: a hook
    that cannot write it only keeps storing in the database itself."""
    import json

    path = socket_dir(data_dir)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        fd = open_private_dir(path)
    except OSError:
        return
    try:
        entries = _entries(fd)
        others = [e for e in entries if e["key"] != _key(e["salt"], url)]
        if any(e["store_id"] == store_id for e in entries if e not in others):
            return  # known already
        salt = os.urandom(16).hex()
        mine = {"salt": salt, "key": _key(salt, url), "store_id": store_id}
        text = json.dumps({"stores": [mine, *others][:KNOWN_MAX]})
        temporary = f".{KNOWN_NAME}.{os.getpid()}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        handle = os.open(temporary, flags, 0o600, dir_fd=fd)
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.replace(temporary, KNOWN_NAME, src_dir_fd=fd, dst_dir_fd=fd)
    except OSError:
        pass
    finally:
        os.close(fd)
