"""A repository's own `ondeck` never runs (issue 35): every command line ondeck writes or runs
starts it as host/launch.py says (`python -I -m ondeck`), so neither the folder an agent's
session runs in nor a PYTHON* variable chooses its code.

    every installer          what each writes (Claude Code's settings hooks, `claude mcp
                             add` for an older Claude Code, the plugin's options, Codex's
                             hooks.json and config.toml, Gemini's settings.json, the systemd
                             unit) is `ondeck_argv()`'s line, and no file of src/ondeck
                             holds a bare `-m ondeck`; the plugin's `.mcp.json` and its mod
                             build the same line from the interpreter setup gives them
    every launcher, for real a repository holding `ondeck/__init__.py`, `ondeck.py` and
                             `sitecustomize.py` that each leave a marker when imported, and
                             PYTHONPATH naming it (as a project's agent settings could set):
                             the real Claude Code with the plugin (its MCP server, the mod's
                             hand-over to `ondeck hook` with the server away), the older
                             Claude Code (settings hooks, `claude mcp add`), Codex and
                             Gemini CLI each run their ondeck there; no marker appears, and
                             ondeck did its job (the MCP server connects and its tools are
                             offered, the session is recorded with its Korean last word)

The real agents come from npm into pytest's cache (support/npm.py); without npm or its
registry those tests skip with the reason, unless ONDECK_REQUIRE_CLAUDE=1 or
ONDECK_REQUIRE_AGENTS=1. They run on SQLite: what is tested is how ondeck is started, not the
store (the stores have the real-client tests of tests/cli).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select

from ondeck.db.tables import sessions
from ondeck.entrypoints.hooks import agent_settings, claude_settings
from ondeck.entrypoints.hooks.claude_setup import Setup, install, plugin_dir
from ondeck.entrypoints.server import service_install
from ondeck.entrypoints.server.systemd_unit import Scope
from ondeck.host import launch
from ondeck.host.launch import ondeck_argv, ondeck_command
from ondeck.host.settings import load_settings
from ondeck.sessions.capture.agents import CODEX, GEMINI
from support import agents, claude
from support.hooks import ONDECK, commit_file, new_repo
from support.pg import free_port

SRC = Path(__file__).resolve().parents[2] / "src" / "ondeck"
TASK = "오늘의 작업: 낯선 저장소 검토"
ANSWER = "마지막 답: 저장소의 ondeck은 돌지 않았어요."
# What the repository ships: each file, when imported, leaves a marker named for itself.
HOSTILE = {"ondeck/__init__.py": "package", "ondeck.py": "module", "sitecustomize.py": "site"}


# --- every installer writes the one line -------------------------------------------------


def test_is_isolated_knows_a_bare_m_ondeck() -> None:
    assert not launch.is_isolated("/v/bin/python -m ondeck hook stop")
    assert not launch.is_isolated("'/my venv/python' -B -m 'ondeck' mcp")
    assert not launch.is_isolated("python -P -m ondeck")  # PYTHONPATH still chooses
    assert launch.is_isolated("/v/bin/python -I -m ondeck hook stop")
    assert launch.is_isolated("python -E -P -m ondeck") and launch.is_isolated(
        "python -IB -m ondeck"
    )
    assert launch.is_isolated("/opt/ondeck/bin/ondeck hook stop")
    assert ondeck_argv("/v/bin/python") == ["/v/bin/python", "-I", "-m", "ondeck"]
    assert launch.is_isolated(ondeck_command())


FAKE_CLAUDE = f"""#!{sys.executable}
import json, os, sys
with open(os.environ["FAKE_CLAUDE_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:] == ["--version"]:
    print(os.environ["FAKE_CLAUDE_VERSION"] + " (Claude Code)")
"""


def _fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str) -> Setup:
    fake = tmp_path / "claude"
    fake.write_text(FAKE_CLAUDE)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(tmp_path / "claude.log"))
    monkeypatch.setenv("FAKE_CLAUDE_VERSION", version)
    return Setup(str(fake), tmp_path / "settings.json", tmp_path / f"data-{version}")


def _claude_calls(tmp_path: Path) -> list[list[str]]:
    return [json.loads(line) for line in (tmp_path / "claude.log").read_text().splitlines()]


def test_every_installer_writes_ondeck_argv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv, command = ondeck_argv(), ondeck_command()
    server = {"command": argv[0], "args": [*argv[1:], "mcp"]}
    written: list[Path] = []

    def hook_lines(path: Path) -> list[str]:
        written.append(path)
        hooks = json.loads(path.read_text())["hooks"]
        return [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]]

    # Claude Code's settings hooks (`ondeck hook install`, and setup for an older Claude Code).
    claude_settings.install(tmp_path / "claude" / "settings.json")
    lines = hook_lines(tmp_path / "claude" / "settings.json")
    assert lines and all(line.startswith(f"{command} hook ") for line in lines), lines
    # Codex: hooks.json and the MCP server in config.toml.
    agent_settings.install(CODEX, tmp_path / "codex")
    lines = hook_lines(tmp_path / "codex" / "hooks.json")
    assert lines and all(line.startswith(f"{command} hook ") for line in lines), lines
    config = tomllib.loads((tmp_path / "codex" / "config.toml").read_text())
    assert config["mcp_servers"]["ondeck"] == server
    written.append(tmp_path / "codex" / "config.toml")
    # Gemini: hooks and mcpServers in settings.json.
    agent_settings.install(GEMINI, tmp_path / "gemini" / "settings.json")
    lines = hook_lines(tmp_path / "gemini" / "settings.json")
    assert lines and all(line.startswith(f"{command} hook ") for line in lines), lines
    gemini = json.loads((tmp_path / "gemini" / "settings.json").read_text())
    assert gemini["mcpServers"]["ondeck"] == server
    # The systemd unit.
    monkeypatch.setenv("ONDECK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    unit = service_install.plan(load_settings(), Scope.USER, {}).unit_text
    assert f"ExecStart={' '.join(argv)} serve" in unit.splitlines(), unit
    # An older Claude Code: `claude mcp add … -- <ondeck_argv> mcp`, and the settings hooks.
    (tmp_path / "older").mkdir()
    older = _fake_claude(tmp_path / "older", monkeypatch, "2.1.286")
    install(older, "")
    [add] = [c for c in _claude_calls(tmp_path / "older") if c[:2] == ["mcp", "add"]]
    assert add[add.index("--") + 1 :] == [*argv, "mcp"], add
    lines = hook_lines(older.settings)
    assert lines and all(line.startswith(f"{command} hook ") for line in lines), lines
    # The plugin: its options name this interpreter, from which its .mcp.json and its mod
    # build ondeck_argv()'s line (they cannot call it).
    (tmp_path / "mods").mkdir()
    mods = _fake_claude(tmp_path / "mods", monkeypatch, claude.VERSION)
    install(mods, "/run/ondeck.sock")
    [plugin] = [c for c in _claude_calls(tmp_path / "mods") if c[:2] == ["plugin", "install"]]
    assert f"python={argv[0]}" in plugin, plugin
    mcp = json.loads((plugin_dir() / ".mcp.json").read_text())["mcpServers"]["ondeck"]
    assert [mcp["command"], *mcp["args"]] == [*ondeck_argv("${user_config.python}"), "mcp"]
    mod = (plugin_dir() / "hooks" / "register.tsx").read_text()
    assert f"const ISOLATED = '{launch.ISOLATED}'" in mod
    assert "return [my.python, ISOLATED, '-m', 'ondeck']" in mod
    assert "[...ondeck(), 'hook', verb]" in mod
    # And nothing any of them wrote starts ondeck a bare way.
    for path in written:
        assert "-m ondeck" not in path.read_text().replace(f"{launch.ISOLATED} -m ondeck", ""), path


def test_an_install_over_an_earlier_ones_bare_lines_rewrites_them(tmp_path: Path) -> None:
    """An earlier ondeck wrote `python -m ondeck`: installing again (`ondeck hook install`,
    `ondeck setup codex|gemini`) puts `ondeck_argv()`'s line in their place, and leaves the
    person's own hook and MCP server as they were."""
    bare = f"{sys.executable} -m ondeck"
    mine = {"type": "command", "command": "echo 내 훅"}

    def earlier(verbs: dict[str, str], tail: str = "") -> dict[str, Any]:
        hooks = {e: [{"hooks": [{"type": "command", "command": f"{bare} hook {v}{tail}"}]}]
                 for e, v in verbs.items()}  # fmt: skip
        hooks["SessionStart"].append({"hooks": [mine]})
        return {"hooks": hooks}

    claude_file = tmp_path / "claude.json"
    claude_file.write_text(json.dumps(earlier(claude_settings.EVENTS)))
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "hooks.json").write_text(
        json.dumps(earlier(agent_settings.EVENTS[CODEX], " --agent codex"))
    )
    (codex / "config.toml").write_text(
        'model = "gpt-5"\n\n[mcp_servers.mine]\ncommand = "my-server"\n\n'
        f'[mcp_servers.ondeck]\ncommand = "{sys.executable}"\nargs = ["-m", "ondeck", "mcp"]\n'
    )
    gemini_file = tmp_path / "gemini.json"
    gemini = earlier(agent_settings.EVENTS[GEMINI], " --agent gemini-cli")
    gemini["mcpServers"] = {
        "ondeck": {"command": sys.executable, "args": ["-m", "ondeck", "mcp"]},
        "mine": {"command": "my-server", "args": []},
    }
    gemini_file.write_text(json.dumps(gemini))

    changed = [
        *claude_settings.install(claude_file),
        *agent_settings.install(CODEX, codex),
        *agent_settings.install(GEMINI, gemini_file),
    ]
    rewritten = [c for c in changed if " -> " in c or "updated mcp" in c]
    assert len(rewritten) == 4 + 4 + 3 + 2, changed
    for path in (claude_file, codex / "hooks.json", gemini_file):
        hooks = json.loads(path.read_text())["hooks"]
        lines = [h["command"] for gs in hooks.values() for g in gs for h in g["hooks"]]
        assert mine["command"] in lines, lines  # the person's own hook stays
        ours = [line for line in lines if line != mine["command"]]
        assert all(line.startswith(f"{ondeck_command()} hook ") for line in ours), ours
    config = tomllib.loads((codex / "config.toml").read_text())
    server = {"command": ondeck_argv()[0], "args": [*ondeck_argv()[1:], "mcp"]}
    assert config["mcp_servers"] == {"mine": {"command": "my-server"}, "ondeck": server}
    assert config["model"] == "gpt-5"
    assert json.loads(gemini_file.read_text())["mcpServers"]["ondeck"] == server
    again = [
        *claude_settings.install(claude_file),
        *agent_settings.install(CODEX, codex),
        *agent_settings.install(GEMINI, gemini_file),
    ]
    assert again == []


def test_no_file_of_ondeck_holds_a_bare_m_ondeck() -> None:
    """A door added later (a new installer, a doc's example) is caught here: every `-m
    ondeck` in src/ondeck, written as a command line or as an argv list, has `-I` before
    it. The mod's ISOLATED stands for the flag it holds (the test above holds it to `-I`)."""
    bare = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in {".py", ".ts", ".tsx", ".json", ".md", ".toml"} or not path.is_file():
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            words = re.sub(r"""['",\[\]]""", " ", line).replace("ISOLATED", "-I")
            if not launch.is_isolated(words):
                bare.append(f"{path.relative_to(SRC)}:{number}: {line.strip()}")
    assert not bare, "\n".join(bare)


# --- every launcher, run for real in a hostile repository ------------------------------------


def _hostile(root: Path) -> tuple[Path, Path]:
    """A repository shipping an `ondeck` package, an `ondeck.py` and a `sitecustomize.py`,
    each leaving a marker in the folder returned second when imported; checked to be as
    hostile as it looks (a bare `-m ondeck` with PYTHONPATH naming it runs its code)."""
    markers = root / "markers"
    markers.mkdir(parents=True)
    repo = new_repo(root / "저장소")
    for name, marker in HOSTILE.items():
        code = (
            "import os, sys\n"
            f"with open(os.path.join({str(markers)!r}, {marker!r} + '-' + str(os.getpid())),"
            " 'w') as f:\n    f.write(' '.join(sys.argv))\n"
        )
        commit_file(repo, name, code, f"ship {name}")
    bare = subprocess.run(
        [sys.executable, "-m", "ondeck", "--version"],
        cwd=repo,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(repo)},
        capture_output=True,
        text=True,
    )
    assert {"package", "site"} <= {p.name.split("-")[0] for p in markers.iterdir()}, bare
    for found in markers.iterdir():
        found.unlink()
    return repo, markers


