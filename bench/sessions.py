"""Session records: each Claude Code hook's whole process, with a server running (against
`python -c pass`) and without one (against `python -c 'import sqlalchemy'`), and the session
list at 10,000 records, on SQLite and PostgreSQL.

Run: .venv/bin/python bench/sessions.py [--runs 15] [--records 10000] [--rounds 200]
     [--pg-url URL] [--only sqlite|postgresql] [--hooks-only]
Targets (issue 14): with a server, each hook at most 4x `python -c pass`; without, at most
1.0x `python -c 'import sqlalchemy'` (medians of the same run, interleaved so both see the
same machine load); the list of 10,000 records p95 under 20 ms. Issue 16: in client mode
(`ONDECK_SERVER_URL` and a device token, no database; the hook makes the record and reads
git itself), each hook at most 4x `python -c pass` against a warm server on the same host.

Each measured hook is a real event: a new session (its start unmeasured, so the end has a
start HEAD to read git from), a transcript that grew (so a stop is a new turn, not a replay),
in a git repository with a commit and a changed file; the hooks run as Claude Code runs them
(`ondeck hook VERB`, the payload on stdin), with a bytecode cache as an installed ondeck has.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

from _stores import percentiles, postgres_url, sqlite_url
from sqlalchemy import Engine, insert

from ondeck.core import clock
from ondeck.db import open_database
from ondeck.db.engine import reading
from ondeck.db.tables import sessions
from ondeck.sessions.records import list_sessions

BIN = Path(sys.executable).parent
WARMUP = 10
ADMIN = "bench-admin-token-0123456789abcdef"
HOOKS = ("session-start", "stop", "post-compact", "session-end")
EVENT_NAMES = {
    "session-start": "SessionStart",
    "stop": "Stop",
    "post-compact": "PostCompact",
    "session-end": "SessionEnd",
}


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=b@example.org", "-c", "user.name=b", *args],
        check=True,
        capture_output=True,
    )


class Workload:
    """Hook payloads for new sessions in one repository, each event a new one."""

    def __init__(self, root: Path) -> None:
        self.repo = root / "repo"
        self.repo.mkdir()
        git(self.repo, "init", "-q", "-b", "main")
        git(self.repo, "commit", "-q", "--allow-empty", "-m", "first")
        self.transcripts = root / "transcripts"
        self.transcripts.mkdir()
        self.n = 0

    def payload(self, verb: str, session: str) -> str:
        transcript = self.transcripts / f"{session}.jsonl"
        with transcript.open("a") as handle:  # the turn Claude Code wrote before the hook
            handle.write(json.dumps({"verb": verb, "n": self.n}) + "\n")
        self.n += 1
        data: dict[str, Any] = {
            "session_id": session,
            "transcript_path": str(transcript),
            "cwd": str(self.repo),
            "permission_mode": "default",
            "hook_event_name": EVENT_NAMES[verb],
        }
        if verb == "session-start":
            data.update(source="startup", model="claude-sonnet-4-6")
        elif verb == "stop":
            data.update(
                stop_hook_active=False,
                last_assistant_message=(
                    "I added the retry to the upload job and ran the tests: 42 passed. "
                    "The token was ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8, now rotated. " * 8
                ),
            )
        elif verb == "post-compact":
            data.update(trigger="auto", compact_summary="The user asked for a retry. " * 60)
        else:
            data.update(reason="prompt_input_exit")
        return json.dumps(data)


def hook_ratios(url: str, runs: int) -> dict[str, dict[str, dict[str, float]]]:
    """Per hook, per path (server, database): median whole-process ms and the ratio to the
    yardstick of that path, measured interleaved."""
    with tempfile.TemporaryDirectory(prefix="ondeck-bench-") as tmp:
        root = Path(tmp)
        work = Workload(root)
        env = {
            **os.environ,
            "ONDECK_DATABASE_URL": url,
            "ONDECK_TZ": "UTC",
            "ONDECK_DATA_DIR": str(root / "data"),
            "ONDECK_CONFIG": str(root / "no-config.toml"),
            "PYTHONPYCACHEPREFIX": str(root / "pyc"),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("ONDECK_DEBUG", None)
        found: dict[str, dict[str, dict[str, float]]] = {}
        found["database"] = _measure(
            work,
            {**env, "ONDECK_PORT": str(free_port())},
            runs,
            "import sqlalchemy",
            "the database",
        )
        port = free_port()
        server_env = {**env, "ONDECK_PORT": str(port), "ONDECK_TOKEN": ADMIN}
        server = subprocess.Popen(
            [str(BIN / "ondeck"), "serve", "--no-jobs"],
            env=server_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            via = f"http://127.0.0.1:{port}"
            # This machine's hooks reach it through its owner-only socket (issue 21).
            local = f"/run/server-{port}.sock"
            client_env = _client_env(env, server_env, root)
            found.update(
                _measure_paths(
                    work,
                    {"server": (server_env, local), "client": (client_env, via)},
                    runs,
                    "pass",
                )
            )
        finally:
            server.terminate()
            server.wait(timeout=30)
        return found


def _client_env(env: dict[str, str], server_env: dict[str, str], root: Path) -> dict[str, str]:
    """Client mode (issue 16): another machine's settings, only the server's URL and a device
    token; its own data directory (the spool), no database."""
    made = subprocess.run(
        [str(BIN / "ondeck"), "token", "create", f"bench-{random.randrange(10**6)}"],
        env=server_env,
        capture_output=True,
        text=True,
        check=True,
    )
    client = {k: v for k, v in env.items() if k != "ONDECK_DATABASE_URL"}
    return {
        **client,
        "ONDECK_SERVER_URL": f"http://127.0.0.1:{server_env['ONDECK_PORT']}",
        "ONDECK_TOKEN": made.stdout.strip(),
        "ONDECK_DATA_DIR": str(root / "client-data"),
    }


def _measure(
    work: Workload, env: dict[str, str], runs: int, yardstick: str, via: str
) -> dict[str, dict[str, float]]:
    return _measure_paths(work, {"": (env, via)}, runs, yardstick)[""]


def _measure_paths(
    work: Workload,
    paths: dict[str, tuple[dict[str, str], str]],
    runs: int,
    yardstick: str,
) -> dict[str, dict[str, dict[str, float]]]:
    """Per path (its environment and the `via` its debug output names), per hook: each run
    of each hook is followed by a run of the yardstick, and the paths take turns, so all of
    them see the same machine load (the server and client paths, issue 16)."""

    def hook(
        env: dict[str, str], verb: str, session: str, debug: bool = False
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "ondeck"), "hook", verb],
            input=work.payload(verb, session),
            env={**env, "ONDECK_DEBUG": "1"} if debug else env,
            capture_output=True,
            text=True,
            check=True,
        )

    first_env = next(iter(paths.values()))[0]

    def stick() -> None:
        subprocess.run([sys.executable, "-c", yardstick], env=first_env, check=True)

    # Unmeasured: fills the bytecode cache, and checks each hook takes the path measured.
    prefix = f"w{random.randrange(10**6)}"
    for name, (env, via) in paths.items():
        for verb in HOOKS:
            done = hook(env, verb, f"{prefix}-{name}-check", debug=True)
            if via not in done.stderr:
                raise SystemExit(f"hook {verb} did not store through {via}: {done.stderr}")
    stick()
    times = {name: {verb: [] for verb in HOOKS} for name in paths}
    sticks: list[float] = []
    for i in range(runs):
        for name, (env, _) in paths.items():
            session = f"{prefix}-{name}-{i}"
            for verb in HOOKS:
                began = time.perf_counter()
                hook(env, verb, session)
                times[name][verb].append(time.perf_counter() - began)
                began = time.perf_counter()  # interleaved: the yardstick sees the same load
                stick()
                sticks.append(time.perf_counter() - began)
    base = statistics.median(sticks)
    return {
        name: {
            verb: {
                "hook_ms": statistics.median(t) * 1000,
                "yardstick_ms": base * 1000,
                "ratio": statistics.median(t) / base,
            }
            for verb, t in by_verb.items()
        }
        for name, by_verb in times.items()
    }


def populate(engine: Engine, n: int) -> None:
    """n session records: sides, projects, statuses and an inbox, as a year of use."""
    rng = random.Random(14)
    now = clock.now()
    rows = []
    for i in range(n):
        status = rng.choices(["ended", "lost", "open"], [90, 7, 3])[0]
        unclassified = rng.random() < 0.02
        side = None if unclassified else rng.choice(["work", "personal"])
        project = None if unclassified else rng.choice(["site", "shop", "ops", "blog", None])
        started = now - timedelta(minutes=(n - i) * 50)
        rows.append(
            {
                "agent": "claude-code",
                "external_id": f"bench-{i:06d}-{rng.randrange(16**8):08x}",
                "status": status,
                "started_at": started,
                "last_seen_at": started + timedelta(minutes=40),
                "ended_at": started + timedelta(minutes=45) if status == "ended" else None,
                "end_reason": "prompt_input_exit" if status == "ended" else None,
                "start_source": "startup",
                "cwd": f"/home/me/{project or 'x'}",
                "side": side,
                "project": project,
                "side_rule": "path" if side else "none",
                "project_rule": "git" if project else "none",
                "unclassified": unclassified,
                "classification": {"reason": "bench"},
                "disagreements": [],
                "last_word": "done. " * 100,
                "redaction_kinds": {},
                "created_at": started,
                "updated_at": started,
            }
        )
    with engine.begin() as conn:
        for at in range(0, n, 2000):
            conn.execute(insert(sessions), rows[at : at + 2000])
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("ANALYZE")


def list_times(engine: Engine, rounds: int) -> dict[str, dict[str, float]]:
    shapes: dict[str, dict[str, Any]] = {
        "newest 50": {},
        "project": {"project": "shop"},
        "side and status": {"side": "work", "status": "lost"},
        "inbox": {"status": "unclassified"},
        "page 100 back": {"before_id": 5000},
    }
    found = {}
    for name, filters in shapes.items():
        samples = []
        for i in range(WARMUP + rounds):
            began = time.perf_counter()
            with reading(engine) as conn:
                list_sessions(conn, **filters)
            if i >= WARMUP:
                samples.append((time.perf_counter() - began) * 1000)
        found[name] = percentiles(samples)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--pg-url")
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    parser.add_argument("--hooks-only", action="store_true", help="skip the session list")
    args = parser.parse_args()
    stores = {"sqlite": sqlite_url, "postgresql": lambda: postgres_url(args.pg_url)}
    for name, make in stores.items():
        if args.only and name != args.only:
            continue
        with make() as url:
            engine = open_database(url)
            for path, by_hook in hook_ratios(url, args.runs).items():
                stick = "import sqlalchemy" if path == "database" else "python -c pass"
                for verb, r in by_hook.items():
                    print(
                        f"{name}: hook {verb} ({path}) {r['hook_ms']:.0f} ms, {stick} "
                        f"{r['yardstick_ms']:.0f} ms, ratio {r['ratio']:.2f}",
                        flush=True,
                    )
            if args.hooks_only:
                engine.dispose()
                continue
            populate(engine, args.records)
            for shape, p in list_times(engine, args.rounds).items():
                shown = " ".join(f"{k} {v:.2f} ms" for k, v in p.items())
                print(f"{name}: session list of {args.records} ({shape}) {shown}", flush=True)
            engine.dispose()


if __name__ == "__main__":
    main()
