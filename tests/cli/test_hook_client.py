"""The session hooks in client mode: two machines as two home directories on one
host. The server: a real `ondeck serve` with its own SQLite database and admin token. The
client: only `ONDECK_SERVER_URL` and a device token, running real `ondeck hook …` processes
with Claude Code's payloads in a git repository of its own."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from ondeck.db.engine import make_engine
from ondeck.db.tables import events
from support.hooks import commit_file, new_repo, payload
from support.machines import ADMIN_TOKEN, HomeServer, home_env

pytestmark = pytest.mark.slow

ADMIN = ADMIN_TOKEN
SESSION = "7d0c9a4e-1b2c-4d3e-8f90-abcdef012345"
# What a hook process imported, reported on its way out (the real entry point ends the
# process with os._exit): client mode touches no database and no driver.
PROBE = """
import json, os, sys
real_exit = os._exit
def exit_reporting(code):
    sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n")
    sys.stderr.flush()
    real_exit(code)
os._exit = exit_reporting
sys.argv = ["ondeck", "hook", sys.argv[1]]
from ondeck.entrypoints.cli import main
main()
"""
NEVER = ("sqlalchemy", "psycopg", "sqlite3", "_sqlite3", "pydantic", "pydantic_settings")
# And, to stay within 4x `python -c pass` (bench/sessions.py), none of what costs a share of
# it: the hook makes its record with frozen records (core/frozen.py), Python's own SHA-256,
# its own query string.
HEAVY = ("typing", "dataclasses", "pathlib", "inspect", "hashlib", "logging", "urllib.parse")
HEAVY += ("subprocess", "encodings.idna", "ondeck.context.render")  # git: posix_spawn
HEAVY += ("threading",)  # the start asks for its context in its record's request
# The scrubber's, for the few texts that need them (a random-looking run, a file list).
HEAVY += ("binascii", "unicodedata", "fnmatch")


class Server(HomeServer):
    """The server machine, and what its database holds."""

    def count(self, kind: str) -> int:
        engine = make_engine(self.db_url)
        try:
            with engine.connect() as conn:
                found = conn.execute(
                    select(func.count()).select_from(events).where(events.c.kind == kind)
                )
                return int(found.scalar_one())
        finally:
            engine.dispose()


class Client:
    """The laptop: its own home, a git repository, ONDECK_SERVER_URL and a device token."""

    def __init__(self, home: Path, server: Server, token: str) -> None:
        self.env = home_env(home, server_url=server.url, token=token)
        self.repo = new_repo(home / "site", commits=2)
        self.transcript = home / "transcript.jsonl"
        self.spool = home / ".local" / "share" / "ondeck" / "spool"

    def hook(self, verb: str, kind: str, **changes: Any) -> tuple[str, list[str], float]:
        """Run `ondeck hook VERB`: (stdout, the modules it imported, seconds)."""
        with self.transcript.open("a") as handle:  # the turn Claude Code wrote first
            handle.write(json.dumps({"verb": verb}) + "\n")
        given = {"session_id": SESSION, "cwd": str(self.repo)}
        data = payload(kind, **{**given, "transcript_path": str(self.transcript), **changes})
        began = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", PROBE, verb],
            input=json.dumps(data),
            capture_output=True,
            text=True,
            timeout=60,
            env={**self.env, "ONDECK_DEBUG": "1"},
            check=False,
        )
        took = time.monotonic() - began
        assert done.returncode == 0, done.stderr
        line = [x for x in done.stderr.splitlines() if x.startswith("MODULES ")]
        assert line, done.stderr
        modules = json.loads(line[0].removeprefix("MODULES "))
        return done.stdout, modules, took

    def spooled(self) -> int:
        """Records waiting (a drain that could not finish leaves them in draining.jsonl)."""
        files = [self.spool / "draining.jsonl", self.spool / "events.jsonl"]
        return sum(len(f.read_text().splitlines()) for f in files if f.exists())


def _context(out: str) -> str:
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"])


def _no_database(modules: list[str]) -> None:
    touched = sorted({m for m in modules if m.split(".")[0] in NEVER})
    assert touched == [], touched
    heavy = sorted(set(modules) & set(HEAVY))
    assert heavy == [], heavy


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(tmp_path / "server-home")
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def store_server(tmp_path: Path, db_url: str) -> Iterator[Server]:
    """The server on each store (SQLite and PostgreSQL)."""
    running = Server(tmp_path / "server-home", db_url)
    running.start()
    try:
        yield running
    finally:
        running.stop()


def test_it_records_a_whole_session_on_the_server_and_prints_its_context(
    server: Server, tmp_path: Path
) -> None:
    server.ondeck("task", "add", "Renew the TLS certificate", "--project", "site")
    token = server.ondeck("token", "create", "laptop")
    client = Client(tmp_path / "laptop-home", server, token)

    out, modules, _ = client.hook("session-start", "start")
    context = _context(out)
    assert context.startswith("# On deck"), context
    assert "Renew the TLS certificate" in context  # the server's backlog, project `site`
    assert "unavailable" not in context
    _no_database(modules)

    out, modules, _ = client.hook("stop", "stop", last_assistant_message="All green.")
    assert out == "" and client.spooled() == 0
    _no_database(modules)
    client.hook("post-compact", "compact", compact_summary="We renewed the certificate.")
    commit_file(client.repo, "notes.md", "renewed\n", "Renew the certificate")
    out, modules, _ = client.hook("session-end", "end")
    assert out == "", "an end that went well prints nothing for Claude Code"
    _no_database(modules)

    [listed] = server.get("/api/v1/sessions")
    # Made once the start was stored (one request): it knows this very session.
    assert f"This session: session {listed['id']} ({SESSION})" in context, context
    assert listed["status"] == "ended" and listed["project"] == "site"
    assert listed["git_root"] == str(client.repo)  # read by the hook, on the client
    # The commits and files are read and sent after the hook answered (a detached child).
    for _ in range(100):
        detail = server.get(f"/api/v1/sessions/{listed['id']}")
        if detail["commits"] is not None:
            break
        time.sleep(0.05)
    assert listed["compactions"] == 1 and listed["last_word_preview"] == "All green."
    assert [c[1] for c in detail["commits"]["items"]] == ["Renew the certificate"]
    assert client.spooled() == 0
    assert server.count("session.started") == 1


def test_a_revoked_token_fails_open_naming_the_token_and_spools(
    server: Server, tmp_path: Path
) -> None:
    token = server.ondeck("token", "create", "laptop")
    server.ondeck("token", "revoke", "laptop")
    client = Client(tmp_path / "laptop-home", server, token)

    out, _, _ = client.hook("session-start", "start")
    context = _context(out)
    assert "unavailable" in context and server.url in context
    assert "refused its token: 401" in context and "revoked" in context
    assert "kept in the spool (1 event waiting" in context  # not lost: a person fixes the token
    assert client.spooled() == 1
    assert server.get("/api/v1/sessions") == []


def test_a_read_token_gets_the_context_but_cannot_record(server: Server, tmp_path: Path) -> None:
    token = server.ondeck("token", "create", "reader", "--scope", "read")
    client = Client(tmp_path / "laptop-home", server, token)

    out, _, _ = client.hook("session-start", "start")
    context = _context(out)
    assert context.startswith("# On deck") and "unavailable" not in context.split("\n")[0]
    assert "token 'reader' may only read" in context and "kept in the spool" in context
    out, _, _ = client.hook("stop", "stop", last_assistant_message="Done.")
    assert "may only read" in json.loads(out)["systemMessage"]
    assert client.spooled() == 2


def test_the_server_stopped_the_hooks_fail_open_in_time_then_send_the_spool_once(
    server: Server, tmp_path: Path
) -> None:
    token = server.ondeck("token", "create", "laptop")
    client = Client(tmp_path / "laptop-home", server, token)
    client.hook("session-start", "start")
    server.stop()

    out, _, took = client.hook("stop", "stop", last_assistant_message="Offline turn.")
    assert "kept in the spool" in json.loads(out)["systemMessage"] and took < 3.5
    out, _, _ = client.hook("post-compact", "compact", compact_summary="Offline summary.")
    out, _, took = client.hook("session-start", "resume")
    context = _context(out)
    assert "unavailable" in context and server.url in context and "did not answer" in context
    assert took < 3.5
    assert client.spooled() == 3

    server.start()
    out, _, _ = client.hook("session-end", "end")
    assert out == "", out
    assert client.spooled() == 0
    [listed] = server.get("/api/v1/sessions")
    assert listed["status"] == "ended" and listed["compactions"] == 1
    assert listed["last_word_preview"] == "Offline turn."
    assert server.count("session.compacted") == 1
    assert server.count("session.last_word") == 1

    client.hook("stop", "stop", last_assistant_message="Offline turn.")  # nothing waits
    assert server.count("session.compacted") == 1


def test_a_hanging_server_is_given_at_most_three_seconds(tmp_path: Path) -> None:
    """A server that accepts the connection and never answers."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        fake = Server(tmp_path / "server-home")
        fake.url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        client = Client(
            tmp_path / "laptop-home", fake, "odk_whatever-0123456789abcdef0123456789abcdef"
        )
        out, _, took = client.hook("session-start", "start")
        assert "did not answer" in _context(out) and took < 4.5
        assert client.spooled() == 1
    finally:
        listener.close()


