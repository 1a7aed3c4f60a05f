"""Dashboard login (with ONDECK_TOKEN) and CSRF on every form (always)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from ondeck.db.tables import tasks
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings, load_settings

NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
TOKEN = "s3cret-token-0123456789abcdef0123456789abcdef"
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
def locked(engine: Engine, db_url: str, tmp_path) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    settings = load_settings(database_url=db_url, tz="UTC", token=TOKEN, data_dir=tmp_path)
    with time_machine.travel(NOW, tick=False), TestClient(create_app(settings, engine)) as client:
        yield client


def _token(html: str) -> str:
    found = _CSRF.search(html)
    assert found
    return found.group(1)


def _login(client: TestClient, token: str = TOKEN, next_url: str = "/"):  # type: ignore[no-untyped-def]
    page = client.get("/login")
    return client.post(
        "/login",
        data={"token": token, "next": next_url, "csrf_token": _token(page.text)},
        follow_redirects=False,
    )


def _tasks(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(tasks)).scalar_one())


# --- CSRF -------------------------------------------------------------------------------


def test_a_form_without_its_csrf_token_is_refused_and_changes_nothing(dash, engine) -> None:  # type: ignore[no-untyped-def]
    bare = dash.client.post("/tasks", data={"title": "forged"})
    assert bare.status_code == 403 and "security token" in bare.text
    wrong = dash.client.post("/tasks", data={"title": "forged", "csrf_token": "x.y.z"})
    assert wrong.status_code == 403
    assert _tasks(engine) == 0
    ok = dash.post("/tasks", {"title": "real"}, follow_redirects=False)
    assert ok.status_code == 303 and _tasks(engine) == 1


def test_a_token_from_another_browser_does_not_pass(dash, engine, settings) -> None:  # type: ignore[no-untyped-def]
    """The signed token must match this browser's cookie (double submit)."""
    with TestClient(dash.client.app) as other:
        other.get("/tasks")  # its own cookie
        refused = other.post("/tasks", data={"title": "forged", "csrf_token": dash.token})
    assert refused.status_code == 403
    assert _tasks(engine) == 0


def test_a_token_signed_by_another_server_does_not_pass(engine, settings) -> None:  # type: ignore[no-untyped-def]
    with (
        TestClient(create_app(settings, engine)) as one,
        TestClient(create_app(settings, engine)) as two,
    ):
        token = _token(one.get("/tasks").text)
        two.cookies.set("ondeck_csrf", one.cookies["ondeck_csrf"])
        assert two.post("/tasks", data={"title": "x", "csrf_token": token}).status_code == 403


def test_htmx_may_send_the_token_as_a_header(dash, engine) -> None:  # type: ignore[no-untyped-def]
    response = dash.client.post(
        "/tasks",
        data={"title": "via header"},
        headers={"X-CSRF-Token": dash.token, "HX-Request": "true"},
        follow_redirects=False,
    )
    assert response.status_code in (200, 303)
    assert _tasks(engine) == 1
    refused = dash.client.post("/tasks", data={"title": "x"}, headers={"HX-Request": "true"})
    assert refused.status_code == 403 and refused.headers["hx-retarget"] == "#flash"


def test_the_csrf_cookie_is_httponly_and_samesite_strict(engine, settings) -> None:  # type: ignore[no-untyped-def]
    with TestClient(create_app(settings, engine)) as client:
        cookie = client.get("/").headers["set-cookie"]
    assert cookie.startswith("ondeck_csrf=")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")


def test_a_flash_message_cookie_must_be_signed_by_the_server(dash) -> None:  # type: ignore[no-untyped-def]
    dash.client.cookies.set("ondeck_flash", "You have been logged out, call 555-0100")
    assert "555-0100" not in dash.get("/tasks").text


def test_without_a_token_there_is_no_login(dash) -> None:  # type: ignore[no-untyped-def]
    page = dash.get("/")
    assert page.status_code == 200 and "Log out" not in page.text
    assert dash.get("/login", follow_redirects=False).headers["location"] == "/"


# --- login ------------------------------------------------------------------------------


def test_with_a_token_every_page_sends_the_browser_to_log_in(locked: TestClient) -> None:
    for path in ("/", "/tasks", "/tasks/1", "/schedules", "/activity", "/system"):
        response = locked.get(path, follow_redirects=False)
        assert response.status_code == 303, path
        assert response.headers["location"] == f"/login?next={path.replace('/', '%2F')}"
    htmx = locked.get("/", headers={"HX-Request": "true"}, follow_redirects=False)
    assert htmx.status_code == 401 and htmx.headers["hx-redirect"].startswith("/login")
    assert locked.get("/static/ondeck.css").status_code == 200  # the login page needs it


def test_a_wrong_token_does_not_log_in(locked: TestClient) -> None:
    response = _login(locked, "nope")
    assert response.status_code == 401 and "wrong token" in response.text
    assert "ondeck_session" not in locked.cookies
    assert locked.get("/", follow_redirects=False).status_code == 303


