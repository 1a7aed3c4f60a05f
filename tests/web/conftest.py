"""Dashboard test helpers: a client on the app at a frozen instant, and the CSRF token."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import Settings
from support.browser import launched

# Monday 2026-06-15, 09:00 UTC, as in the other suites.
NOW = datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(client: TestClient, page: str = "/tasks") -> str:
    """The CSRF token a page's forms carry (the GET also sets the cookie it matches)."""
    response = client.get(page)
    assert response.status_code == 200, response.text
    found = _CSRF.search(response.text)
    assert found, "the page has a form with a CSRF token"
    return found.group(1)


class Dashboard:
    """A TestClient plus the token its forms need; `post` adds the token."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.token = csrf_of(client)

    @staticmethod
    def flash(html: str) -> str:
        """The flash message a page shows (escaped HTML text)."""
        found = re.search(r'class="flash flash-\w+"[^>]*>(.*?)</p>', html, re.S)
        return found.group(1) if found else ""

    def get(self, url: str, **kwargs: object):  # type: ignore[no-untyped-def]
        return self.client.get(url, **kwargs)  # type: ignore[arg-type]

    def post(self, url: str, data: dict[str, str] | None = None, **kwargs: object):  # type: ignore[no-untyped-def]
        fields = {"csrf_token": self.token, **(data or {})}
        return self.client.post(url, data=fields, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def at() -> Iterator[time_machine.Coordinates]:
    """The clock frozen at NOW (Monday 2026-06-15 09:00 UTC); `at.move_to(...)` moves it."""
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


@pytest.fixture
def dash(engine: Engine, settings: Settings, at: time_machine.Coordinates) -> Iterator[Dashboard]:
    with TestClient(create_app(settings, engine)) as client:
        yield Dashboard(client)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Chromium, launched once for a module's tests (each opens its own context)."""
    yield from launched()


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    """A page in a browser context of its own (no cookies shared with another test)."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()
