"""Starting the HTTP server (uvicorn) with the jobs loop in-process, over TLS when given a
certificate."""

from __future__ import annotations

import errno
import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from ondeck.core.errors import ConfigError
from ondeck.host.channel import SCOPE_MARK, UNKNOWN_PEER
from ondeck.host.settings import Settings


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Tls:
    """The certificate (chain) and its key, checked: they load as a pair."""

    certfile: Path
    keyfile: Path | None


def check_tls(certfile: Path | None, keyfile: Path | None) -> Tls | None:
    """The TLS files to serve with, or None for plain HTTP; one `ConfigError` line when they
    cannot be used, so the server never binds and then fails its first handshake."""
    if certfile is None:
        if keyfile is not None:
            raise ConfigError(
                f"ONDECK_SSL_KEYFILE={keyfile}: a key without ONDECK_SSL_CERTFILE "
                "(--ssl-certfile) serves nothing"
            )
        return None
    import ssl

    for name, path in (("ONDECK_SSL_CERTFILE", certfile), ("ONDECK_SSL_KEYFILE", keyfile)):
        if path is None:
            continue
        try:
            with path.open("rb") as handle:
                handle.read(1)
        except OSError as exc:
            raise ConfigError(f"{name}={path}: cannot read it: {exc.strerror}") from None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        # An empty password: an encrypted key fails here instead of prompting on a terminal
        # that a service does not have.
        context.load_cert_chain(certfile, keyfile, password=lambda: b"")
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(
            f"ONDECK_SSL_CERTFILE={certfile}: not a PEM certificate with its (unencrypted) "
            f"key{'' if keyfile else ' in the same file'}: {exc}"
        ) from None
    return Tls(certfile=certfile, keyfile=keyfile)


def check_exposure(settings: Settings, host: str) -> None:
    """Refuse to open the API and dashboard to the network without a token."""
    if not is_loopback(host) and not settings.token_value:
        raise ConfigError(
            f"ONDECK_HOST={host}: binding beyond loopback needs ONDECK_TOKEN "
            "(the API and dashboard would be open to the network)"
        )


def check_bind(settings: Settings, host: str, port: int) -> None:
    """Refuse what would be unsafe or cannot work, with one line, before anything starts."""
    check_exposure(settings, host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"ONDECK_PORT={port}: port already in use on {host}") from None
            raise ConfigError(
                f"ONDECK_HOST={host}: cannot bind port {port}: {exc.strerror}"
            ) from None


def _private_dir(path: Path) -> None:
    """Make `path` (mode 0700) or check it is the owner's alone; ConfigError saying why."""
    from ondeck.host.channel import dir_problem

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise ConfigError(f"cannot make the socket directory {path}: {exc.strerror}") from None
    try:
        problem = dir_problem(path.lstat(), str(path))
    except OSError as exc:
        raise ConfigError(f"socket directory {path}: {exc.strerror}") from None
    if problem is not None:
        raise ConfigError(
            f"refusing the socket directory: {problem}; remove it, or make it yours with "
            f"mode 0700 (chmod 700 {path})"
        )


def _clear_stale(path: Path, reach: str) -> None:
    """Remove the socket a server that is gone left behind; refuse a live one, or anything
    else in its place (the directory is the owner's alone: whatever is there, they put)."""
    import stat

    try:
        found = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(found.st_mode):
        raise ConfigError(f"{path} is there and is not a socket: move it away")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(reach)
        except OSError:  # nobody listens: a stale socket
            path.unlink(missing_ok=True)
            return
    raise ConfigError(f"another ondeck server listens on {path} (same data directory and port)")


def owner_socket(settings: Settings, port: int) -> Path:
    """The owner-only socket of the server on `port` (the hooks look for the configured port's)."""
    from ondeck.host.channel import socket_path

    return Path(socket_path(str(settings.data_dir.expanduser()), port))


def owner_listener(path: Path) -> socket.socket:
    """The bound, listening owner-only socket (host/channel.py), mode 0600 in its 0700
    directory whatever the umask; ConfigError with the reason when it cannot be had. Bound
    through the checked directory's descriptor (no swap between check and bind, and no
    108-byte limit on the data directory's path)."""
    import os

    from ondeck.host.channel import ChannelRefused, open_private_dir, through

    _private_dir(path.parent)
    try:
        fd = open_private_dir(str(path.parent))
    except (ChannelRefused, OSError) as exc:
        raise ConfigError(f"refusing the socket directory: {exc}") from None
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        reach = through(fd, path.name, str(path))
        _clear_stale(path, reach)
        listener.bind(reach)
        os.chmod(path.name, 0o600, dir_fd=fd)
        listener.listen(128)
    except OSError as exc:
        listener.close()
        raise ConfigError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    except BaseException:
        listener.close()
        raise
    finally:
        os.close(fd)
    listener.setblocking(False)
    return listener


