"""The dashboard in a real browser: Debian's Chromium (headless, driven by Playwright)
against a real `ondeck serve` process, on SQLite and on PostgreSQL.

Ticks happen only when a test runs `ondeck jobs --once` (the server runs with --no-jobs),
and the CLI claims tasks as a separate process, as a person or an agent would.

With `ONDECK_TEST_SCREENSHOTS=1` the SQLite run saves a screenshot of each page into
docs/screenshots/ (docs/screenshots/make.py makes the full set the docs show); otherwise they
go to the test's tmp directory.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ondeck.core import clock
from ondeck.core.rules import parse
from ondeck.work import backlog, schedules
from support.served import ONDECK, Served, serve_database

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]
TOKEN = "browser-test-token-0123456789abcdef0123456789abcdef"


class Server(Served):
    def ondeck(self, *args: str) -> str:
        """Run the CLI as its own process on the same database; its stdout."""
        result = subprocess.run(
            [ONDECK, "--db", self.db_url, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, f"ondeck {' '.join(args)}: {result.stderr}"
        return result.stdout

    def tick(self) -> None:
        self.ondeck("jobs", "--once")


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[Server]:
    with serve_database(db_url, tmp_path / "data", Server, ONDECK_LEASE_GRACE="1s") as served:
        yield served


@pytest.fixture
def locked_server(db_url: str, tmp_path: Path) -> Iterator[Server]:
    locked = {"ONDECK_LEASE_GRACE": "1s", "ONDECK_TOKEN": TOKEN}
    with serve_database(db_url, tmp_path / "data", Server, **locked) as served:
        yield served


@pytest.fixture
def shots(db_url: str, tmp_path: Path) -> Path:
    if os.environ.get("ONDECK_TEST_SCREENSHOTS") == "1" and db_url.startswith("sqlite"):
        return REPO / "docs" / "screenshots"
    return tmp_path / "screenshots"


def _shot(page, folder: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def _seed(engine: Engine) -> None:
    """Some ordinary contents, so the pages (and screenshots) look like a day's work."""
    now = clock.now()
    day = clock.today(now, clock.aware(now).tzinfo)  # type: ignore[arg-type]
    with engine.begin() as conn:
        backlog.create_task(
            conn,
            now,
            title="Review the open pull requests",
            actor="cli",
            project="ondeck",
            priority=1,
        )
        backlog.create_task(
            conn,
            now,
            title="Renew the TLS certificate",
            actor="cli",
            project="ops",
            due_on=day - timedelta(days=2),
            priority=0,
        )
        backlog.create_task(conn, now, title="Answer the accountant", actor="cli", due_on=day)
        backlog.create_task(
            conn, now, title="Sketch the next release notes", actor="cli", priority=3
        )
        from zoneinfo import ZoneInfo

        schedules.create_schedule(
            conn,
            now,
            ZoneInfo("UTC"),
            title="Stand-up notes",
            rule="weekly:MON,TUE,WED,THU,FRI,SAT,SUN",
            kind="remind",
            body="Write down yesterday, today, blockers.",
        )
        schedules.create_schedule(
            conn,
            now,
            ZoneInfo("UTC"),
            title="Water the plants",
            rule="every:3",
            kind="task",
            project="home",
        )


