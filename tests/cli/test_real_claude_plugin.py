"""The ondeck plugin in the real Claude Code (npm, pinned in support/claude.py), set up by
`ondeck setup claude-code` on a fresh home, with a real `ondeck serve` and a stand-in for the
Messages API. One scenario per store, run once (module scope), asserted many ways:

    run 1   `claude -p`: the first request carries the brief with today's task, ondeck's MCP
            tools are offered, a scripted `write_handoff` lands on this very session, the
            session is recorded with its last word and its end, the status line speaks
    run 2   the session resumed, `/compact` then a prompt: the compaction is recorded and the
            request after it carries the brief again
    run 4   a prompt, `/clear`, a prompt: the clear ends the session and starts the next,
            recorded as one, whose first request carries the brief
    run 3   the server stopped: the mod hands its events to `ondeck hook`, the status line
            says the server is away; once the server is back the session is there, whole
    undo    `ondeck setup claude-code --undo` leaves the settings as they were

Without npm or its registry the tests skip with the reason, unless ONDECK_REQUIRE_CLAUDE=1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select

from conftest import drop_pg_database, new_pg_database
from ondeck.db.tables import events, notes, sessions
from ondeck.entrypoints.hooks.claude_setup import plugin_dir
from support import claude
from support.pg import free_port
from support.served import ONDECK, start, stop

TASK = "오늘의 작업: 플러그인 출시"
HANDOFF = "핸드오프: the mod records this session"
ANSWERS = ("첫 답: the first run's last word.", "두 번째: after the compaction.", "offline 답.")
WRITE_HANDOFF = "mcp__plugin_ondeck_ondeck__write_handoff"


@dataclass
class Run:
    requests: list[dict[str, Any]]
    lines: list[dict[str, Any]]
    stderr: str
    returncode: int

    def messages_requests(self) -> list[dict[str, Any]]:
        return [
            r["body"]
            for r in self.requests
            if r["method"] == "POST" and r["path"].split("?")[0].endswith("/v1/messages")
        ]

    def statuses(self) -> list[str]:
        return [
            str(line.get("text"))
            for line in self.lines
            if line.get("subtype") == "ui_status" and line.get("plugin") == "ondeck"
        ]

    def session_id(self) -> str:
        return next(str(line["session_id"]) for line in self.lines if line.get("session_id"))


@dataclass
class Scenario:
    db_url: str
    home: Path
    setup: str
    settings_before: str
    settings_set: dict[str, Any]
    undo: str
    settings_after: str
    runs: list[Run] = field(default_factory=list)

    def read(self, query: Any) -> list[dict[str, Any]]:
        engine = create_engine(self.db_url)
        try:
            with engine.connect() as conn:
                return [dict(r) for r in conn.execute(query).mappings()]
        finally:
            engine.dispose()

    def session(self, external_id: str) -> dict[str, Any]:
        [row] = self.read(select(sessions).where(sessions.c.external_id == external_id))
        return row


def _claude(
    binary: Path,
    env: dict[str, str],
    work: Path,
    answer: str,
    *args: str,
    tool_call: tuple[str, dict[str, Any]] | None = None,
    prompt: str | None = None,
    stdin: str | None = None,
) -> Run:
    with claude.Messages(answer, tool_call=tool_call) as api:
        return _run(binary, {**env, "ANTHROPIC_BASE_URL": api.url}, work, api, *args,
                    prompt=prompt, stdin=stdin)  # fmt: skip


def _run(
    binary: Path,
    env: dict[str, str],
    work: Path,
    api: claude.Messages,
    *args: str,
    prompt: str | None,
    stdin: str | None,
) -> Run:
    done = subprocess.run(
        [
            str(binary),
            "-p",
            *([prompt] if prompt else []),
            "--output-format",
            "stream-json",
            "--verbose",
            *args,
        ],
        cwd=work,
        env=env,
        input=stdin,  # None: the prompt is an argument
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = []
    for line in done.stdout.splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            continue
    return Run(list(api.requests), lines, done.stderr, done.returncode)


def _user(*texts: str) -> str:
    return "".join(
        json.dumps({"type": "user", "message": {"role": "user", "content": t}}) + "\n"
        for t in texts
    )


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def scenario(
    request: pytest.FixtureRequest, claude_bin: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scenario]:
    root = tmp_path_factory.mktemp(f"plugin-{request.param}")
    home, work = root / "home", root / "work"
    work.mkdir()
    (home / ".claude").mkdir(parents=True)
    before = json.dumps({"theme": "dark"}, indent=2) + "\n"
    (home / ".claude" / "settings.json").write_text(before)
    admin = None
    if request.param == "sqlite":
        db_url = f"sqlite:///{root / 'ondeck.db'}"
    else:
        admin = request.getfixturevalue("pg_admin_url")
        db_url = new_pg_database(admin, request.getfixturevalue("pg_template"))
    port = free_port()
    env = claude.run_env(
        home,
        root,
        db_url,
        port,
        ENABLE_TOOL_SEARCH="false",  # ondeck's tools in the request itself, not deferred
        # And there from the first request on: the first request waits for the MCP server,
        # 5 s unless told (python's start, and Claude Code respawns ondeck's server once
        # after its protocol probe: slow on 2 cores).
        MCP_CONNECTION_NONBLOCKING="false",
        MCP_CONNECT_TIMEOUT_MS="60000",
    )
    today = datetime.now(UTC).date().isoformat()

    def ondeck(*args: str, api: str = "http://127.0.0.1:9") -> str:
        # `claude plugin …` (run by the setup) with a key asks the API for something first:
        # a stand-in on loopback answers, where the real API would keep it waiting.
        given = {**env, "ANTHROPIC_BASE_URL": api}
        done = subprocess.run(
            [ONDECK, *args], env=given, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    ondeck("db", "upgrade")
    ondeck("task", "add", TASK, "--due", today)
    url = f"http://127.0.0.1:{port}"
    log = root / "serve.log"
    server = start(env, "--no-jobs", url=url, log=log)
    try:
        with claude.Messages("") as idle:
            setup = ondeck("setup", "claude-code", "--claude", str(claude_bin), api=idle.url)
        settings_set = json.loads((home / ".claude" / "settings.json").read_text())
        call = (WRITE_HANDOFF.rsplit("__", 1)[1], {"text": HANDOFF})
        first = _claude(claude_bin, env, work, ANSWERS[0], "--allowedTools", WRITE_HANDOFF,
                        tool_call=call, prompt="hi")  # fmt: skip
        again = ("--input-format", "stream-json", "--resume", first.session_id())
        resumed = _claude(
            claude_bin, env, work, ANSWERS[1], *again, stdin=_user("/compact", "go on")
        )
        stream = ("--input-format", "stream-json")
        cleared = _claude(claude_bin, env, work, ANSWERS[1], *stream,
                          stdin=_user("before the clear", "/clear", "after the clear"))  # fmt: skip
        stop(server)
        away = _claude(claude_bin, env, work, ANSWERS[2], prompt="while the server is away")
        runs = [first, resumed, away, cleared]
        server = start(env, "--no-jobs", url=url, log=log)
        with claude.Messages("") as idle:
            undo = ondeck("setup", "claude-code", "--undo", api=idle.url)
        after = (home / ".claude" / "settings.json").read_text()
        yield Scenario(db_url, home, setup, before, settings_set, undo, after, runs)
    finally:
        stop(server)
        if admin is not None:
            drop_pg_database(admin, db_url)


def test_setup_installs_the_plugin_and_undo_removes_exactly_that(scenario: Scenario) -> None:
    assert "plugin ondeck@ondeck installed" in scenario.setup, scenario.setup
    assert str(plugin_dir()) in scenario.setup
    set_ = scenario.settings_set
    assert set_["enabledPlugins"] == {"ondeck@ondeck": True}
    options = set_["pluginConfigs"]["ondeck@ondeck"]["options"]
    assert options["socket"].endswith(".sock") and Path(options["python"]).exists()
    assert "hooks" not in set_  # one path per session: the mod's
    assert set_["env"] == {"CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS": "10000"}  # the end's time
    assert "plugin ondeck@ondeck uninstalled" in scenario.undo
    assert json.loads(scenario.settings_after) == json.loads(scenario.settings_before)


def test_the_first_request_carries_the_brief_and_ondecks_tools(scenario: Scenario) -> None:
    run = scenario.runs[0]
    assert run.returncode == 0, run.stderr[-2000:]
    first = json.dumps(run.messages_requests()[0], ensure_ascii=False)
    assert "# On deck" in first and TASK in first
    names = [t.get("name") for t in run.messages_requests()[0].get("tools") or []]
    assert WRITE_HANDOFF in names and "mcp__plugin_ondeck_ondeck__recall" in names
    assert any("1 due" in s for s in run.statuses()), run.statuses()
    assert any("jobs loop silent" in s for s in run.statuses())  # served with --no-jobs


def test_the_handoff_lands_on_this_session_and_the_session_is_recorded(
    scenario: Scenario,
) -> None:
    run = scenario.runs[0]
    row = scenario.session(run.session_id())
    [handoff] = scenario.read(select(notes).where(notes.c.kind == "handoff"))
    assert handoff["text"] == HANDOFF and handoff["session_id"] == row["id"]
    assert row["last_word"] in ANSWERS[:2]
    kinds = [
        r["kind"]
        for r in scenario.read(
            select(events.c.kind)
            .where(events.c.subject == f"session:{row['id']}")
            .order_by(events.c.id)
        )
    ]
    assert "session.started" in kinds and "session.ended" in kinds, kinds


def test_compact_in_a_resumed_session_brings_the_brief_back(scenario: Scenario) -> None:
    run = scenario.runs[1]
    assert run.returncode == 0, run.stderr[-2000:]
    row = scenario.session(run.session_id())
    assert row["id"] == scenario.session(scenario.runs[0].session_id())["id"]
    assert row["last_word"] == ANSWERS[1] and row["status"] == "ended"
    last = json.dumps(run.messages_requests()[-1], ensure_ascii=False)
    assert "go on" in last and "# On deck" in last and TASK in last
    kinds = [r["kind"] for r in scenario.read(select(events.c.kind))]
    assert "session.compacted" in kinds


def test_clear_ends_the_session_and_the_next_one_gets_the_brief(scenario: Scenario) -> None:
    run = scenario.runs[3]
    assert run.returncode == 0, run.stderr[-2000:]
    before = scenario.session(run.session_id())
    assert before["end_reason"] == "clear"
    asked = [json.dumps(body, ensure_ascii=False) for body in run.messages_requests()]
    after = next(a for a in asked if "after the clear" in a)
    assert "before the clear" not in after and "# On deck" in after and TASK in after
    [cleared] = scenario.read(select(sessions).where(sessions.c.start_source == "clear"))
    assert cleared["status"] == "ended" and cleared["last_word"] == ANSWERS[1]


def test_with_the_server_stopped_the_events_arrive_once_it_is_back(scenario: Scenario) -> None:
    run = scenario.runs[2]
    assert run.returncode == 0, run.stderr[-2000:]
    assert any("server unreachable" in s for s in run.statuses()), run.statuses()
    row = scenario.session(run.session_id())
    assert row["last_word"] == ANSWERS[2] and row["status"] == "ended"
    first = json.dumps(run.messages_requests()[0], ensure_ascii=False)
    assert TASK in first  # the brief, from `ondeck hook session-start`


def test_claude_plugin_validate_and_the_mods_own_tests_pass(
    claude_bin: Path, tmp_path: Path
) -> None:
    """`claude plugin validate --strict` (warnings fail it too) on the plugin (a copy: Claude
    Code writes its type files beside a mod it reads) and on this repository's marketplace;
    `claude plugin test` runs the mod's tests (claude_plugin/tests/)."""
    folder = tmp_path / "ondeck"
    shutil.copytree(plugin_dir(), folder)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home")}
    repository = Path(__file__).resolve().parents[2]
    for target in (folder, repository):
        done = subprocess.run(
            [str(claude_bin), "plugin", "validate", "--strict", "--json", str(target)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        report = json.loads(done.stdout)
        assert report["success"] is True
        for part in [report["manifest"], *report["contents"]]:
            assert part["errors"] == [] and part["warnings"] == [], part
    tested = subprocess.run(
        [str(claude_bin), "plugin", "test", str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = tested.stdout + tested.stderr
    assert tested.returncode == 0, said[-3000:]
    assert re.search(r"\b10 pass\b", said) and re.search(r"\b0 fail\b", said), said[-2000:]


def test_an_older_claude_code_gets_the_settings_hooks_and_undo_removes_them(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Claude Code before mods (2.1.286): the settings hooks and `claude mcp add`, as today;
    `--undo` leaves the settings as they were."""
    folder = Path(request.config.cache.mkdir(f"claude-code-{claude.BEFORE_MODS}"))
    older = claude.install(folder, claude.BEFORE_MODS)
    if isinstance(older, str):
        if os.environ.get("ONDECK_REQUIRE_CLAUDE") == "1":
            pytest.fail(older)
        pytest.skip(older)
    settings = tmp_path / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"theme": "dark"}\n')
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path / "home"),
        "ANTHROPIC_API_KEY": "dummy",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",  # nothing asked of the real API
        "ONDECK_DATA_DIR": str(tmp_path / "data"),
        "ONDECK_CONFIG": str(tmp_path / "no-config.toml"),
    }

    def setup(*args: str) -> str:
        done = subprocess.run(
            [ONDECK, "setup", "claude-code", *args], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    said = setup("--claude", str(older))
    assert f"Claude Code {claude.BEFORE_MODS} (no mods before 2.1.287)" in said
    hooks = json.loads(settings.read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "Stop", "PostCompact", "SessionEnd"}
    servers = json.loads((tmp_path / "home" / ".claude.json").read_text())["mcpServers"]
    assert servers["ondeck"]["args"] == ["-I", "-m", "ondeck", "mcp"]
    assert "nothing changed" in setup("--claude", str(older))  # set up already
    undone = setup("--undo")
    assert "MCP server ondeck removed" in undone
    assert json.loads(settings.read_text()) == {"theme": "dark"}


# --- with ONDECK_TOKEN set: the mod reaches its server over the owner socket -----------------

SERVER_TOKEN = "server-token-0123456789abcdefghijklmnop"
SOCKET_ANSWERS = ("소켓 답: 토큰이 있어도.", "폴더가 열렸다.", "링크였다.")


@dataclass
class TokenScenario:
    db_url: str
    socket: Path
    runs: list[Run]
    debug: list[str]  # each run's Claude Code debug log

    def session(self, external_id: str) -> dict[str, Any]:
        engine = create_engine(self.db_url)
        try:
            with engine.connect() as conn:
                query = select(sessions).where(sessions.c.external_id == external_id)
                return dict(conn.execute(query).mappings().one())
        finally:
            engine.dispose()


@pytest.fixture(scope="module")
def token_scenario(
    claude_bin: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TokenScenario]:
    """A server with ONDECK_TOKEN (on SQLite), the plugin set up, then three `claude -p`:
    the socket as the server made it; its folder opened to others (0755); its folder a
    symlink to a folder of mode 0700 where the server still listens."""
    root = tmp_path_factory.mktemp("plugin-token")
    home, work, data = root / "home", root / "work", root / "data"
    work.mkdir()
    (home / ".claude").mkdir(parents=True)
    port = free_port()
    env = claude.run_env(
        home, root, f"sqlite:///{root / 'ondeck.db'}", port,
        ENABLE_TOOL_SEARCH="false", MCP_CONNECTION_NONBLOCKING="false",
        MCP_CONNECT_TIMEOUT_MS="60000", ONDECK_TOKEN=SERVER_TOKEN,
    )  # fmt: skip

    def ondeck(*args: str, api: str = "http://127.0.0.1:9") -> None:
        given = {**env, "ANTHROPIC_BASE_URL": api}
        done = subprocess.run(
            [ONDECK, *args], env=given, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr

    def debug_log() -> str:
        folder = home / ".claude" / "debug"
        text = "\n".join(p.read_text(errors="replace") for p in sorted(folder.glob("*.txt")))
        shutil.rmtree(folder, ignore_errors=True)
        return text

    ondeck("db", "upgrade")
    ondeck("task", "add", TASK, "--due", datetime.now(UTC).date().isoformat())
    url = f"http://127.0.0.1:{port}"
    server = start(env, "--no-jobs", url=url, log=root / "serve.log",
                   headers={"Authorization": f"Bearer {SERVER_TOKEN}"})  # fmt: skip
    sock = data / "run" / f"server-{port}.sock"
    runs: list[Run] = []
    debug: list[str] = []
    try:
        with claude.Messages("") as idle:
            ondeck("setup", "claude-code", "--claude", str(claude_bin), api=idle.url)
        debug_log()
        for answer, folder_mode, linked in (
            (SOCKET_ANSWERS[0], 0o700, False),
            (SOCKET_ANSWERS[1], 0o755, False),
            (SOCKET_ANSWERS[2], 0o700, True),
        ):
            run_dir = sock.parent
            if linked:  # the folder moved away, a symlink in its place: the socket still works
                run_dir.rename(data / "run-real")
                run_dir.symlink_to(data / "run-real")
            run_dir.chmod(folder_mode)
            try:
                runs.append(_claude(claude_bin, env, work, answer, "--debug", prompt="hi"))
                debug.append(debug_log())
            finally:
                if linked:
                    run_dir.unlink()
                    (data / "run-real").rename(run_dir)
                run_dir.chmod(0o700)
        yield TokenScenario(env["ONDECK_DATABASE_URL"], sock, runs, debug)
    finally:
        stop(server)


def test_with_a_token_set_the_mod_reaches_its_server_over_the_socket(
    token_scenario: TokenScenario,
) -> None:
    """The session's start and end reach the server over the socket (no `ondeck hook`
    process), and the status line says what is on deck, not that the server is away."""
    run, debug = token_scenario.runs[0], token_scenario.debug[0]
    assert run.returncode == 0, run.stderr[-2000:]
    row = token_scenario.session(run.session_id())
    assert row["status"] == "ended" and row["last_word"] == SOCKET_ANSWERS[0]
    statuses = run.statuses()
    assert any("1 due" in s for s in statuses), statuses
    assert not any("unreachable" in s or "handed to" in s for s in statuses), statuses
    assert "nothing sent through" not in debug
    assert "'ondeck', 'hook'" not in debug and '"hook",' not in debug  # no fallback process
    first = json.dumps(run.messages_requests()[0], ensure_ascii=False)
    assert TASK in first  # the brief, from the server's answer over the socket


@pytest.mark.parametrize(
    ("index", "why"), [(1, "has mode 755"), (2, "is a symlink or not a directory")]
)
def test_the_mod_sends_nothing_through_a_socket_that_fails_the_check(
    token_scenario: TokenScenario, index: int, why: str
) -> None:
    """A socket folder open to others, or a symlink: the mod sends nothing there, says why
    in its debug log, and the event is still stored (through `ondeck hook`)."""
    run, debug = token_scenario.runs[index], token_scenario.debug[index]
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"nothing sent through {token_scenario.socket}" in debug, debug[-4000:]
    assert why in debug, debug[-4000:]
    row = token_scenario.session(run.session_id())
    assert row["status"] == "ended" and row["last_word"] == SOCKET_ANSWERS[index]
    assert any("handed to `ondeck hook`" in s for s in run.statuses()), run.statuses()
