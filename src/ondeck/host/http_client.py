"""The session hooks' HTTP client: one request to ondeck's own server, on a plain socket.

`http.client` would cost a hook more than its whole request: it imports the `email` package
to parse headers (about 2x `python -c pass` on its own). The hooks talk to one server, ondeck
itself (this machine's, or in client mode `ONDECK_SERVER_URL`), without redirects or proxies,
so a request is written and its answer read here: HTTP/1.1 with `Connection: close`, a body
by Content-Length or chunked. Over http it uses the C module `_socket` itself: the `socket`
module around it builds its enums at import, a sizeable share of a hook's whole process.

To this machine's own server it goes through the owner-only socket (`owner_socket`,
host/channel.py): the directory checked first, the listener's user checked after the
connect and before a byte is sent.

Over https it pays for `ssl` (and `socket`, which `ssl` needs) and verifies the server's
certificate and name against the system's trust store, as `ssl.create_default_context()`
does; a self-signed server is trusted by naming its certificate in `SSL_CERT_FILE` (OpenSSL's
own variable, which that context honours), not by turning verification off.
"""

from __future__ import annotations

import _socket

MAX_RESPONSE = 4 * 1024 * 1024
# A body this large is announced first (`Expect: 100-continue`): a server that refuses it
# (413, over its limit) says so before it is sent, instead of resetting the connection
# under a client still sending ("Connection reset by peer" named nothing).
EXPECT_OVER = 64 * 1024
EXPECT_WAIT_S = 1.0  # a server that never answers the announcement is sent the body anyway


class HttpError(OSError):
    """No usable answer: the server is not there, too slow, or answered garbage."""


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def query_string(values: dict[str, str]) -> str:
    """`urllib.parse.urlencode` with `quote_via=quote` (%20, not +), without its import."""

    def quote(text: str) -> str:
        raw = text.encode("utf-8", "surrogatepass")
        return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in raw)

    return "&".join(f"{quote(name)}={quote(value)}" for name, value in values.items())


def split_url(base: str) -> tuple[str, int]:
    """`http(s)://host:port` (IPv6 in brackets) → (host, port)."""
    scheme, sep, rest = base.partition("://")
    if not sep or scheme not in ("http", "https"):
        raise HttpError(f"not an http:// or https:// URL: {base[:80]}")
    authority = rest.split("/", 1)[0]
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = authority.rpartition(":") if ":" in authority else (authority, "", "")
    if not port.isdigit():
        port = "443" if scheme == "https" else "80"
    return host, int(port)


