"""Starting the HTTP server (uvicorn) with the jobs loop in-process."""

from __future__ import annotations

import errno
import ipaddress
import socket
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


def check_bind(settings: Settings, host: str, port: int) -> None:
    """Refuse what would be unsafe or cannot work, with one line, before anything starts."""
    if not is_loopback(host) and not settings.token_value:
        raise ConfigError(
            f"ONDECK_HOST={host}: binding beyond loopback needs ONDECK_TOKEN "
            "(the API and dashboard would be open to the network)"
        )
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


def serve(settings: Settings, *, host: str, port: int, jobs: bool = True) -> None:
    import uvicorn

    from ondeck.db import open_database
    from ondeck.entrypoints.api.app import create_app

    check_bind(settings, host, port)
    engine = open_database(settings.url)
    app = create_app(settings, engine, run_jobs=jobs)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, log_config=None
    )
    _server_class()(config).run()
