"""Make the screenshots of docs/dashboard.md: every dashboard page, from a real server.

    .venv/bin/python docs/screenshots/make.py [--out DIR]

It starts `ondeck serve` on a throwaway SQLite store in a temporary folder, fills it through
the CLI and the hooks (as a person and Claude Code would) with a few tasks, schedules,
sessions and notes in Korean and English, then drives Debian's Chromium (headless, through
Playwright; never `playwright install`) over every page. Nothing outside the temporary
folder and the output folder is touched. Korean needs a Korean font on the machine
(`apt-get install fonts-nanum`, or `fonts-noto-cjk`): without one the script stops, since
its pictures would show empty boxes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

HERE = Path(__file__).resolve().parent
ONDECK = str(Path(sys.executable).with_name("ondeck"))
CHROMIUM = "/usr/bin/chromium"
TOKEN = "screenshots-0123456789abcdef0123456789abcdef"
WIDTH, HEIGHT = 1280, 860


class Deck:
    """A throwaway ondeck: its folders, its environment, its CLI and hooks."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.work = root / "work"
        self.personal = root / "personal"
        self.scratch = root / "scratch"
        for folder in (self.work, self.personal, self.scratch):
            folder.mkdir()
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "HOME": str(root),
            "ONDECK_CONFIG": str(root / "config.toml"),
            "ONDECK_DATA_DIR": str(root / "data"),
            "ONDECK_TZ": "Asia/Seoul",
            "ONDECK_TOKEN": TOKEN,
            "ONDECK_SIDES": json.dumps(
                {"work": [str(self.work)], "personal": [str(self.personal)]}
            ),
            "GIT_AUTHOR_NAME": "Minji",
            "GIT_AUTHOR_EMAIL": "minji@example.net",
            "GIT_COMMITTER_NAME": "Minji",
            "GIT_COMMITTER_EMAIL": "minji@example.net",
        }
        self.env.pop("ONDECK_DATABASE_URL", None)
        self.env.pop("ONDECK_SERVER_URL", None)

    def ondeck(self, *args: str, cwd: Path | None = None, stdin: str | None = None) -> str:
        result = subprocess.run(
            [ONDECK, *args],
            env=self.env,
            cwd=cwd or self.root,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise SystemExit(f"ondeck {' '.join(args)}: {result.stderr}")
        return result.stdout

    def git(self, cwd: Path, *args: str) -> None:
        subprocess.run(["git", *args], cwd=cwd, env=self.env, check=True, capture_output=True)

    def hook(self, verb: str, session: str, cwd: Path, **fields: str) -> None:
        event = {
            "session-start": "SessionStart",
            "stop": "Stop",
            "post-compact": "PostCompact",
            "session-end": "SessionEnd",
        }[verb]
        payload = {"session_id": session, "cwd": str(cwd), "hook_event_name": event, **fields}
        self.ondeck("hook", verb, cwd=cwd, stdin=json.dumps(payload))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait(url: str, proc: subprocess.Popen[str]) -> None:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    # Generous: a loaded machine takes long to start a server; the wait ends when it answers.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the server exited before it answered")
        try:
            with urllib.request.urlopen(request, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the server never answered")


def fill(deck: Deck) -> dict[str, Any]:
    """A day's work on two sides, and a session nobody has classified yet."""
    o = deck.ondeck
    # Tasks, work side.
    o("task", "add", "Renew the TLS certificate", "--side", "work", "--project", "ops",
      "--priority", "0", "--due", _days(-2))  # fmt: skip
    o("task", "add", "릴리스 노트 초안 쓰기", "--side", "work", "--project", "site",
      "--due", _days(0), "--body", "변경 사항을 사용자 눈높이로 정리한다.")  # fmt: skip
    o("task", "add", "Review the open pull requests", "--side", "work", "--project", "site",
      "--priority", "1")  # fmt: skip
    o("task", "add", "배포 스크립트에 재시도 넣기", "--side", "work", "--project", "site")
    o("task", "claim", "3", "--owner", "cli:minji", "--for", "2h", "--side", "work")
    # Tasks, personal side.
    o("task", "add", "Answer the accountant", "--side", "personal", "--due", _days(1))
    o("task", "add", "블로그 글 퇴고", "--side", "personal", "--project", "blog", "--priority", "3")
    # Schedules.
    o("schedule", "add", "Stand-up notes", "--rule", "weekly:MON,TUE,WED,THU,FRI",
      "--kind", "remind", "--side", "work", "--body", "Yesterday, today, blockers.")  # fmt: skip
    o("schedule", "add", "의존성 업데이트 확인", "--rule", "every:7", "--side", "work",
      "--project", "site")  # fmt: skip
    o("schedule", "add", "화분에 물 주기", "--rule", "every:3", "--side", "personal")
    o("schedule", "add", "월세 내기", "--rule", "monthly:25", "--kind", "remind",
      "--side", "personal")  # fmt: skip
    o("jobs", "--once")  # today's fires, the daily backup schedule and its backup, a heartbeat

    # A work session in a git repository, from start to end, with a handoff.
    site = deck.work / "site"
    site.mkdir()
    deck.git(site, "init", "-q", "-b", "main")
    (site / "deploy.sh").write_text("#!/bin/sh\nrsync -a public/ web:/srv/site/\n")
    deck.git(site, "add", ".")
    deck.git(site, "commit", "-q", "-m", "Add the deploy script")
    work_session = "7d1e6c0a-3b2f-4c8e-9a10-5f2e8b7c6d41"
    deck.hook("session-start", work_session, site, source="startup")
    claimed = json.loads(o("task", "claim", "4", "--owner", f"claude:{work_session}",
                           "--side", "work", "--json"))  # fmt: skip
    lease_token = str(_record(claimed)["lease_token"])
    (site / "deploy.sh").write_text(
        "#!/bin/sh\nfor i in 1 2 3; do rsync -a public/ web:/srv/site/ && exit 0; sleep 5; done\n"
        "exit 1\n"
    )
    deck.git(site, "commit", "-q", "-am", "deploy.sh: 세 번까지 재시도")
    o("task", "done", "4", "--token", lease_token, "--note", "deploy.sh retries three times")
    deck.hook(
        "post-compact",
        work_session,
        site,
        trigger="auto",
        compact_summary="The user asked for a retry in the deploy script. Done in deploy.sh "
        "(three attempts, 5 s apart). Open: the release notes do not mention it yet.",
    )
    deck.hook(
        "stop",
        work_session,
        site,
        last_assistant_message="배포 스크립트에 재시도를 넣었습니다(최대 3번, 5초 간격). "
        "Committed as 'deploy.sh: 세 번까지 재시도'.",
    )
    o("handoff", "다음: 릴리스 노트에 재시도 이야기를 넣을 것. The retry is untested on the "
      "staging host.", "--session", work_session, cwd=site)  # fmt: skip
    deck.hook("session-end", work_session, site, reason="prompt_input_exit")

    # A personal session still open, and one in a folder of no side: the inbox.
    blog = deck.personal / "blog"
    blog.mkdir()
    deck.hook("session-start", "c4a9e2b1-0d6f-4e3a-8b57-2a9d1f0e6c33", blog, source="startup")
    deck.hook(
        "stop",
        "c4a9e2b1-0d6f-4e3a-8b57-2a9d1f0e6c33",
        blog,
        last_assistant_message="I tightened the intro of the post on Seoul's bus routes.",
    )
    deck.hook("session-start", "e8b3f7a2-6c1d-4f90-b2e5-9d0a4c7e1f58", deck.scratch,
              source="startup")  # fmt: skip

    # Notes: a pinned decision, a plain note, one superseded, one marked wrong.
    o("note", "add", "배포는 월요일부터 목요일까지만 한다", "--kind", "decision", "--pin",
      "--side", "work", "--project", "site")  # fmt: skip
    o("note", "add", "The staging database is reset every Sunday at 03:00.",
      "--side", "work", "--whole-side")  # fmt: skip
    old = json.loads(o("note", "add", "Deploy keys live in the team vault.", "--side", "work",
                       "--project", "ops", "--json"))  # fmt: skip
    o("note", "supersede", str(_id(old)), "Deploy keys live in the new vault, under ops/.",
      "--side", "work")  # fmt: skip
    wrong = json.loads(o("note", "add", "The CDN caches for a day.", "--side", "work",
                         "--project", "site", "--json"))  # fmt: skip
    o("note", "wrong", str(_id(wrong)), "--reason", "it is an hour since May", "--side", "work")
    return {"work_session": work_session}


def _record(printed: Any) -> dict[str, Any]:
    record: dict[str, Any] = printed[0] if isinstance(printed, list) else printed
    return record


def _id(printed: Any) -> int:
    return int(_record(printed)["id"])


def _days(offset: int) -> str:
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    return (datetime.now(ZoneInfo("Asia/Seoul")).date() + timedelta(days=offset)).isoformat()


def shoot(deck: Deck, out: Path, facts: dict[str, Any]) -> list[str]:
    made: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
        context.set_default_timeout(15_000)
        page = context.new_page()

        def shot(name: str, path: str | None = None) -> None:
            if path is not None:
                page.goto(deck.url + path)
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(out / f"{name}.png"), full_page=True)
            made.append(name)

        shot("login", "/login")
        page.fill("input[name=token]", TOKEN)
        page.click("form.login button")
        page.wait_for_url(deck.url + "/")

        shot("today", "/?side=work")
        shot("backlog", "/tasks?side=work")
        shot("task", "/tasks/3")
        shot("release", "/tasks/3/release")
        shot("schedules", "/schedules?side=work")
        shot("schedule", "/schedules/2")
        shot("schedule-delete", "/schedules/2/delete")
        _rule_pages(page, deck, out, made)
        shot("sessions", "/sessions")
        shot("session", f"/sessions/{facts['work_session'][:8]}")
        shot("memory", "/memory?side=work")
        page.goto(deck.url + "/memory?side=work")
        page.fill("input[name=q]", "배포")
        page.wait_for_timeout(1000)
        shot("memory-recall")
        shot("activity", "/activity")
        shot("system", "/system")
        shot("not-found", "/tasks/999")
        browser.close()
    return made


def _rule_pages(page: Page, deck: Deck, out: Path, made: list[str]) -> None:
    """The schedule form's rule, checked as it is typed: refused, then accepted."""
    page.goto(deck.url + "/schedules?side=work")
    page.locator("details.add summary").click()
    form = page.locator("form.schedule-form")
    form.locator("input[name=title]").fill("Pay the rent")
    form.locator("input[name=rule]").fill("monthly:31")
    page.locator("#rule-preview [data-state=refused]").wait_for()
    page.locator("details.add").screenshot(path=str(out / "schedules-rule-refused.png"))
    made.append("schedules-rule-refused")
    form.locator("input[name=rule]").fill("monthly:1")
    page.locator("#rule-preview [data-state=ok]").wait_for()
    page.locator("details.add").screenshot(path=str(out / "schedules-rule-check.png"))
    made.append("schedules-rule-check")


def _korean_font() -> bool:
    try:
        found = subprocess.run(
            ["fc-list", ":lang=ko"], capture_output=True, text=True, check=False
        ).stdout
    except OSError:
        return False
    return bool(found.strip())


def main() -> None:
    if not _korean_font():
        raise SystemExit("no Korean font (fc-list :lang=ko): apt-get install fonts-nanum")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="where the PNG files go")
    out: Path = parser.parse_args().out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ondeck-shots-") as tmp:
        deck = Deck(Path(tmp))
        proc = subprocess.Popen(
            [ONDECK, "serve", "--port", str(deck.port), "--no-jobs"],
            env=deck.env,
            cwd=tmp,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait(deck.url + "/api/v1/health", proc)
            facts = fill(deck)
            made = shoot(deck, out, facts)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
    print(f"{len(made)} screenshots in {out}: {', '.join(made)}")


if __name__ == "__main__":
    main()