def _ran_of_theirs(markers: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in markers.iterdir()}


def _env(root: Path, sqlite_template: Path) -> dict[str, str]:
    """ondeck's settings for one machine (no server: the hooks store in the database)."""
    shutil.copyfile(sqlite_template, root / "ondeck.db")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root / "home"),
        "TERM": "xterm-256color",
        "ONDECK_DATABASE_URL": f"sqlite:///{root / 'ondeck.db'}",
        "ONDECK_DATA_DIR": str(root / "data"),
        "ONDECK_CONFIG": str(root / "no-config.toml"),
        "ONDECK_TZ": "UTC",
        "ONDECK_PORT": str(free_port()),
    }
    _ondeck(env, "task", "add", TASK)
    return env


def _ondeck(env: dict[str, str], *args: str) -> str:
    """ondeck as the person runs it in their own shell (not in the repository)."""
    done = subprocess.run([ONDECK, *args], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _in_repo(
    argv: list[str], repo: Path, env: dict[str, str], **extra: str
) -> subprocess.CompletedProcess[str]:
    """An agent's command in the repository, with PYTHONPATH naming it (as a project's own
    agent settings could set it)."""
    return subprocess.run(
        argv,
        cwd=repo,
        env={**env, **extra, "PYTHONPATH": str(repo)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _sessions(env: dict[str, str]) -> list[dict[str, Any]]:
    engine = create_engine(env["ONDECK_DATABASE_URL"])
    try:
        with engine.connect() as conn:
            return [dict(r) for r in conn.execute(select(sessions)).mappings()]
    finally:
        engine.dispose()


def _session(env: dict[str, str], done: Callable[[Any], Any]) -> Any:
    """The one session started (`claude mcp list` may leave an end alone) once `done` says
    so, or as it is after 30 s."""
    deadline = time.monotonic() + 30
    while True:
        found = [s for s in _sessions(env) if s["start_source"] == "startup"]
        assert len(found) <= 1, found
        if (found and done(found[0])) or time.monotonic() > deadline:
            return found[0] if found else None
        time.sleep(0.2)


def _agent(found: Path | str, flag: str) -> Path:
    if isinstance(found, str):
        if os.environ.get(flag) == "1":
            pytest.fail(found)
        pytest.skip(found)
    return found


def _claude_bin(request: pytest.FixtureRequest, version: str) -> Path:
    # The folders tests/cli installs them into.
    name = "claude-code" if version == claude.VERSION else f"claude-code-{version}"
    folder = Path(request.config.cache.mkdir(name))
    return _agent(claude.install(folder, version), "ONDECK_REQUIRE_CLAUDE")


CLAUDE_ENV = {
    "ANTHROPIC_API_KEY": "dummy",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "ENABLE_TOOL_SEARCH": "false",  # ondeck's tools in the request itself, not deferred
    "MCP_CONNECTION_NONBLOCKING": "false",  # and there from the first request on
    "MCP_CONNECT_TIMEOUT_MS": "60000",
}


@pytest.mark.parametrize("version", [claude.VERSION, claude.BEFORE_MODS])
def test_claude_code_runs_no_code_of_the_repository(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path, version: str
) -> None:
    """2.1.332: the plugin, its MCP server from `.mcp.json` and the mod, whose every event
    goes to `ondeck hook` (the server is away). 2.1.286: the settings hooks and the MCP server
    of `claude mcp add`. `claude mcp list` starts the MCP server, a turn runs the rest."""
    binary = _claude_bin(request, version)
    repo, markers = _hostile(tmp_path)
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    env = {**_env(tmp_path, sqlite_template), **CLAUDE_ENV}
    with claude.Messages("") as idle:
        said = _ondeck({**env, "ANTHROPIC_BASE_URL": idle.url},
                       "setup", "claude-code", "--claude", str(binary))  # fmt: skip
    with claude.Messages("") as idle:
        listed = _in_repo([str(binary), "mcp", "list"], repo, env, ANTHROPIC_BASE_URL=idle.url)
    with claude.Messages(ANSWER) as api:
        # Plain output: with stream-json, 2.1.286 runs no SessionEnd hook.
        turn = ["-p", "안녕"]
        done = _in_repo([str(binary), *turn], repo, env, ANTHROPIC_BASE_URL=api.url)
        asked = [r["body"] for r in api.requests if r["path"].startswith("/v1/messages")]
    assert _ran_of_theirs(markers) == {}
    assert f"{ondeck_command()} mcp" in said, said
    assert done.returncode == 0, done.stderr[-3000:]
    assert listed.returncode == 0 and re.search(r"ondeck.*Connected", listed.stdout), (
        listed.stdout + listed.stderr
    )
    tools = [t.get("name") for t in asked[0].get("tools") or []]
    assert any(str(name).endswith("ondeck__recall") for name in tools), tools
    if version == claude.VERSION:  # the mod puts the brief of `ondeck hook` in the request
        assert TASK in json.dumps(asked[0], ensure_ascii=False)
    if version == claude.BEFORE_MODS:
        # 2.1.286 cancels the settings hooks' async Stop as `claude -p` exits and, in this
        # run, runs no SessionEnd (its debug log names none): the start is what ran.
        row = _session(env, lambda row: row["cwd"])
        assert row is not None and row["cwd"] == str(repo), row
        return
    # The mod's Stop and SessionEnd may still be finishing once `claude -p` ends.
    row = _session(env, lambda row: row["status"] == "ended" and row["last_word"])
    assert row["cwd"] == str(repo) and row["last_word"] == ANSWER, row


def test_codex_runs_no_code_of_the_repository(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path
) -> None:
    folder = Path(request.config.cache.mkdir("codex-cli"))
    binary = _agent(agents.install(folder, agents.CODEX), "ONDECK_REQUIRE_AGENTS")
    repo, markers = _hostile(tmp_path)
    home = tmp_path / "codex-home"
    home.mkdir()
    env = {**_env(tmp_path, sqlite_template), "CODEX_HOME": str(home), "STANDIN_KEY": "dummy"}
    with agents.ModelApi(ANSWER) as api:
        (home / "config.toml").write_text(
            'model = "gpt-5"\nmodel_provider = "standin"\n\n[model_providers.standin]\n'
            f'name = "standin"\nbase_url = "{api.url}/v1"\nwire_api = "responses"\n'
            'env_key = "STANDIN_KEY"\n'
        )
        _ondeck(env, "setup", "codex", "--user")
        done = _in_repo(
            [str(binary), "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust",
             "안녕"], repo, env)  # fmt: skip
        bodies = api.bodies()
    assert _ran_of_theirs(markers) == {}
    assert done.returncode == 0, done.stderr[-3000:]
    for event in ("SessionStart", "Stop"):
        assert f"hook: {event} Completed" in done.stderr, done.stderr[-3000:]
    assert any("write_handoff" in body for body in bodies), bodies[:1]  # the MCP server's
    [row] = _sessions(env)
    assert row["agent"] == "codex" and row["cwd"] == str(repo) and row["status"] == "ended"
    assert ANSWER in row["last_word"]


def test_gemini_runs_no_code_of_the_repository(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path
) -> None:
    folder = Path(request.config.cache.mkdir("gemini-cli"))
    binary = _agent(agents.install(folder, agents.GEMINI), "ONDECK_REQUIRE_AGENTS")
    repo, markers = _hostile(tmp_path)
    settings = tmp_path / "home" / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    auth = {"selectedType": "gemini-api-key"}
    settings.write_text(
        json.dumps({"security": {"auth": auth}, "privacy": {"usageStatisticsEnabled": False}})
    )
    env = {
        **_env(tmp_path, sqlite_template),
        "GEMINI_API_KEY": "dummy",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    _ondeck(env, "setup", "gemini", "--user")
    with agents.ModelApi(ANSWER) as api:
        done = _in_repo([str(binary), "-m", "gemini-2.5-flash", "-p", "안녕"], repo, env,
                        GOOGLE_GEMINI_BASE_URL=api.url)  # fmt: skip
        bodies = api.bodies()
    assert _ran_of_theirs(markers) == {}
    assert done.returncode == 0, done.stderr[-3000:]
    # The MCP server's tools offered (`gemini mcp list` gives a server only some 5 s, which
    # an MCP server's start on a loaded machine may take: python -m ondeck too).
    assert any("write_handoff" in body for body in bodies), bodies[:1]
    assert any(TASK in body for body in bodies), bodies[:1]  # the SessionStart hook's brief
    [row] = _sessions(env)
    assert row["agent"] == "gemini-cli" and row["cwd"] == str(repo) and row["status"] == "ended"
    assert ANSWER in row["last_word"]
