"""The Memory page in a real browser (Debian's Chromium via Playwright) against a real
`ondeck serve`, on both stores: results appear as a person types (htmx), and the same
search works with JavaScript off (the plain GET form)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from ondeck.core import clock
from ondeck.memory import notes as notes_svc

# The server fixture is test_browser's (imported, pytest finds it here); the browser and
# the page are web/conftest.py's.
from web.test_browser import Server, server  # noqa: F401

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _seed(engine: Engine) -> None:
    from zoneinfo import ZoneInfo

    with engine.begin() as conn:
        for text in ("금요일에 배포했다", "배포 일정은 목요일", "the lease grace is long"):
            notes_svc.add_note(
                conn, clock.now(), text=text, side=None, project=None, sides={},
                zone=ZoneInfo("UTC"), actor="t",
            )  # fmt: skip


def test_results_appear_as_a_person_types(page, server: Server, engine: Engine) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    _seed(engine)
    page.goto(f"{server.url}/memory")
    page.get_by_role("searchbox").press_sequentially("배포", delay=50)
    results = page.locator("#results")
    expect(results).to_contain_text("금요일에 배포했다")
    expect(results).to_contain_text("배포 일정은 목요일")
    expect(results).not_to_contain_text("lease grace")
    assert page.url.endswith("/memory"), "no page load: htmx swapped the results in"


def test_the_search_works_with_javascript_off(browser, server: Server, engine: Engine) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    _seed(engine)
    context = browser.new_context(java_script_enabled=False)
    try:
        plain = context.new_page()
        plain.goto(f"{server.url}/memory")
        plain.get_by_role("searchbox").fill("grace")
        plain.get_by_role("button", name="search").click()
        expect(plain.locator("#results")).to_contain_text("the lease grace is long")
        assert "q=grace" in plain.url
    finally:
        context.close()