def test_schedules_backlog_leases_and_activity_in_a_browser(
    page, server: Server, engine: Engine, shots: Path
) -> None:  # type: ignore[no-untyped-def]
    _seed(engine)
    server.tick()  # a fresh heartbeat, the default backup schedule, today's fires
    today = clock.today(clock.now(), clock.aware(clock.now()).tzinfo)  # type: ignore[arg-type]

    # --- a schedule: monthly:31 is refused with the reason, monthly:1 shows its dates
    page.goto(f"{server.url}/schedules")
    page.locator("details.add summary").click()
    form = page.locator("form.schedule-form")
    form.locator("input[name=title]").fill("Pay rent")
    form.locator("input[name=rule]").fill("monthly:31")
    preview = page.locator("#rule-preview")
    expect(preview.locator("[data-state=refused]")).to_contain_text("day 31 is refused")
    form.locator("button", has_text="add schedule").click()
    expect(page.locator("#flash")).to_contain_text("not every month has a day 31")
    expect(page.locator("form.schedule-form input[name=rule]")).to_have_value("monthly:31")
    _shot(page, shots, "schedules-rule-refused")
    page.locator("form.schedule-form input[name=rule]").fill("monthly:1")
    expect(preview.locator("[data-state=ok]")).to_contain_text("on the 1st of every month")
    expected = [d.isoformat() for d in parse("monthly:1").occurrences(today, today, 5)]
    expect(preview.locator("ol.next-dates time")).to_have_count(5)
    shown = preview.locator("ol.next-dates time").evaluate_all(
        "els => els.map(e => e.getAttribute('datetime'))"
    )
    assert shown == expected
    shots.mkdir(parents=True, exist_ok=True)
    page.locator("details.add").screenshot(path=str(shots / "schedules-rule-check.png"))
    page.locator("form.schedule-form button", has_text="add schedule").click()
    expect(page.locator("#flash")).to_contain_text("added schedule")

    # --- "now": no task yet; one jobs tick; reload; exactly one task
    row = page.locator("tr", has=page.locator("a", has_text="Pay rent"))
    row.locator("button", has_text="now").click()
    expect(page.locator("tr", has=page.locator("a", has_text="Pay rent"))).to_contain_text(
        "due today — will be created by the jobs loop within a minute"
    )
    page.reload()  # the row says the same from stored state
    expect(page.locator("tr", has=page.locator("a", has_text="Pay rent"))).to_contain_text(
        "will be created by the jobs loop within a minute"
    )
    _shot(page, shots, "schedules")
    page.goto(f"{server.url}/tasks")
    expect(page.locator("table.tasks")).not_to_contain_text("Pay rent")
    server.tick()
    page.reload()
    expect(page.locator("table.tasks tr", has_text="Pay rent")).to_have_count(1)
    page.goto(f"{server.url}/schedules")
    expect(page.locator("tr", has=page.locator("a", has_text="Pay rent"))).to_contain_text(
        "processed"
    )

    # --- a lease taken from the CLI shows on Backlog with its end, then is reaped
    with engine.connect() as conn:
        target = next(t for t in backlog.list_tasks(conn) if t.title == "Pay rent")
    # Long enough for a loaded machine to show two pages before the lease ends (a busy
    # runner can take seconds a page); its end is real time the test then waits out.
    lease = 15
    server.ondeck("task", "claim", str(target.id), "--owner", "cli:alice", "--for", f"{lease}s")
    claimed_at = time.monotonic()
    page.goto(f"{server.url}/tasks")
    task_row = page.locator(f"#task-{target.id}")
    expect(task_row).to_contain_text("RUNNING")
    expect(task_row).to_contain_text("held by cli:alice")
    expect(task_row).to_contain_text("lease until")
    _shot(page, shots, "backlog")
    page.goto(f"{server.url}/")
    expect(page.locator("#today")).to_contain_text("cli:alice")
    _shot(page, shots, "today")
    # Past the lease end and the grace (1 s), with a margin.
    time.sleep(max(0.0, lease + 2.0 - (time.monotonic() - claimed_at)))
    server.tick()
    page.goto(f"{server.url}/tasks")
    expect(page.locator(f"#task-{target.id}")).to_contain_text("READY")
    expect(page.locator(f"#task-{target.id}")).not_to_contain_text("cli:alice")
    page.goto(f"{server.url}/activity")
    reaped = page.locator("table.events tr", has_text="task.reaped")
    expect(reaped.first).to_contain_text(f"task:{target.id}")
    expect(reaped.first).to_contain_text("owner=cli:alice")
    _shot(page, shots, "activity")

    page.goto(f"{server.url}/tasks/{target.id}")
    expect(page.locator("table.events")).to_contain_text("task.claimed")
    _shot(page, shots, "task")
    page.goto(f"{server.url}/system")
    expect(page.locator("table.workers")).to_contain_text("jobs@")
    _shot(page, shots, "system")

    # --- a form whose CSRF token was taken out is refused, and nothing is written
    page.goto(f"{server.url}/tasks")
    page.locator("details.add summary").click()
    add = page.locator("form.task-form")
    add.locator("input[name=title]").fill("forged without a token")
    add.locator("input[name=csrf_token]").evaluate("el => el.remove()")
    add.locator("button", has_text="add task").click()
    expect(page.locator("main")).to_contain_text("security token is missing or out of date")
    page.goto(f"{server.url}/tasks?status=all")
    expect(page.locator("table.tasks")).not_to_contain_text("forged without a token")


def test_login_and_logout_with_a_token_in_a_browser(
    page, locked_server: Server, shots: Path
) -> None:  # type: ignore[no-untyped-def]
    url = locked_server.url
    page.goto(f"{url}/tasks")
    expect(page).to_have_url(f"{url}/login?next=%2Ftasks")
    _shot(page, shots, "login")
    page.locator("input[name=token]").fill("not the token")
    page.locator("button", has_text="log in").click()
    expect(page.locator("#flash")).to_contain_text("wrong token")
    page.locator("input[name=token]").fill(TOKEN)
    page.locator("button", has_text="log in").click()
    expect(page).to_have_url(f"{url}/tasks")
    expect(page.locator("h1")).to_have_text("Backlog")
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["ondeck_session"]["httpOnly"] is True
    assert cookies["ondeck_session"]["sameSite"] == "Strict"
    # htmx works behind the login: the live rule check answers.
    page.goto(f"{url}/schedules")
    page.locator("details.add summary").click()
    page.locator("form.schedule-form input[name=rule]").fill("weekly:mon")
    expect(page.locator("#rule-preview")).to_contain_text("every Monday")
    page.locator("button", has_text="Log out").click()
    expect(page).to_have_url(f"{url}/login")
    page.goto(f"{url}/")
    expect(page).to_have_url(f"{url}/login?next=%2F")
