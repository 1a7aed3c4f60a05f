"""What each session event costs in the real Claude Code: the ondeck mod against the settings
hooks, in the same run (the runs alternate), against one `ondeck serve` on this machine.

    mod     each `hooks module ondeck… <event> settled in N ms` line of Claude Code's debug
            log (the hook's whole time, `next()` and the status line's refresh included), and
            each `$.http.fetch … 200 in N ms` of its events (the owner socket's round trip)
    hooks   each `ondeck hook <verb>` process, timed from inside a wrapper the settings name
            (bash's $EPOCHREALTIME before and after: bash's own start is not counted); the
            Stop, which `claude -p` cancels as it exits, run by the benchmark the same way

Claude Code answers from a stand-in for the Messages API on loopback (tests/support/claude.py);
it is the one pinned there unless `--claude` names another.

    .venv/bin/python bench/claude_plugin.py --runs 10 [--claude PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from ondeck.entrypoints.hooks.claude_settings import install as install_hooks
from ondeck.entrypoints.hooks.claude_setup import plugin_dir
from support import claude
from support.pg import free_port
from support.served import ONDECK, start, stop

SETTLED = re.compile(
    r"hooks module ondeck@inline (session\.start|prompt\.context|turn\.complete|session\.end) "
    r"settled in ([0-9.]+)ms"
)
FETCHED = re.compile(r"\$\.http\.fetch \(ondeck\): 200 in ([0-9.]+)ms")
# The start's own round trip runs behind `session.start`; the first request's `prompt.context`
# waits for it (and the brief it brings): "start + brief" is the two together.
MOD_EVENTS = {
    "session.start": "start",
    "prompt.context": "brief",
    "turn.complete": "turn",
    "session.end": "end",
}
HOOK_EVENTS = {"session-start": "start", "stop": "turn", "session-end": "end"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="claude -p runs of each kind")
    parser.add_argument("--claude", help="Claude Code's executable (default: the pinned one)")
    args = parser.parse_args()
    binary = Path(args.claude) if args.claude else claude.install(Path(".cache-claude-code"))
    if isinstance(binary, str):
        sys.exit(binary)
    with tempfile.TemporaryDirectory(prefix="ondeck-bench-plugin-") as tmp:
        measure(Path(tmp), binary, args.runs)


def measure(root: Path, binary: Path, runs: int) -> None:
    port = free_port()
    env = {
        "PATH": os.environ["PATH"],
        "TERM": "xterm-256color",
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "ONDECK_DATABASE_URL": f"sqlite:///{root}/ondeck.db",
        "ONDECK_DATA_DIR": str(root / "data"),
        "ONDECK_CONFIG": str(root / "no-config.toml"),
        "ONDECK_TZ": "UTC",
        "ONDECK_PORT": str(port),
    }
    subprocess.run([ONDECK, "db", "upgrade"], env=env, check=True, capture_output=True)
    work = root / "work"
    work.mkdir()
    mod_home, hooks_home = root / "mod", root / "hooks"
    socket = root / "data" / "run" / f"server-{port}.sock"
    options = {"python": sys.executable, "socket": str(socket)}
    (mod_home / ".claude").mkdir(parents=True)
    (mod_home / ".claude" / "settings.json").write_text(
        json.dumps({"pluginConfigs": {"ondeck@inline": {"options": options}}})
    )
    timings = root / "hooks.log"
    wrapper = root / "timed-ondeck"
    wrapper.write_text(
        "#!/bin/bash\nt=$EPOCHREALTIME\n"
        f'{ONDECK} "$@"\nr=$?\n'
        f'echo "$2 $t $EPOCHREALTIME" >> {timings}\nexit $r\n'
    )
    wrapper.chmod(0o755)
    install_hooks(hooks_home / ".claude" / "settings.json", command=str(wrapper))
    server = start(env, "--no-jobs", url=f"http://127.0.0.1:{port}", log=root / "serve.log")
    mod: dict[str, list[float]] = {"start": [], "brief": [], "turn": [], "end": []}
    fetches: list[float] = []
    try:
        for _ in range(runs):
            log = run(binary, env, work, mod_home, "--plugin-dir", str(plugin_dir()))
            for event, ms in SETTLED.findall(log):
                mod[MOD_EVENTS[event]].append(float(ms))
            fetches.extend(float(ms) for ms in FETCHED.findall(log))
            run(binary, env, work, hooks_home)
            # `claude -p` cancels the backgrounded Stop hook as it exits: the same process,
            # run as Claude Code would run it, once per run.
            stop_payload = {
                "session_id": f"bench-{len(fetches)}",
                "cwd": str(work),
                "hook_event_name": "Stop",
                "last_assistant_message": "answer",
            }
            subprocess.run([str(wrapper), "hook", "stop"], input=json.dumps(stop_payload),
                           env=env, capture_output=True, text=True, check=True)  # fmt: skip
    finally:
        stop(server)
    hooks: dict[str, list[float]] = {"start": [], "turn": [], "end": []}
    for line in timings.read_text().splitlines():
        verb, began, ended = line.split()
        if verb in HOOK_EVENTS:
            hooks[HOOK_EVENTS[verb]].append((float(ended) - float(began)) * 1000)
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout
    print(f"Claude Code {version.split()[0]}, {runs} runs of each, SQLite, one `ondeck serve`")
    print("| event | mod: hook settled (median, n) | settings hook: process (median, n) |")
    print("|---|---|---|")
    both = [a + b for a, b in zip(mod["start"], mod["brief"], strict=False)]
    print(f"| start + brief | {_median(both)} | {_median(hooks['start'])} |")
    for name in ("turn", "end"):
        print(f"| {name} | {_median(mod[name])} | {_median(hooks[name])} |")
    print(f"mod's owner-socket round trips: {_median(fetches)}")


def _median(values: list[float]) -> str:
    if not values:
        return "none"
    return f"{statistics.median(values):.1f} ms (n={len(values)})"


def run(binary: Path, env: dict[str, str], work: Path, home: Path, *args: str) -> str:
    with claude.Messages("The benchmark's answer.") as api:
        given = {**env, "HOME": str(home), "ANTHROPIC_BASE_URL": api.url}
        subprocess.run(
            [str(binary), "-p", "hi", "--debug", "hooks", *args],
            cwd=work,
            env=given,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
    folder = home / ".claude" / "debug"
    newest = max(folder.glob("*.txt"), key=lambda p: p.stat().st_mtime)
    return newest.read_text()


if __name__ == "__main__":
    main()
