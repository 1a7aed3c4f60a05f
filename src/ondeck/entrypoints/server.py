"""Starting the HTTP server (uvicorn) with the jobs loop in-process, over TLS when given a
certificate."""

from __future__ import annotations

import errno
import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from ondeck.core.config import Settings
from ondeck.core.errors import ConfigError


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


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            # uvicorn re-raises the signal after shutting down; a requested stop is a clean
            # stop for us (exit 0, as `ondeck jobs` does), which systemd and tests expect.
            self._captured_signals.clear()

    return Server


def serve(
    settings: Settings, *, host: str, port: int, jobs: bool = True, tls: Tls | None = None
) -> None:
    import uvicorn

    from ondeck.db import open_database
    from ondeck.entrypoints.api.app import create_app

    check_bind(settings, host, port)
    engine = open_database(settings.url)
    app = create_app(settings, engine, run_jobs=jobs)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        log_config=None,
        ssl_certfile=None if tls is None else tls.certfile,
        ssl_keyfile=None if tls is None else tls.keyfile,
        # X-Forwarded-For and -Proto only from the proxies the owner names: uvicorn's default
        # believes 127.0.0.1, so any local process could claim any address (and dodge, or
        # aim, the wrong-token limit of an address).
        proxy_headers=bool(settings.trusted_proxies),
        forwarded_allow_ips=list(settings.trusted_proxies) or [],
    )
    _server_class()(config).run()
