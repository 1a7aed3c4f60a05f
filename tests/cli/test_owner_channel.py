"""Nothing leaves before the server is known to be ours: on the server's
own machine the hooks reach `ondeck serve` only through its owner-only Unix socket, never
through the TCP port, where any user of the machine may listen while ondeck is down.

Real processes: a plain socket server squatting on ONDECK_PORT that records every byte it
is sent, real `ondeck hook …` and `ondeck …` commands, a real `ondeck serve`."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from ondeck.db.engine import make_engine
from ondeck.db.tables import sessions
from support.hooks import ONDECK, new_repo, payload
from support.pg import free_port

pytestmark = pytest.mark.slow

TOKEN = "owner-token-0123456789abcdefghijklmnop"
SESSION = "5b0c9a4e-1b2c-4d3e-8f90-abcdef01c0de"
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
LAST_WORD = f"배포 끝났습니다 <private>현관 비밀번호 4711</private> 토큰은 {SECRET}"


class Squatter:
    """Whoever listens on the port while ondeck is down: accepts, records, answers nothing."""

    def __init__(self, port: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", port))
        self.listener.settimeout(0.2)
        self.received = bytearray()
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            with conn:
                conn.settimeout(0.5)
                try:
                    while chunk := conn.recv(65536):
                        self.received += chunk
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.listener.close()


def _env(tmp_path: Path, db_url: str, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("ONDECK_")}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        ONDECK_DATABASE_URL=db_url,
        ONDECK_DATA_DIR=str(tmp_path / "data"),
        ONDECK_PORT=str(port),
        ONDECK_TOKEN=TOKEN,
        ONDECK_TZ="UTC",
        ONDECK_DEBUG="1",
    )
    return env


def _hook(env: dict[str, str], verb: str, kind: str, repo: Path) -> subprocess.CompletedProcess:
    data = payload(kind, session_id=SESSION, cwd=str(repo))
    if kind == "stop":
        data["last_assistant_message"] = LAST_WORD
    done = subprocess.run(
        [ONDECK, "hook", verb],
        input=json.dumps(data, ensure_ascii=False),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def _records(db_url: str) -> list[Any]:
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(select(sessions)))
    finally:
        engine.dispose()


@pytest.fixture
def squatter() -> Iterator[Squatter]:
    port = free_port()
    found = Squatter(port)
    try:
        yield found
    finally:
        found.close()


def test_a_listener_on_the_port_gets_neither_token_nor_text(
    db_url: str, tmp_path: Path, squatter: Squatter
) -> None:
    env = _env(tmp_path, db_url, squatter.listener.getsockname()[1])
    repo = new_repo(tmp_path / "site")
    outputs = [
        _hook(env, "session-start", "start", repo),
        _hook(env, "stop", "stop", repo),
        _hook(env, "post-compact", "compact", repo),
        _hook(env, "session-end", "end", repo),
    ]
    for args in (["context"], ["task", "list"], ["session", "list"], ["recall", "배포"]):
        done = subprocess.run(
            [ONDECK, *args], capture_output=True, text=True, env=env, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
    time.sleep(0.6)  # the squatter's last read
    assert squatter.connections == 0 and bytes(squatter.received) == b""
    # The events were not lost on the way: the hooks stored them in the database.
    [row] = _records(db_url)
    assert row.status == "ended" and "배포 끝났습니다" in row.last_word
    assert "4711" not in row.last_word and SECRET not in row.last_word
    assert any("stored in the database" in o.stderr for o in outputs)


class Serve:
    def __init__(self, env: dict[str, str], port: int, log: Path) -> None:
        self.port = port
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                [ONDECK, "serve", "--no-jobs", "--port", str(port)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.log = log

    def wait_listening(self, sock: Path) -> None:
        deadline = time.monotonic() + 120  # a loaded machine (PostgreSQL) is slow to start
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            if sock.exists():
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return
                except OSError:
                    pass
            time.sleep(0.1)
        raise AssertionError("the server did not start")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(timeout=30)


def _serve_once(env: dict[str, str], port: int) -> subprocess.CompletedProcess[str]:
    """A server that is expected to refuse to start: what it said."""
    return subprocess.run(
        [ONDECK, "serve", "--no-jobs", "--port", str(port)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def _socket_of(tmp_path: Path, port: int) -> Path:
    return tmp_path / "data" / "run" / f"server-{port}.sock"


def test_the_hooks_reach_the_running_server_through_its_owner_socket(
    db_url: str, tmp_path: Path
) -> None:
    port = free_port()
    env = _env(tmp_path, db_url, port)
    os.umask(0o022)
    server = Serve(env, port, tmp_path / "serve.log")
    sock = _socket_of(tmp_path, port)
    try:
        server.wait_listening(sock)
        assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(sock.lstat().st_mode) == 0o600
        repo = new_repo(tmp_path / "site")
        start = _hook(env, "session-start", "start", repo)
        stop = _hook(env, "stop", "stop", repo)
        assert f"stored through {sock}" in start.stderr and f"stored through {sock}" in stop.stderr
        assert f"session context from {sock}" in start.stderr
        [row] = _records(db_url)
        assert "배포 끝났습니다" in row.last_word and SECRET not in row.last_word
    finally:
        assert server.stop() == 0
    assert not sock.exists()  # its socket goes with it


def test_a_socket_directory_not_the_owners_alone_is_refused_by_both_sides(
    db_url: str, tmp_path: Path
) -> None:
    port = free_port()
    env = _env(tmp_path, db_url, port)
    sock = _socket_of(tmp_path, port)
    sock.parent.mkdir(parents=True)
    sock.parent.chmod(0o755)
    refused = _serve_once(env, port)
    assert refused.returncode != 0 and "mode 755" in refused.stderr
    assert "Traceback" not in refused.stderr
    if os.getuid() == 0:  # a directory someone else owns (only root can make one here)
        sock.parent.chmod(0o700)
        os.chown(sock.parent, 65534, 65534)
        refused = _serve_once(env, port)
        assert refused.returncode != 0 and "belongs to user id 65534" in refused.stderr
        os.chown(sock.parent, os.getuid(), os.getgid())
    # A server started in a good directory, then the directory opened to others: the hook
    # does not talk through it, and stores in the database itself.
    sock.parent.chmod(0o700)
    server = Serve(env, port, tmp_path / "serve.log")
    try:
        server.wait_listening(sock)
        sock.parent.chmod(0o750)
        done = _hook(env, "session-start", "start", new_repo(tmp_path / "site"))
        # (The id to expect is read from that directory too: refused there first.)
        assert "mode 750" in done.stderr or "id of this database is not known" in done.stderr
        assert "stored in the database" in done.stderr
        assert "stored through" not in done.stderr
        sock.parent.chmod(0o700)
    finally:
        assert server.stop() == 0


def test_a_live_socket_is_refused_and_a_stale_one_replaced(db_url: str, tmp_path: Path) -> None:
    port = free_port()
    env = _env(tmp_path, db_url, port)
    sock = _socket_of(tmp_path, port)
    sock.parent.mkdir(parents=True, mode=0o700)
    live = socket.socket(socket.AF_UNIX)
    live.bind(str(sock))
    live.listen()
    refused = _serve_once(env, port)
    assert refused.returncode != 0 and f"listens on {sock}" in refused.stderr
    assert sock.exists()  # not taken from the one listening there
    live.close()  # a server killed with -9 leaves its socket behind
    server = Serve(env, port, tmp_path / "serve.log")
    try:
        server.wait_listening(sock)
        done = _hook(env, "session-start", "start", new_repo(tmp_path / "site"))
        assert f"stored through {sock}" in done.stderr
    finally:
        assert server.stop() == 0


def test_the_hook_scrubs_its_texts_before_it_sends_them_to_its_server(
    db_url: str, tmp_path: Path
) -> None:
    """Whatever listens on the owner socket (here a recorder that answers nothing) gets the
    last word already scrubbed: the text leaves the capturing hook scrubbed."""
    port = free_port()
    env = _env(tmp_path, db_url, port)
    sock = _socket_of(tmp_path, port)
    repo = new_repo(tmp_path / "site")
    # A first hook stores in the database itself, and learns the store's id from it.
    assert "stored in the database" in _hook(env, "session-start", "start", repo).stderr
    recorder = socket.socket(socket.AF_UNIX)
    recorder.bind(str(sock))
    recorder.listen()
    recorder.settimeout(30)
    received = bytearray()

    def record() -> None:
        conn, _ = recorder.accept()
        with conn:
            conn.settimeout(1)
            try:
                while chunk := conn.recv(65536):
                    received.extend(chunk)
            except OSError:
                pass

    thread = threading.Thread(target=record, daemon=True)
    thread.start()
    try:
        done = _hook(env, "stop", "stop", repo)
        thread.join(timeout=30)
    finally:
        recorder.close()
    sent = received.decode("utf-8", "replace")
    assert "Authorization: Bearer" in sent and "배포 끝났습니다" in sent  # it was sent here
    assert "4711" not in sent and "현관" not in sent and SECRET not in sent
    assert "stored in the database" in done.stderr  # no answer: the hook stored it itself


# --- who the owner socket admits: the kernel's word, not a token's ---------------------------

KOREAN_WORD = "소켓으로 왔습니다: 토큰 없이"


def _ask(
    sock: Path | None, port: int, method: str, path: str, body: Any = None, token: str = ""
) -> tuple[int, dict[str, Any]]:
    """One request without (or with `token` as) a bearer, over the owner socket `sock`, or
    over TCP when it is None; (status, its JSON)."""
    from ondeck.host.http_client import request

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if path == "/mcp":
        headers["Accept"] = "application/json, text/event-stream"
    status, _, answer = request(
        f"http://127.0.0.1:{port}",
        method,
        path,
        body=None if body is None else json.dumps(body, ensure_ascii=False).encode(),
        headers=headers,
        timeout=30,
        owner_socket=None if sock is None else str(sock),
    )
    try:
        return status, json.loads(answer or b"{}")
    except ValueError:
        return status, {"text": answer.decode("utf-8", "replace")}


def _start_event(repo: Path) -> dict[str, Any]:
    event = payload("start", session_id=SESSION, cwd=str(repo))
    return {
        "events": [
            {"hook": "session-start", "payload": event, "at": "2026-12-02T09:00:00Z",
             "transcript_size": -1, "context": True}
        ]
    }  # fmt: skip


def _stop_event(repo: Path) -> dict[str, Any]:
    event = payload("stop", session_id=SESSION, cwd=str(repo), last_assistant_message=KOREAN_WORD)
    return {
        "events": [
            {"hook": "stop", "payload": event, "at": "2026-12-02T09:05:00Z", "transcript_size": -1}
        ]
    }


MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def test_with_a_token_set_the_owner_socket_admits_its_owner_and_tcp_still_asks_for_it(
    db_url: str, tmp_path: Path
) -> None:
    """ONDECK_TOKEN is set: over the owner socket the owner's requests need no bearer (the
    kernel says who connected), and a wrong one changes nothing; over TCP no token, or a
    wrong one, is still 401 on every door, and the right one passes."""
    port = free_port()
    env = _env(tmp_path, db_url, port)
    server = Serve(env, port, tmp_path / "serve.log")
    sock = _socket_of(tmp_path, port)
    repo = new_repo(tmp_path / "site")
    try:
        server.wait_listening(sock)
        # (a) the owner socket, no token: the session's events are stored, its line given
        status, found = _ask(sock, port, "POST", "/api/v1/sessions/hook-events", _start_event(repo))
        assert status == 200, found
        assert found["results"][0]["outcome"] == "applied", found
        status, found = _ask(sock, port, "POST", "/api/v1/sessions/hook-events", _stop_event(repo))
        assert status == 200 and found["results"][0]["outcome"] == "applied", found
        status, found = _ask(sock, port, "GET", f"/api/v1/context/status?session={SESSION}")
        assert status == 200 and isinstance(found.get("line"), str), found
        status, found = _ask(sock, port, "POST", "/mcp", MCP_INITIALIZE)
        assert status == 200, found
        # a wrong token over the socket: still the owner (and not counted as a wrong token)
        status, found = _ask(sock, port, "GET", "/api/v1/tasks", token="wrong-token")
        assert status == 200, found
        [row] = _records(db_url)
        assert row.last_word == KOREAN_WORD
        # (b) TCP: the token, exactly as before
        for method, path, body in (
            ("GET", "/api/v1/context/status", None),
            ("GET", "/api/v1/tasks", None),
            ("POST", "/api/v1/sessions/hook-events", _stop_event(repo)),
            ("POST", "/mcp", MCP_INITIALIZE),
        ):
            for token in ("", "wrong-token"):
                status, found = _ask(None, port, method, path, body, token=token)
                assert status == 401, (method, path, token, status, found)
                assert found["error"]["code"] == "unauthorized", found
        status, found = _ask(None, port, "GET", "/api/v1/tasks", token=TOKEN)
        assert status == 200, found
    finally:
        assert server.stop() == 0


# A process of another user that may pass any directory's mode (CAP_DAC_OVERRIDE kept across
# the change of user): what the 0700 directory keeps out, let in, to see the server refuse it.
SETPRIV = shutil.which("setpriv")
STRANGER = 65534  # nobody
STRANGER_ASKS = """
import json, socket, sys
path, port, method, target, body, token = sys.argv[1:]
lines = [f"{method} {target} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close",
         "Accept: application/json, text/event-stream"]