def test_login_sets_a_signed_httponly_strict_cookie_and_logout_clears_it(
    locked: TestClient, engine: Engine
) -> None:
    response = _login(locked, next_url="/tasks")
    assert response.status_code == 303 and response.headers["location"] == "/tasks"
    cookies = response.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith("ondeck_session="))
    assert "HttpOnly" in session and "samesite=strict" in session.lower()
    assert TOKEN not in session  # the cookie is a signature, never the token
    page = locked.get("/tasks")
    assert page.status_code == 200 and "Log out" in page.text
    created = locked.post(
        "/tasks",
        data={"title": "logged in", "csrf_token": _token(page.text)},
        follow_redirects=False,
    )
    assert created.status_code == 303 and _tasks(engine) == 1
    out = locked.post("/logout", data={"csrf_token": _token(page.text)}, follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert "ondeck_session" not in locked.cookies
    assert locked.get("/tasks", follow_redirects=False).status_code == 303


def test_a_tampered_session_cookie_is_refused(locked: TestClient) -> None:
    _login(locked)
    value = locked.cookies["ondeck_session"]
    locked.cookies.clear()
    locked.cookies.set("ondeck_session", value)
    assert locked.get("/", follow_redirects=False).status_code == 200
    locked.cookies.clear()
    locked.cookies.set("ondeck_session", value[:-2] + ("AA" if value[-2:] != "AA" else "BB"))
    assert locked.get("/", follow_redirects=False).status_code == 303


def test_the_login_form_needs_its_csrf_token_too(locked: TestClient) -> None:
    locked.get("/login")
    response = locked.post("/login", data={"token": TOKEN})
    assert response.status_code == 403
    assert "ondeck_session" not in locked.cookies


def test_login_never_redirects_to_another_site(locked: TestClient) -> None:
    for target in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
        assert _login(locked, next_url=target).headers["location"] == "/"
        locked.cookies.clear()


def test_the_dashboard_cookie_does_not_open_the_api(locked: TestClient) -> None:
    _login(locked)
    assert locked.get("/api/v1/tasks").status_code == 401
    bearer = locked.get("/api/v1/tasks", headers={"Authorization": f"Bearer {TOKEN}"})
    assert bearer.status_code == 200


def test_a_session_from_another_token_is_refused(engine: Engine, db_url: str, locked) -> None:  # type: ignore[no-untyped-def]
    _login(locked)
    cookie = locked.cookies["ondeck_session"]
    other = load_settings(
        database_url=db_url, tz="UTC", token="another-token-0123456789abcdef0123456789abcdef"
    )
    with TestClient(create_app(other, engine)) as client:
        client.cookies.set("ondeck_session", cookie)
        assert client.get("/", follow_redirects=False).status_code == 303


def test_the_login_page_escapes_next(locked: TestClient) -> None:
    page = locked.get('/login?next=/"><script>alert(1)</script>').text
    assert "<script>alert" not in page


def test_settings_fixture_has_no_token(settings: Settings) -> None:
    assert settings.token_value is None


# --- logging out ends the session on the server ------------------------------------------


def test_logging_out_ends_the_session_on_the_server(locked: TestClient, engine: Engine) -> None:
    """A copy of the session cookie (another tab, a stolen backup of the browser profile)
    opens nothing once its session logged out: the server forgot the session, and only
    that one (another browser's login goes on)."""
    laptop = TestClient(locked.app)  # type: ignore[arg-type]
    _login(laptop)
    _login(locked)
    copied = locked.cookies["ondeck_session"]
    page = locked.get("/tasks")
    assert page.status_code == 200
    out = locked.post("/logout", data={"csrf_token": _token(page.text)}, follow_redirects=False)
    assert out.status_code == 303
    with TestClient(locked.app) as thief:  # type: ignore[arg-type]
        thief.cookies.set("ondeck_session", copied)
        assert thief.get("/tasks", follow_redirects=False).status_code == 303
        assert thief.get("/openapi.json").status_code == 401
        assert thief.get("/calendar.ics").status_code == 401
    assert laptop.get("/tasks", follow_redirects=False).status_code == 200
    with engine.connect() as conn:
        from ondeck.db.tables import dashboard_sessions

        assert conn.execute(select(func.count()).select_from(dashboard_sessions)).scalar() == 1


def test_the_store_keeps_no_session_id(locked: TestClient, engine: Engine) -> None:
    """Only a hash: a copy of the database opens no session."""
    from ondeck.db.tables import dashboard_sessions

    _login(locked)
    cookie = locked.cookies["ondeck_session"]
    with engine.connect() as conn:
        [row] = conn.execute(select(dashboard_sessions)).all()
    session_id = cookie.split(".")[0]
    assert row.hash not in cookie and len(row.hash) == 64 and session_id not in row.hash


def test_a_blank_or_short_token_never_logs_in(engine: Engine, db_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`ONDECK_TOKEN=" "` counts for nothing: the login and `calendar.ics?token=%20` take no
    space. Such a token is refused where it is read, saying why and how to make one."""
    from ondeck.core.errors import ConfigError
    from ondeck.entrypoints.web.auth import Guard

    for given in (" ", "  \t", "x", "s3cret", "토큰토큰토큰", "a" * 40, "two\nlines" * 5):
        with pytest.raises(ConfigError) as refused:
            load_settings(database_url=db_url, tz="UTC", token=given, data_dir=tmp_path)
        assert "openssl rand -hex 32" in str(refused.value)
        with pytest.raises(ValueError):
            Guard.create(given)