@pytest.mark.parametrize("older", ["refuses the question", "ignores the question"])
def test_a_server_of_another_version_still_takes_the_start_and_gives_the_context(
    tmp_path: Path, older: str
) -> None:
    """A stand-in for a server that refuses the start's context question (422) or answers
    without a context: the record is stored all the same, and the context asked alone."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    asked: list[str] = []

    class Older(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def answer(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            asked.append(f"POST {self.path}")
            sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if "context=true" in self.path and older == "refuses the question":
                error = {"error": {"code": "invalid_input", "message": "unknown"}}
                self.answer(422, json.dumps(error).encode())
                return
            results = [
                {"fingerprint": r["fingerprint"], "outcome": "applied", "session": {"id": 7}}
                for r in sent["records"]
            ]
            self.answer(200, json.dumps({"results": results}).encode())

        def do_GET(self) -> None:
            asked.append(f"GET {self.path.split('?')[0]}")
            self.answer(200, b"# On deck (asked alone)\n", "text/markdown")

    stand_in = ThreadingHTTPServer(("127.0.0.1", 0), Older)
    threading.Thread(target=stand_in.serve_forever, daemon=True).start()
    try:
        fake = Server(tmp_path / "server-home")
        fake.url = f"http://127.0.0.1:{stand_in.server_address[1]}"
        client = Client(tmp_path / "laptop-home", fake, "odk_whatever-0123456789abcdef0123456789")
        out, _, _ = client.hook("session-start", "start")
    finally:
        stand_in.shutdown()
        stand_in.server_close()
    assert _context(out).startswith("# On deck (asked alone)"), out
    assert client.spooled() == 0, "stored, not spooled"
    posts = [a for a in asked if a.startswith("POST")]
    assert "context=true" in posts[0] and asked[-1] == "GET /api/v1/context", asked
    assert len(posts) == (2 if older == "refuses the question" else 1), asked


def test_a_client_mode_hook_over_https_verifies_the_certificate(tmp_path: Path) -> None:
    """A self-signed server is refused, unless SSL_CERT_FILE names its certificate."""
    from cli.test_serve_tls import _self_signed

    cert, key = _self_signed(tmp_path)
    server = Server(tmp_path / "server-home")
    server.url = f"https://127.0.0.1:{server.port}"
    context = ssl.create_default_context(cafile=str(cert))
    server.start("--ssl-certfile", str(cert), "--ssl-keyfile", str(key), context=context)
    try:
        client = Client(tmp_path / "laptop-home", server, ADMIN)
        out, _, _ = client.hook("session-start", "start")
        assert "CERTIFICATE_VERIFY_FAILED" in _context(out)
        client.env["SSL_CERT_FILE"] = str(cert)
        out, _, _ = client.hook("stop", "stop", last_assistant_message="Over TLS.")
        assert out == "" and client.spooled() == 0
    finally:
        server.stop()


def test_a_body_over_the_limit_is_refused_with_a_clean_413(store_server: Server) -> None:
    """The real server refuses a body over its limit unread: the hooks announce a large body
    (`Expect: 100-continue`), so the refusal arrives as what it is, not as a reset."""
    from ondeck.core.http_limits import MAX_BODY_BYTES
    from ondeck.host.http_client import request

    body = b'{"records":[' + b"1," * MAX_BODY_BYTES + b"1]}"
    status, _, answer = request(store_server.url, "POST", "/api/v1/sessions/records", body=body)
    assert status == 413 and b"too_large" in answer


def test_a_spool_larger_than_a_request_body_all_leaves_once_the_server_is_back(
    store_server: Server, tmp_path: Path
) -> None:
    """110 Stop events with 4,000-character Korean last words (some 1.4 MB
    in all, over the server's 1 MiB body) and the session's end, spooled while the server was
    down, all leave once it is back; the brief then shows the session ended. On each store."""
    server = store_server
    token = server.ondeck("token", "create", "laptop")
    client = Client(tmp_path / "laptop-home", server, token)
    client.hook("session-start", "start")
    server.stop()
    word = "한국어로 남긴 마지막 말입니다. "  # 17 characters
    for n in range(110):
        said = f"{n:03d} " + word * 235
        out, _, _ = client.hook("stop", "stop", last_assistant_message=said[:4_000])
        assert "kept in the spool" in json.loads(out)["systemMessage"]
        if n == 1:  # the rest as that hook made them, one per turn (110 processes: minutes)
            break
    lines = (client.spool / "events.jsonl").read_text().splitlines()
    template = json.loads(lines[-1])
    with (client.spool / "events.jsonl").open("a") as handle:
        for n in range(2, 110):
            text = {**template["text"], "value": (f"{n:03d} " + word * 235)[:4_000]}
            made = {**template, "fingerprint": f"{n:032x}", "text": text}
            handle.write(json.dumps(made, ensure_ascii=False, separators=(",", ":")) + "\n")
    client.hook("session-end", "end")
    assert client.spooled() >= 111
    assert (client.spool / "events.jsonl").stat().st_size > 1024 * 1024

    server.start()
    for _ in range(3):  # each hook drains for a second at most; this takes one or two
        out, _, _ = client.hook("session-start", "resume", session_id="the-next-session")
        if client.spooled() == 0:
            break
    context = _context(out)
    assert client.spooled() == 0 and "reset by peer" not in context
    assert not (client.spool / "rejected.jsonl").exists()
    assert server.count("session.ended") == 1
    ended = [s for s in server.get("/api/v1/sessions") if s["status"] == "ended"]
    assert len(ended) == 1
    out, _, _ = client.hook("session-start", "start", session_id="a-third-session")
    [line] = [x for x in _context(out).splitlines() if x.startswith("- session 1:")]
    assert "ended (prompt_input_exit)" in line and "still open" not in line


def test_a_hook_the_mod_runs_tells_it_the_status_line_which_the_mod_cannot_ask(
    server: Server, tmp_path: Path
) -> None:
    """The Claude Code mod holds no token in client mode: the hook it hands an event to (with
    ONDECK_MOD_STATUS, its status line's query) asks the server for the line with the device
    token and adds it to its answer; the start's answer also gives the session's facts, which
    scope the line. With the server away: not reachable, asked once."""
    today = datetime.now(UTC).date().isoformat()  # the server's zone is UTC
    server.ondeck("task", "add", "Renew the TLS certificate", "--project", "site", "--due", today)
    server.ondeck("task", "add", "Elsewhere", "--project", "shop", "--due", today)
    token = server.ondeck("token", "create", "laptop")
    client = Client(tmp_path / "laptop-home", server, token)
    client.env["ONDECK_MOD_STATUS"] = f"session={SESSION}"

    out, modules, _ = client.hook("session-start", "start")
    told = json.loads(out)
    assert "Renew the TLS certificate" in _context(out)
    assert told["ondeck"]["facts"] == {"project": "site", "side": None, "unclassified": False}
    assert told["ondeck"]["reachable"] is True
    assert told["ondeck"]["line"].startswith("ondeck") and "1 due" in told["ondeck"]["line"]
    _no_database(modules)

    client.env["ONDECK_MOD_STATUS"] = f"project=site&session={SESSION}"
    out, modules, _ = client.hook("stop", "stop", last_assistant_message="All green.")
    assert json.loads(out) == {"ondeck": {"reachable": True, "line": told["ondeck"]["line"]}}
    _no_database(modules)

    server.stop()
    out, _, took = client.hook("stop", "stop", last_assistant_message="Offline.")
    away = json.loads(out)
    assert away["ondeck"] == {"reachable": False} and "spool" in away["systemMessage"]
    assert took < 3.0 + 2.0  # the record's budget, not a second one for the line


def test_after_a_compaction_a_clear_and_for_ondeck_the_mod_is_told_its_sessions_brief(
    tmp_path: Path,
) -> None:
    """In client mode the mod cannot ask the server for the brief (it holds no token): the
    post-compact hook it runs adds the brief to its answer, rendered after a compaction (the
    lists, not the pinned notes again), and `ondeck hook brief` (its `/ondeck`, which records
    nothing) gives the whole brief. Both are of the session's side and project, as the start
    classified it here; a `/clear` is a start of its own (source "clear"), with its brief."""
    home = tmp_path / "laptop-home"
    sides = {"work": [str(home)], "personal": [str(tmp_path / "own")]}
    server = Server(tmp_path / "server-home")
    server.env["ONDECK_SIDES"] = json.dumps(sides)
    server.start()
    try:
        today = datetime.now(UTC).date().isoformat()  # the server's zone is UTC
        for title, project, side in (
            ("Renew the TLS certificate", "site", "work"),
            ("Water the plants", "site", "personal"),
            ("Restock the shop", "shop", "work"),
        ):
            scope = ("--project", project, "--side", side)
            server.ondeck("task", "add", title, *scope, "--due", today)
        for text, side in (("Deploys go out at ten", "work"), ("Dentist on Friday", "personal")):
            server.ondeck("note", "add", text, "--project", "site", "--side", side, "--pin")
        client = Client(home, server, server.ondeck("token", "create", "laptop"))
        client.env["ONDECK_SIDES"] = json.dumps(sides)
        client.env["ONDECK_MOD_STATUS"] = f"session={SESSION}"

        out, _, _ = client.hook("session-start", "start")
        assert "Deploys go out at ten" in _context(out)
        facts = json.loads(out)["ondeck"]["facts"]
        assert facts == {"project": "site", "side": "work", "unclassified": False}
        # The mod scopes what it asks next by the start's facts (words.ts, contextQuery).
        client.env["ONDECK_MOD_STATUS"] = f"project=site&side=work&session={SESSION}"

        out, modules, _ = client.hook("post-compact", "compact", compact_summary="Renewed it.")
        told = json.loads(out)["ondeck"]
        brief = told["brief"]
        assert brief.startswith("# On deck") and "Renew the TLS certificate" in brief
        assert "Water the plants" not in brief and "Restock the shop" not in brief
        assert "Deploys go out at ten" not in brief  # a compaction's brief: what changed
        assert told["reachable"] is True and "1 due" in told["line"]
        assert "hookSpecificOutput" not in json.loads(out)  # PostCompact takes no context
        _no_database(modules)
        [listed] = server.get("/api/v1/sessions")
        assert listed["compactions"] == 1 and listed["side"] == "work"

        out, modules, _ = client.hook("brief", "stop")  # its standard input is not read
        told = json.loads(out)["ondeck"]
        brief = told["brief"]
        assert "Deploys go out at ten" in brief and "Renew the TLS certificate" in brief
        assert "Dentist on Friday" not in brief and "Water the plants" not in brief
        assert "Restock the shop" not in brief
        assert told["reachable"] is True and "1 due" in told["line"]
        _no_database(modules)
        assert server.count("session.started") == 1 and len(server.get("/api/v1/sessions")) == 1

        client.env["ONDECK_MOD_STATUS"] = "session=the-session-after-clear"
        cleared = "the-session-after-clear"
        out, _, _ = client.hook("session-start", "start", session_id=cleared, source="clear")
        context = _context(out)
        assert "Deploys go out at ten" in context and "Renew the TLS certificate" in context
        assert "Dentist on Friday" not in context and "Restock the shop" not in context
        assert json.loads(out)["ondeck"]["facts"]["side"] == "work"
        assert server.count("session.started") == 2

        del client.env["ONDECK_MOD_STATUS"]  # a settings hook: Claude Code's keys only
        out, _, _ = client.hook("post-compact", "compact", session_id=cleared)
        assert out == ""
    finally:
        server.stop()
