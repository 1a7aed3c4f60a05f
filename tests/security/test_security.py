"""The security promises, each checked over every route it covers: a non-loopback bind needs a
token; with a token every API route needs the bearer (compared in constant time); every
dashboard form needs its CSRF token; stored markup is shown as text; SQL metacharacters are
stored verbatim; bodies over 1 MiB are refused with 413, declared or streamed.

The routes are enumerated from the app itself, so a new route is covered without editing
this file.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import time_machine
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from ondeck.core.errors import ConfigError
from ondeck.db.tables import events, schedules, tasks
from ondeck.entrypoints.api.app import MAX_BODY_BYTES, create_app
from ondeck.entrypoints.cli import run
from ondeck.entrypoints.server.serve import check_bind
from ondeck.host.settings import Settings, load_settings
from support.pg import free_port

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
TOKEN = "correct-horse-battery-staple-0123456789abcdef0123456789abcdef"
API = "/api/v1"
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def routes(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path) of every HTTP route, through nested routers (FastAPI keeps included
    routers as nodes of their own since 0.16x; older ones list plain routes)."""
    found: set[tuple[str, str]] = set()

    def walk(nodes: Any) -> None:
        for node in nodes:
            if hasattr(node, "effective_route_contexts"):
                for ctx in node.effective_route_contexts():
                    found.update((m, ctx.path) for m in ctx.methods or ())
            elif getattr(node, "methods", None):
                found.update((m, node.path) for m in node.methods)

    walk(app.routes)
    return sorted(found - {(m, p) for m, p in found if m == "HEAD"})


def concrete(path: str, ident: int = 1) -> str:
    return re.sub(r"\{[^}]+\}", str(ident), path)


def counts(engine: Engine) -> tuple[int, int, int]:
    with engine.connect() as conn:
        return tuple(  # type: ignore[return-value]
            conn.execute(select(func.count()).select_from(t)).scalar_one()
            for t in (tasks, schedules, events)
        )


def token_settings(db_url: str, tmp_path: Path) -> Settings:
    return load_settings(database_url=db_url, tz="UTC", token=TOKEN, data_dir=tmp_path / "data")


@pytest.fixture
def seeded(engine: Engine, settings: Settings) -> Engine:
    """Task 1 READY, task 2 RUNNING, schedule 1: every path id names something real."""
    with TestClient(create_app(settings, engine)) as client:
        client.post(f"{API}/tasks", json={"title": "one"})
        client.post(f"{API}/tasks", json={"title": "two"})
        client.post(f"{API}/tasks/2/claim", json={"owner": "o"})
        client.post(f"{API}/schedules", json={"title": "s", "rule": "daily"})
    return engine


# --- binding ---------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.org"])
def test_a_bind_beyond_loopback_without_a_token_is_refused(tmp_path: Path, host: str) -> None:
    settings = load_settings(database_url=f"sqlite:///{tmp_path}/x.db", data_dir=tmp_path)
    with pytest.raises(ConfigError, match="needs ONDECK_TOKEN"):
        check_bind(settings, host, free_port())


def test_the_cli_refuses_it_with_one_line_and_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ONDECK_DATABASE_URL", f"sqlite:///{tmp_path}/x.db")
    code = run(["serve", "--host", "0.0.0.0", "--port", str(free_port())])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "needs ONDECK_TOKEN" in err
    assert not (tmp_path / "x.db").exists()  # refused before the database was opened


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_needs_no_token(tmp_path: Path, host: str) -> None:
    settings = load_settings(database_url=f"sqlite:///{tmp_path}/x.db", data_dir=tmp_path)
    try:
        check_bind(settings, host, free_port())
    except ConfigError as exc:  # an address this machine lacks (no IPv6) is another refusal
        assert "ONDECK_TOKEN" not in str(exc)


def test_with_a_token_any_address_may_be_bound(tmp_path: Path) -> None:
    settings = token_settings(f"sqlite:///{tmp_path}/x.db", tmp_path)
    check_bind(settings, "0.0.0.0", free_port())  # only a probe bind; nothing listens


# --- the bearer token ------------------------------------------------------------------


@pytest.fixture
def locked_api(seeded: Engine, db_url: str, tmp_path: Path) -> Iterator[TestClient]:
    app = create_app(token_settings(db_url, tmp_path), seeded)
    with time_machine.travel(NOW, tick=False), TestClient(app) as client:
        yield client


