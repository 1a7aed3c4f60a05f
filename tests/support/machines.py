"""Two machines on one host: a server with its database, and a client that has
only `ONDECK_SERVER_URL` and a device token. Each is a home directory of its own; every
command runs as a real `ondeck` process with that machine's environment.

    with Server.start(tmp_path / "server") as server:
        laptop = server.client(tmp_path / "laptop", server.token("laptop"))
        done = laptop.ondeck("task", "add", "배포 준비", "--json")

`HomeServer` is a server machine that a test stops and starts again (`ondeck serve
--no-jobs`, its own SQLite database unless given another).
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support import served
from support.pg import free_port

ONDECK = str(Path(sys.executable).with_name("ondeck"))
ADMIN_TOKEN = "admin-token-for-the-server-0123456789abcdef0123456789abcdef"


def home_env(home: Path, **settings: str) -> dict[str, str]:
    """An environment with `home` as the home directory and nothing of ondeck's but
    `settings` (given without the ONDECK_ prefix)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ONDECK_", "XDG_"))}
    for name in (".config", ".local/share", ".local/state", ".cache"):
        (home / name).mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        ONDECK_TZ="UTC",
        **{f"ONDECK_{k.upper()}": v for k, v in settings.items()},
    )
    return env


@dataclass
class Machine:
    home: Path
    env: dict[str, str]

    def ondeck(
        self, *args: str, stdin: str | None = None, timeout: float = 60, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [ONDECK, *args],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd or self.home,
        )

    def json(self, *args: str) -> Any:
        done = self.ondeck(*args)
        assert done.returncode == 0, (args, done.stderr)
        return json.loads(done.stdout)


@dataclass
class Server(Machine):
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    clients: list[Machine] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    @contextmanager
    def start(cls, home: Path, **settings: str) -> Iterator[Server]:
        port = free_port()
        env = home_env(home, token=ADMIN_TOKEN, port=str(port), tick_seconds="2", **settings)
        server = cls(home=home, env=env, port=port)
        server.run()
        try:
            yield server
        finally:
            server.stop()

    def run(self) -> None:
        self.proc = served.start(
            self.env, "--port", str(self.port), url=self.url, log=self.home / "serve.log"
        )

    def stop(self) -> None:
        served.stop(self.proc)
        self.proc = None

    def token(self, name: str, scope: str = "write") -> str:
        """A device token made on the server (the command prints it alone on stdout)."""
        done = self.ondeck("token", "create", name, "--scope", scope)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def client(self, home: Path, token: str | None) -> Machine:
        settings = {"server_url": self.url, **({"token": token} if token else {})}
        return Machine(home=home, env=home_env(home, **settings))


class HomeServer:
    """`ondeck serve --no-jobs` on a free port, in the server machine's home, stopped and
    started again at will; its output is kept in the home's serve.log."""

    def __init__(self, home: Path, db_url: str | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = home_env(home, token=ADMIN_TOKEN, port=str(self.port))
        self.log = home / "serve.log"
        self.db_url = db_url or f"sqlite:///{home}/.local/share/ondeck/ondeck.db"
        if db_url is not None:
            self.env["ONDECK_DATABASE_URL"] = db_url
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *args: str, context: ssl.SSLContext | None = None) -> None:
        self.proc = served.start(
            self.env, "--no-jobs", *args, url=self.url, log=self.log, context=context
        )

    def stop(self) -> None:
        served.stop(self.proc)

    def ondeck(self, *args: str) -> str:
        """A command on the server's machine; its stdout."""
        done = subprocess.run(
            [ONDECK, *args], env=self.env, capture_output=True, text=True, timeout=60, check=True
        )
        return done.stdout.strip()

    def get(self, path: str) -> Any:
        """An API read with the admin token."""
        asked = urllib.request.Request(
            f"{self.url}{path}", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
        )
        with urllib.request.urlopen(asked, timeout=10) as answer:
            return json.loads(answer.read())


@contextmanager
def home_server(home: Path, db_url: str | None = None) -> Iterator[HomeServer]:
    """A started `HomeServer`, stopped however the block ends."""
    server = HomeServer(home, db_url)
    server.start()
    try:
        yield server
    finally:
        server.stop()
