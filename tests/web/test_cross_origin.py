"""A page of another origin cannot write to, or read from, a server without a
token: real cross-origin requests from Debian's Chromium against a real `ondeck serve`
bound to loopback with no token, on SQLite and on PostgreSQL.

The hostile page is served from another loopback origin (another port of 127.0.0.1): what a
site the owner visits can do, with no DNS trick at all. The DNS-rebinding case (a name the
attacker controls, resolved to 127.0.0.1) is a request whose Host is that name.
"""

from __future__ import annotations

import http.client
import http.server
import json
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from ondeck.db.tables import events, schedules
from support.served import Served, serve_database

playwright_api = pytest.importorskip("playwright.sync_api")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture
def served(db_url: str, tmp_path: Path) -> Iterator[Served]:
    with serve_database(db_url, tmp_path / "data", Served) as server:
        yield server


@pytest.fixture
def schedule(served: Served) -> int:
    """One enabled schedule, made as the owner would (the CLI, JSON to the API)."""
    request = urllib.request.Request(
        f"{served.url}/api/v1/schedules",
        data=json.dumps({"title": "주간 회의 준비", "rule": "daily"}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        made: dict[str, int] = json.load(answer)
    note = urllib.request.Request(
        f"{served.url}/api/v1/notes",
        data=json.dumps({"text": "금고 비밀: 회의실 뒤 서랍"}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    urllib.request.urlopen(note, timeout=10).close()
    return made["id"]


class _Page(http.server.BaseHTTPRequestHandler):
    html = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(self.html)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hostile_site() -> Iterator[tuple[str, type[_Page]]]:
    """Another origin on this machine: 127.0.0.1 on another port, serving one page."""
    handler = type("Page", (_Page,), {})
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{site.server_address[1]}", handler
    finally:
        site.shutdown()
        site.server_close()


def _state(engine: Engine, schedule_id: int) -> tuple[bool, int]:
    with engine.connect() as conn:
        enabled = conn.execute(
            select(schedules.c.enabled).where(schedules.c.id == schedule_id)
        ).scalar_one()
        changes = len(conn.execute(select(events.c.id)).all())
    return bool(enabled), changes


ATTACK = """<!doctype html><meta charset="utf-8"><title>a page of another site</title>
<iframe name="sink"></iframe>
<form id="api" method="post" enctype="text/plain" target="sink"
      action="{target}/api/v1/schedules/{id}/pause"><input name='{{"x":"' value='"}}'></form>
<form id="dash" method="post" target="sink" action="{target}/schedules/{id}/pause">
  <input name="next" value="/schedules"></form>
<script>
window.attack = async () => {{
  const results = [];
  for (const body of ["{{}}", null]) {{
    try {{
      await fetch("{target}/api/v1/schedules/{id}/pause", {{
        method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}}, body}});
      results.push("sent");
    }} catch (e) {{ results.push("failed: " + e); }}
  }}
  for (const form of ["api", "dash"]) {{
    await new Promise(done => {{
      const sink = document.querySelector("iframe");
      sink.onload = done;
      document.getElementById(form).submit();
      setTimeout(done, 5000);
    }});
  }}
  return results;
}};
</script>"""


def test_a_page_of_another_origin_cannot_pause_a_schedule(
    browser, served: Served, schedule: int, engine: Engine, hostile_site
) -> None:  # type: ignore[no-untyped-def]
    before = _state(engine, schedule)
    assert before[0], "the schedule starts enabled"
    origin, page_class = hostile_site
    page_class.html = ATTACK.format(target=served.url, id=schedule).encode()
    context = browser.new_context()  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        # The owner has the dashboard open: its cookies are the browser's.
        page.goto(f"{served.url}/schedules")
        page.goto(f"{origin}/")
        sent = page.evaluate("window.attack()")
        assert sent == ["sent", "sent"], "the browser sent the simple requests"
    finally:
        context.close()
    assert _state(engine, schedule) == before, "a cross-origin POST paused the schedule"
    # The same pause, from the dashboard itself, still works: its form is same-origin.
    context = browser.new_context()  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        page.goto(f"{served.url}/schedules/{schedule}")
        page.locator(f"form[action^='/schedules/{schedule}/pause'] button").first.click()
        page.wait_for_load_state()
    finally:
        context.close()
    assert _state(engine, schedule)[0] is False, "the dashboard's own form pauses it"


def _raw(port: int, method: str, path: str, headers: dict[str, str], body: bytes = b""):  # type: ignore[no-untyped-def]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        if body:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body or None)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def test_a_foreign_host_gets_no_export_and_changes_nothing(
    served: Served, schedule: int, engine: Engine
) -> None:
    """DNS rebinding: a name the attacker controls, resolved to 127.0.0.1, is the Host the
    browser sends. Every route refuses it before routing, the export and the dashboard too."""
    before = _state(engine, schedule)
    for host in (f"rebind.attacker.example:{served.port}", "rebind.attacker.example"):
        for path in (
            "/api/v1/export?format=jsonl",
            "/",
            "/schedules",
            "/calendar.ics",
            "/openapi.json",
        ):
            status, body = _raw(served.port, "GET", path, {"Host": host})
            assert status == 421, (host, path, status)
            assert json.loads(body)["error"]["code"] == "misdirected_request"
            assert "금고" not in body.decode(), "nothing of the store in the refusal"
        status, body = _raw(
            served.port,
            "POST",
            f"/api/v1/schedules/{schedule}/pause",
            {"Host": host, "Content-Type": "application/json"},
            b"{}",
        )
        assert status == 421
    # Another port of loopback is another server: refused too.
    status, _ = _raw(served.port, "GET", "/api/v1/export?format=jsonl", {"Host": "127.0.0.1:1"})
    assert status == 421
    assert _state(engine, schedule) == before
    # The names that mean this machine still get the export.
    for host in (f"127.0.0.1:{served.port}", f"localhost:{served.port}"):
        status, body = _raw(served.port, "GET", "/api/v1/export?format=jsonl", {"Host": host})
        assert status == 200, (host, status)
        assert "회의실 뒤 서랍" in body.decode()


def test_a_configured_public_name_is_answered(db_url: str, tmp_path: Path) -> None:
    public = "deck.example.net, 덱.example"
    with serve_database(db_url, tmp_path / "data", Served, ONDECK_PUBLIC_HOSTS=public) as served:
        status, _ = _raw(served.port, "GET", "/api/v1/health", {"Host": "deck.example.net"})
        assert status == 200
        # A name in Korean is asked for in its ASCII form (what a browser sends as Host).
        status, _ = _raw(served.port, "GET", "/api/v1/health", {"Host": "xn--3n1b.example:443"})
        assert status == 200
        status, _ = _raw(served.port, "GET", "/api/v1/health", {"Host": "other.example.net"})
        assert status == 421


def test_no_page_of_ondeck_loads_a_third_party_script_or_style(served: Served) -> None:
    """Every page the server has (the dashboard's, /docs, /redoc) loads scripts and styles
    from itself only."""
    pages = ["/", "/tasks", "/schedules", "/sessions", "/memory", "/activity", "/system"]
    pages += ["/docs", "/redoc", "/login"]
    external = re.compile(
        r"""<(?:script|link|img|iframe)\b[^>]*?(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", re.I
    )
    for path in pages:
        try:
            with urllib.request.urlopen(f"{served.url}{path}", timeout=10) as answer:
                html = answer.read().decode()
        except urllib.error.HTTPError as missing:  # /docs and /redoc: not served at all
            assert missing.code == 404, path
            html = missing.read().decode()
        assert not external.search(html), (path, external.search(html))
        assert "cdn." not in html, path