def api_routes(app: FastAPI) -> list[tuple[str, str]]:
    found = [(m, p) for m, p in routes(app) if p.startswith("/api/")]
    documented = {
        (method.upper(), path)
        for path, ops in app.openapi()["paths"].items()
        for method in ops
        if path.startswith("/api/")
    }
    assert documented <= set(found), documented - set(found)  # the walk misses nothing
    return found


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer wrong",
        "Bearer ",
        f"Bearer {TOKEN[:-1]}",
        f"Bearer {TOKEN}x",
        f"Basic {TOKEN}",
        TOKEN,
        f"Token {TOKEN}",
    ],
    ids=["none", "wrong", "empty", "prefix", "longer", "basic", "bare", "other-scheme"],
)
def test_every_api_route_needs_the_bearer_token(
    locked_api: TestClient, seeded: Engine, authorization: str | None
) -> None:
    before = counts(seeded)
    headers = {"Authorization": authorization} if authorization is not None else {}
    checked = api_routes(locked_api.app)  # type: ignore[arg-type]
    assert len(checked) >= 20
    for i, (method, path) in enumerate(checked):
        # Each route from its own address: after ten wrong tokens one address is refused
        # with 429 whatever it sends (tests/api/test_device_tokens.py), not what is checked here.
        client = TestClient(locked_api.app, client=(f"10.1.{i // 250}.{i % 250 + 1}", 5000))
        response = client.request(method, concrete(path), headers=headers, json={})
        assert response.status_code == 401, (method, path, response.status_code)
        assert response.json()["error"]["code"] == "unauthorized"
        assert response.headers["www-authenticate"] == "Bearer"
    assert counts(seeded) == before  # nothing was written


@pytest.mark.parametrize(
    "authorization", [None, "Bearer wrong", f"Bearer {TOKEN}x", TOKEN, f"Basic {TOKEN}"]
)
def test_mcp_over_http_needs_the_bearer_token_too(
    locked_api: TestClient, seeded: Engine, authorization: str | None
) -> None:
    """`/mcp` (entrypoints/mcp/http.py) is behind the same check as the API, every method."""
    before = counts(seeded)
    headers = {"Authorization": authorization} if authorization is not None else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for i, method in enumerate(("GET", "POST", "DELETE")):
        client = TestClient(locked_api.app, client=(f"10.2.0.{i + 1}", 5000))
        response = client.request(method, "/mcp", headers=headers, json=body)
        assert response.status_code == 401, (method, response.status_code)
        assert response.json()["error"]["code"] == "unauthorized"
    assert counts(seeded) == before


def test_the_right_token_opens_every_api_route(locked_api: TestClient) -> None:
    for method, path in api_routes(locked_api.app):  # type: ignore[arg-type]
        response = locked_api.request(
            method, concrete(path), headers={"Authorization": f"bearer  {TOKEN}"}, json={}
        )
        assert response.status_code != 401, (method, path)


def test_the_api_description_needs_the_bearer_or_a_dashboard_login(
    locked_api: TestClient,
) -> None:
    documents = ("/openapi.json",)
    for path in documents:
        refused = locked_api.get(path)
        assert refused.status_code == 401, path
        assert refused.json()["error"]["code"] == "unauthorized"
        wrong = locked_api.get(path, headers={"Authorization": "Bearer guess"})
        assert wrong.status_code == 401, path
        opened = locked_api.get(path, headers={"Authorization": f"Bearer {TOKEN}"})
        assert opened.status_code == 200, path
    page = locked_api.get("/login")
    locked_api.post("/login", data={"token": TOKEN, "csrf_token": _CSRF.search(page.text).group(1)})
    for path in documents:
        assert locked_api.get(path).status_code == 200, path
    assert locked_api.get(f"{API}/tasks").status_code == 401, "the login opens no API route"