if token:
    lines.append(f"Authorization: Bearer {token}")
data = body.encode()
if body:
    lines += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
with socket.socket(socket.AF_UNIX) as conn:
    conn.settimeout(30)
    conn.connect(path)
    conn.sendall(("\\r\\n".join(lines) + "\\r\\n\\r\\n").encode() + data)
    chunks = []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
sys.stdout.write(b"".join(chunks).decode("utf-8", "replace"))
"""


@pytest.mark.skipif(
    os.getuid() != 0 or SETPRIV is None, reason="another user's process needs root and setpriv"
)
def test_another_user_on_the_owner_socket_is_refused_whatever_the_token(
    db_url: str, tmp_path: Path
) -> None:
    """The directory (0700) keeps other users off the socket; behind it the server asks the
    kernel who connected and refuses anyone but its own user, on every path, with the
    token or without, server token set or not (fail closed)."""
    from ondeck.host.http_client import _read_response

    port = free_port()
    repo = new_repo(tmp_path / "site")
    for token in (TOKEN, ""):
        env = _env(tmp_path, db_url, port)
        env["ONDECK_TOKEN"] = token
        server = Serve(env, port, tmp_path / "serve.log")
        sock = _socket_of(tmp_path, port)
        try:
            server.wait_listening(sock)
            for method, path, body in (
                ("GET", "/api/v1/context/status", None),
                ("POST", "/api/v1/sessions/hook-events", _stop_event(repo)),
                ("POST", "/mcp", MCP_INITIALIZE),
                ("GET", "/", None),
            ):
                for given in ("", TOKEN):
                    sent = "" if body is None else json.dumps(body, ensure_ascii=False)
                    done = subprocess.run(
                        [str(SETPRIV), f"--reuid={STRANGER}", f"--regid={STRANGER}",
                         "--clear-groups", "--inh-caps=+dac_override",
                         "--ambient-caps=+dac_override", sys.executable, "-c", STRANGER_ASKS,
                         str(sock), str(port), method, path, sent, given],
                        capture_output=True, timeout=60, check=False,
                    )  # fmt: skip
                    assert done.returncode == 0, done.stderr.decode()
                    status, _, answer = _read_response(done.stdout)
                    assert status == 403, (token, method, path, given, status, answer)
                    message = json.loads(answer)["error"]["message"]
                    assert f"not user id {STRANGER}" in message, message
            # The owner on the same server, as before.
            status, found = _ask(sock, port, "GET", "/api/v1/context/status")
            assert status == 200, found
            assert _records(db_url) == []  # the stranger's event changed nothing
        finally:
            assert server.stop() == 0
