"""The hooks' HTTP client against a real socket that answers what each test wants: bodies by
length and chunked, and every broken answer an error, never a wrong body."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from ondeck.host.http_client import HttpError, request, split_url


class Peer:
    """A loopback server giving each connection the next canned answer."""

    def __init__(self) -> None:
        self.answers: list[bytes] = []
        self.received: list[bytes] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head = data.split(b"\r\n\r\n", 1)[0].lower()
                length = 0
                for line in head.split(b"\r\n"):
                    if line.startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                while len(data.split(b"\r\n\r\n", 1)[1]) < length:
                    data += conn.recv(65536)
                self.received.append(data)
                conn.sendall(self.answers.pop(0))


@pytest.fixture
def peer() -> Iterator[Peer]:
    found = Peer()
    yield found
    found.server.close()


def test_a_body_by_length_and_the_request_as_sent(peer: Peer) -> None:
    peer.answers.append(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Ondeck-Store: abc\r\n\r\nhello")
    status, headers, body = request(
        peer.url,
        "POST",
        "/api/v1/x",
        body='{"한": 1}'.encode(),
        headers={"Authorization": "Bearer t"},
    )
    assert (status, headers["x-ondeck-store"], body) == (200, "abc", b"hello")
    sent = peer.received[0]
    assert sent.startswith(b"POST /api/v1/x HTTP/1.1\r\n")
    assert b"Authorization: Bearer t\r\n" in sent and sent.endswith('{"한": 1}'.encode())


def test_a_chunked_body(peer: Peer) -> None:
    peer.answers.append(
        b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"4\r\nWiki\r\n6;x=y\r\npedia \r\n0\r\n\r\n"
    )
    assert request(peer.url, "GET", "/")[::2] == (404, b"Wikipedia ")


@pytest.mark.parametrize(
    "answer",
    [
        b"",
        b"garbage",
        b"SMTP ready\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\nbody",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nbody",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nshort",
    ],
)
def test_a_broken_answer_is_an_error(peer: Peer, answer: bytes) -> None:
    peer.answers.append(answer)
    with pytest.raises(HttpError):
        request(peer.url, "GET", "/")


def test_nobody_listening_and_line_breaks_in_headers() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(HttpError):
        request(f"http://127.0.0.1:{port}", "GET", "/", timeout=2)
    with pytest.raises(HttpError, match="line break"):
        request(f"http://127.0.0.1:{port}", "GET", "/", headers={"X": "a\r\nB: c"})
    with pytest.raises(HttpError):
        request("https://example.org", "GET", "/")


def test_split_url() -> None:
    assert split_url("http://127.0.0.1:8787") == ("127.0.0.1", 8787)
    assert split_url("http://[::1]:9000/x") == ("::1", 9000)
    assert split_url("http://localhost") == ("localhost", 80)