def test_the_token_is_compared_in_constant_time(
    locked_api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hmac.compare_digest (not ==) sees both values; timing itself is too noisy to test."""
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def recording(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", recording)
    assert locked_api.get(f"{API}/tasks", headers={"Authorization": "Bearer guess"}).status_code
    assert (b"guess", TOKEN.encode()) in calls
    calls.clear()
    assert locked_api.get(f"{API}/tasks", headers={"Authorization": f"Bearer {TOKEN}"}).is_success
    assert calls == [(TOKEN.encode(), TOKEN.encode())]
    calls.clear()
    page = locked_api.get("/login")  # the dashboard's login compares the same way
    locked_api.post(
        "/login", data={"token": "guess", "csrf_token": _CSRF.search(page.text).group(1)}
    )
    assert (b"guess", TOKEN.encode()) in calls


# --- CSRF on every dashboard form ------------------------------------------------------


def form_routes(app: FastAPI) -> list[str]:
    # /mcp is MCP's JSON endpoint (bearer token, JSON bodies only), not a dashboard form.
    return [p for m, p in routes(app) if m == "POST" and not p.startswith("/api/") and p != "/mcp"]


@pytest.mark.parametrize("token", [None, TOKEN], ids=["open", "with-login"])
def test_every_dashboard_form_without_its_csrf_token_is_refused(
    seeded: Engine, db_url: str, tmp_path: Path, token: str | None
) -> None:
    settings = load_settings(database_url=db_url, tz="UTC", token=token, data_dir=tmp_path)
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, seeded)) as client:
        if token:  # logged in, so that only the CSRF check stands in the way
            page = client.get("/login")
            client.post(
                "/login",
                data={"token": TOKEN, "csrf_token": _CSRF.search(page.text).group(1)},
                follow_redirects=False,
            )
        client.get("/tasks")  # the browser holds a CSRF cookie; the form lacks the token
        before = counts(seeded)
        paths = form_routes(client.app)  # type: ignore[arg-type]
        assert len(paths) >= 10
        fields = {"title": "forged", "rule": "daily", "token": TOKEN, "priority": "1"}
        for path in paths:
            for data in (fields, {**fields, "csrf_token": "forged.token.value"}):
                response = client.post(concrete(path), data=data, follow_redirects=False)
                assert response.status_code == 403, (path, response.status_code)
        # A form posted cross-site to /mcp is no MCP request: refused, nothing written.
        forged = client.post("/mcp", data=fields, follow_redirects=False)
        assert forged.status_code >= 400, forged.status_code
        assert counts(seeded) == before


def test_no_dashboard_page_changes_anything_on_get(seeded: Engine, settings: Settings) -> None:
    """Confirmation pages (release, delete) ask; only their POST acts."""
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, seeded)) as client:
        before = counts(seeded)
        for method, path in routes(client.app):  # type: ignore[arg-type]
            if method == "GET" and not path.startswith("/api/"):
                assert client.get(concrete(path, 2)).status_code < 500, path
        assert counts(seeded) == before


# --- stored XSS ------------------------------------------------------------------------

PAYLOADS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "<svg/onload=alert(1)>",
    "javascript:alert(1)",
    "' onmouseover='alert(1)",
]


def test_stored_markup_is_shown_as_text_on_every_page(engine: Engine, settings: Settings) -> None:
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as client:
        ids = []
        for n, payload in enumerate(PAYLOADS):
            task = client.post(
                f"{API}/tasks", json={"title": payload, "body": payload, "due_on": "2026-06-15"}
            ).json()
            ids.append(task["id"])
            client.post(
                f"{API}/schedules", json={"title": payload, "body": payload, "rule": "daily"}
            )
            if n == 0:
                held = client.post(f"{API}/tasks/{task['id']}/claim", json={"owner": payload})
                client.post(
                    f"{API}/tasks/{task['id']}/complete",
                    json={"token": held.json()["lease_token"], "note": payload},
                )
        pages = ["/", "/tasks", "/tasks?status=all", "/schedules", "/activity", "/system"]
        pages += [f"/tasks/{i}" for i in ids] + ["/schedules/1", "/schedules/1/delete"]
        pages += [f"/tasks?project={PAYLOADS[0]}", f"/activity?kind={PAYLOADS[0]}"]
        pages += [f"/schedules/rule-preview?rule={PAYLOADS[0]}"]
        for page in pages:
            response = client.get(page)
            assert response.status_code < 500, page
            html = response.text
            for payload in PAYLOADS:
                if "<" in payload:
                    assert payload not in html, (page, payload)
            assert "<script>alert" not in html and "onerror=alert(1)>" not in html, page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get("/tasks?status=all").text
        assert 'href="javascript:' not in client.get(f"/tasks/{ids[3]}").text


def test_a_refused_form_echoes_the_input_as_text(engine: Engine, settings: Settings) -> None:
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as client:
        token = _CSRF.search(client.get("/tasks").text).group(1)  # type: ignore[union-attr]
        response = client.post(
            "/tasks",
            data={"title": "x", "project": PAYLOADS[0], "csrf_token": token},
            follow_redirects=True,
        )
        assert "<script>alert(1)" not in response.text
        assert counts(engine)[0] == 0


# --- SQL metacharacters ----------------------------------------------------------------

NASTY = [
    "'; DROP TABLE tasks; --",
    "Robert'); DELETE FROM events WHERE ('1'='1",
    "100% done",
    "under_score",
    "back\\slash \\' \\\\",
    'double "quoted"',
    "%_%",
    "$1 :name ? %s {0}",
    "-- comment /* block */",
]
PROJECTS = ["a_b", "a.b", "a-b", "x" * 64, "_", "..", "-"]


def test_sql_metacharacters_are_stored_verbatim_in_every_text_field(
    engine: Engine, settings: Settings
) -> None:
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as client:
        for text in NASTY:
            task = client.post(f"{API}/tasks", json={"title": text, "body": text})
            assert task.status_code == 201, task.text
            tid = task.json()["id"]
            held = client.post(f"{API}/tasks/{tid}/claim", json={"owner": text}).json()
            assert held["lease_owner"] == text
            done = client.post(
                f"{API}/tasks/{tid}/complete", json={"token": held["lease_token"], "note": text}
            )
            assert done.status_code == 200
            got = client.get(f"{API}/tasks/{tid}").json()
            assert (got["title"], got["body"]) == (text, text)
            note = client.get(f"{API}/events", params={"subject": f"task:{tid}"}).json()
            assert note[0]["details"]["note"] == text
            edited = client.patch(f"{API}/tasks/{tid}", json={"title": text + "!"})
            assert edited.status_code == 409  # closed: the refusal, not a syntax error
            schedule = client.post(
                f"{API}/schedules", json={"title": text, "body": text, "rule": "daily"}
            )
            assert schedule.status_code == 201, schedule.text
            shown = client.get(f"{API}/schedules/{schedule.json()['id']}").json()["schedule"]
            assert (shown["title"], shown["body"]) == (text, text)
        assert counts(engine)[0] == len(NASTY)  # no statement was cut short or multiplied


def test_project_names_keep_their_characters_and_match_only_themselves(
    engine: Engine, settings: Settings
) -> None:
    """`_` and `.` are allowed in project names: they must not act as LIKE wildcards."""
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as client:
        for project in [*PROJECTS, "axb"]:
            made = client.post(f"{API}/tasks", json={"title": project, "project": project})
            assert made.status_code == 201 and made.json()["project"] == project
        for project in PROJECTS:
            listed = client.get(f"{API}/tasks", params={"project": project}).json()
            assert [t["project"] for t in listed] == [project]
        for bad in ["%", "a b", "a'b", "a;b", 'a"b', "a\\b", "", "x" * 65]:
            refused = client.post(f"{API}/tasks", json={"title": "t", "project": bad})
            assert refused.status_code == 422, bad
            assert refused.json()["error"]["code"] == "invalid_input"
            assert client.get(f"{API}/tasks", params={"project": bad}).status_code == 422


def test_event_filters_treat_wildcards_as_text(engine: Engine, settings: Settings) -> None:
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as client:
        client.post(f"{API}/tasks", json={"title": "t"})
        assert len(client.get(f"{API}/events", params={"kind": "task."}).json()) == 1
        for kind in ["%", "%.", "_ask.", "task_created", "t%"]:
            assert client.get(f"{API}/events", params={"kind": kind}).json() == [], kind
        assert client.get(f"{API}/events", params={"subject": "task:%"}).json() == []


# --- body size -------------------------------------------------------------------------


def _big(size: int) -> bytes:
    return b'{"title": "big", "body": "' + b"a" * size + b'"}'


def _streamed(data: bytes, chunk: int = 64 * 1024) -> Iterator[bytes]:
    for start in range(0, len(data), chunk):
        yield data[start : start + chunk]


@pytest.mark.parametrize("path", [f"{API}/tasks", f"{API}/schedules", "/tasks", "/schedules"])
@pytest.mark.parametrize("how", ["declared", "streamed"])
def test_bodies_over_one_mebibyte_are_refused_with_413(
    engine: Engine, settings: Settings, path: str, how: str
) -> None:
    body = _big(MAX_BODY_BYTES)
    content: bytes | Iterator[bytes] = body if how == "declared" else _streamed(body)
    with TestClient(create_app(settings, engine)) as client:
        response = client.post(path, content=content, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    assert counts(engine) == (0, 0, 0)


def test_a_streamed_body_under_the_limit_still_arrives_whole(
    engine: Engine, settings: Settings
) -> None:
    body = b'{"title": "streamed", "body": "' + b"b" * 19_000 + b'"}'
    with TestClient(create_app(settings, engine)) as client:
        response = client.post(
            f"{API}/tasks",
            content=_streamed(body, 1000),
            headers={"content-type": "application/json"},
        )
    assert response.status_code == 201, response.text
    assert response.json()["body"] == "b" * 19_000


def test_an_oversized_body_is_refused_before_the_token_is_checked(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    app = create_app(token_settings(db_url, tmp_path), engine)
    with TestClient(app) as client:
        response = client.post(f"{API}/tasks", content=_big(2 * MAX_BODY_BYTES))
    assert response.status_code == 413