def _tell_hooks_the_store(settings: Settings, store_id: str) -> None:
    """The database's id, where this machine's hooks read what to expect of the server
    (host/channel.read_known): the owner's directory, not an answer of the server."""
    from ondeck.host.channel import write_known

    write_known(str(settings.data_dir.expanduser()), settings.url, store_id)


def _remove_own_socket(path: Path, inode: int) -> None:
    # Only the socket this server bound: a newer server may have taken the name since.
    try:
        if path.lstat().st_ino == inode:
            path.unlink()
    except OSError:
        pass


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        owner: socket.socket | None = None  # the owner-only socket, served beside TCP

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and self.owner is not None:
                await self._serve_owner(self.owner)

        async def _serve_owner(self, listener: socket.socket) -> None:
            """The socket served by the same app and server state as TCP (so a stop waits
            for its requests too), never over TLS (the directory is what protects it), and
            each request marked with the user id of the process that connected, as the
            kernel gives it (host/channel.SCOPE_MARK): api/access.admit_channel decides
            from it who the request is."""
            import asyncio

            base = self.config
            owned = uvicorn.Config(
                base.app,
                log_level="warning",
                access_log=False,
                log_config=None,
                proxy_headers=False,
                lifespan="off",
                timeout_keep_alive=base.timeout_keep_alive,
            )
            owned.load()
            loop = asyncio.get_running_loop()
            marked = _peer_marking(owned.http_protocol_class, owned.loaded_app)

            def protocol() -> asyncio.Protocol:
                made: asyncio.Protocol = marked(
                    config=owned,
                    server_state=self.server_state,
                    app_state=self.lifespan.state,
                    _loop=loop,
                )
                return made

            self.servers.append(await loop.create_server(protocol, sock=listener))

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            # uvicorn re-raises the signal after shutting down; a requested stop is a clean
            # stop for us (exit 0, as `ondeck jobs` does), which systemd and tests expect.
            self._captured_signals.clear()

    return Server


def _peer_marking(protocol: type, app: Any) -> type:
    """uvicorn's HTTP protocol whose connections each serve `app` with their requests
    marked with the peer's user id, read once when the connection is made (the kernel's
    record of who connected: it cannot change for the connection's life)."""

    class Marked(protocol):  # type: ignore[misc]  # uvicorn's class, chosen at run time
        def connection_made(self, transport: Any) -> None:
            self.app = _mark_peer(app, _peer_uid(transport.get_extra_info("socket")))
            super().connection_made(transport)

    return Marked


def _peer_uid(sock: Any) -> int:
    """The user id of the process at the other end of a Unix socket (Linux's SO_PEERCRED:
    pid, uid, gid as three C ints); UNKNOWN_PEER where the kernel does not say, which is
    nobody's (api/access.admit_channel refuses it)."""
    import struct

    option = getattr(socket, "SO_PEERCRED", None)
    if sock is None or option is None:
        return UNKNOWN_PEER
    size = struct.calcsize("3i")
    try:
        return int(struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, size))[1])
    except (OSError, struct.error):
        return UNKNOWN_PEER


def _mark_peer(app: Any, uid: int) -> Any:
    async def marked_app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            scope = {**scope, SCOPE_MARK: uid}
        await app(scope, receive, send)

    return marked_app


def serve(
    settings: Settings, *, host: str, port: int, jobs: bool = True, tls: Tls | None = None
) -> None:
    import uvicorn

    from ondeck.entrypoints.api.app import create_app

    check_bind(settings, host, port)
    path = owner_socket(settings, port)
    owner = owner_listener(path)
    inode = path.lstat().st_ino
    try:
        from ondeck.entrypoints.gateway import open_to_serve

        engine = open_to_serve(settings)
        app = create_app(settings, engine, run_jobs=jobs)
        _tell_hooks_the_store(settings, app.state.store.store_id())
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            log_config=None,
            ssl_certfile=None if tls is None else tls.certfile,
            ssl_keyfile=None if tls is None else tls.keyfile,
            # X-Forwarded-For and -Proto only from the proxies the owner names: uvicorn's
            # default believes 127.0.0.1, so any local process could claim any address (and
            # dodge, or aim, the wrong-token limit of an address).
            proxy_headers=bool(settings.trusted_proxies),
            forwarded_allow_ips=list(settings.trusted_proxies) or [],
        )
        server = _server_class()(config)
        server.owner = owner
        server.run()
    finally:
        owner.close()
        _remove_own_socket(path, inode)
