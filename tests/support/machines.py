"""Two machines on one host: a server with its database, and a client that has
only `ONDECK_SERVER_URL` and a device token. Each is a home directory of its own; every
command runs as a real `ondeck` process with that machine's environment.

    with Server.start(tmp_path / "server") as server:
        laptop = server.client(tmp_path / "laptop", server.token("laptop"))
        done = laptop.ondeck("task", "add", "배포 준비", "--json")
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.pg import free_port

ONDECK = str(Path(sys.executable).with_name("ondeck"))
ADMIN_TOKEN = "admin-token-for-the-server-0123456789abcdef0123456789abcdef"


def home_env(home: Path, **settings: str) -> dict[str, str]:
    """An environment with `home` as the home directory and nothing of ondeck's but
    `settings` (given without the ONDECK_ prefix)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ONDECK_", "XDG_"))}
    for name in ("config", "data", "state", "cache"):
        (home / f".{name}").mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".data"),
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
    proc: subprocess.Popen[str] | None = None
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
        self.proc = subprocess.Popen(
            [ONDECK, "serve", "--port", str(self.port)],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.proc.communicate()[1]}")
            try:
                with urllib.request.urlopen(self.url + "/api/v1/health", timeout=2):
                    return
            except urllib.error.HTTPError:
                return  # it answers (health may want the token)
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the server never answered")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.communicate(timeout=30)
        self.proc = None

    def token(self, name: str, scope: str = "write") -> str:
        """A device token made on the server (the command prints it alone on stdout)."""
        done = self.ondeck("token", "create", name, "--scope", scope)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def client(self, home: Path, token: str | None) -> Machine:
        settings = {"server_url": self.url, **({"token": token} if token else {})}
        return Machine(home=home, env=home_env(home, **settings))