def request(
    base: str,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 3.0,
    owner_socket: str | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers in lower case, body); raises HttpError when there is no answer.
    With `owner_socket` (a Unix socket's path) the request goes there and nowhere else; `base`
    gives only its Host header."""
    host, port = split_url(base)
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: close"]
    for name, value in (headers or {}).items():
        if "\r" in value or "\n" in value:
            raise HttpError(f"header {name} holds a line break")
        lines.append(f"{name}: {value}")
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    announce = body is not None and len(body) > EXPECT_OVER
    if announce:
        lines.append("Expect: 100-continue")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    try:
        if owner_socket is not None:
            sock = _connect_owner(owner_socket, timeout)
        elif base.startswith("https:"):
            sock = _connect_tls(host, port, timeout)
        else:
            sock = _connect(host, port, timeout)
        try:
            if announce:
                sock.sendall(head)
                early = _early_answer(sock, min(EXPECT_WAIT_S, timeout), timeout)
                if early is not None:
                    return _read_response(early + _rest(sock, refused=True))
                sock.sendall(body or b"")
            else:
                sock.sendall(head + (body or b""))
            chunks = [_rest(sock)]
        finally:
            sock.close()
    except (OSError, ValueError) as exc:
        raise HttpError(str(exc) or type(exc).__name__) from None
    return _read_response(b"".join(chunks))


def _rest(sock: _socket.socket, *, refused: bool = False) -> bytes:
    """The rest of the answer, to the connection's close. `refused`: a server that refused a
    body unread may reset the connection after its answer; what came before the reset is it."""
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = sock.recv(65536)
        except OSError:
            if not refused:
                raise
            chunk = b""
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_RESPONSE:
            raise HttpError("answer too large")


def _early_answer(sock: _socket.socket, wait: float, timeout: float) -> bytes | None:
    """After an announced body's head: None to send the body (`100 Continue`, or silence),
    else the start of the server's final answer (it refused the body unseen)."""
    sock.settimeout(wait)
    got = b""
    try:
        while b"\r\n\r\n" not in got:
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
    except TimeoutError:
        if not got:
            return None
    finally:
        sock.settimeout(timeout)
    if got.startswith(b"HTTP/1.1 100") or got.startswith(b"HTTP/1.0 100"):
        rest = got.partition(b"\r\n\r\n")[2]
        if rest:  # the final answer came right behind: nothing more to send
            return rest
        return None
    return got


def _connect_owner(path: str, timeout: float) -> _socket.socket:
    """A connection to the socket at `path`, in a directory that is this user's alone, to a
    process of this user: ChannelRefused (an HttpError's sibling, both OSError) otherwise."""
    import os

    from ondeck.host.channel import ChannelRefused, open_private_dir, through

    directory, name = os.path.split(path)
    fd = open_private_dir(directory)
    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(through(fd, name, path))
            uid = _peer_uid(sock)
            if uid is not None and uid != os.getuid():
                raise ChannelRefused(f"{path} is served by user id {uid}, not by this user")
        except BaseException:
            sock.close()
            raise
    finally:
        os.close(fd)
    return sock


def owner_socket_problem(path: str, timeout: float = 3.0) -> str | None:
    """Why nothing may be sent through the owner socket at `path`, or None: all a hook
    checks before it sends (the directory the owner's alone and no symlink, the socket a
    socket of this user and no symlink, a process of this user listening), for a sender that
    cannot ask the kernel itself (the Claude Code mod: claude_plugin/hooks/register.tsx).
    Connects and sends nothing."""
    import os
    import stat

    from ondeck.host.channel import open_private_dir

    directory, name = os.path.split(path)
    try:
        fd = open_private_dir(directory)
        try:
            found = os.lstat(name, dir_fd=fd)
        finally:
            os.close(fd)
        if not stat.S_ISSOCK(found.st_mode):
            return f"{path} is not a socket" + (
                " (a symlink)" if stat.S_ISLNK(found.st_mode) else ""
            )
        if found.st_uid != os.getuid():
            return f"{path} belongs to user id {found.st_uid}, not to this user ({os.getuid()})"
        _connect_owner(path, timeout).close()
    except OSError as exc:
        return str(exc) or type(exc).__name__
    return None


def _peer_uid(sock: _socket.socket) -> int | None:
    """The user id of the process listening on the other end (Linux: SO_PEERCRED's pid, uid,
    gid as three C ints), or None where the kernel does not say."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return None
    import sys

    raw = sock.getsockopt(_socket.SOL_SOCKET, option, 12)
    return int.from_bytes(raw[4:8], sys.byteorder)


def _connect_tls(host: str, port: int, timeout: float) -> _socket.socket:
    """A verified TLS connection (the system's trust store, or `SSL_CERT_FILE`)."""
    import socket
    import ssl

    context = ssl.create_default_context()
    raw = socket.create_connection((host, port), timeout=timeout)
    try:
        return context.wrap_socket(raw, server_hostname=host)
    except BaseException:
        raw.close()
        raise


def _connect(host: str, port: int, timeout: float) -> _socket.socket:
    """`socket.create_connection`: each address the name has, until one connects."""
    error: OSError | None = None
    # An ASCII name (an address, `localhost`) as bytes: a str is encoded with the `idna`
    # codec first, whose import (`unicodedata`, `stringprep`) costs most of a `python -c
    # pass`, to give the same bytes.
    name: str | bytes = host.encode("ascii") if host.isascii() else host
    for family, kind, proto, _, address in _socket.getaddrinfo(name, port, 0, _socket.SOCK_STREAM):
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
            return sock
        except OSError as exc:
            error = exc
            sock.close()
    raise error or OSError(f"no address for {host}")


def _read_response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, sep, rest = raw.partition(b"\r\n\r\n")
    if not sep:
        raise HttpError("incomplete answer")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise HttpError(f"not an HTTP answer: {status_line[:60]!r}")
    headers = {}
    for line in header_lines:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunk(rest)
    elif "content-length" in headers:
        length = headers["content-length"]
        if not length.isdigit() or len(rest) < int(length):
            raise HttpError("answer cut short")
        body = rest[: int(length)]
    else:
        body = rest
    return int(parts[1]), headers, body


def _unchunk(data: bytes) -> bytes:
    out: list[bytes] = []
    at = 0
    while True:
        end = data.find(b"\r\n", at)
        if end < 0:
            raise HttpError("bad chunked answer")
        size_text = data[at:end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise HttpError("bad chunked answer") from None
        if size == 0:
            return b"".join(out)
        start = end + 2
        if len(data) < start + size:
            raise HttpError("answer cut short")
        out.append(data[start : start + size])
        at = start + size + 2
