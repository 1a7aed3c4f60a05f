"""Whether a hook with no server could store through the ordinary stack (issue 36): one Stop
record made and stored by a fresh process, three ways, on SQLite, interleaved in one run:

    bare        what the hooks do today: the bare driver and plain SQL (db/bare.py, db/plain.py)
    sqlalchemy  the ordinary stack: SQLAlchemy's engine and sessions/intake.apply_record
                (delivery.Local(bare=False), the way a new or migrated database goes)
    spool       the record written to the spool and nothing else: a jobs tick would store it

against `python -c pass` and `python -c 'import sqlalchemy'` (the no-server hook's bound,
docs/benchmarks.md). Each process is timed whole from outside, as Claude Code waits for it;
each Stop is a new turn (the transcript grew), so none is a duplicate.

    .venv/bin/python bench/hook_store_paths.py [--runs 15]
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
from pathlib import Path

from ondeck.db import open_database

SESSION = "5e55a0b1-0000-4000-8000-00000000be0c"

STORE = r"""
import json, sys
from ondeck.core import clock
from ondeck.host.quick_settings_read import load_hook_config
from ondeck.sessions.capture.events import make_record
config = load_hook_config(None)
now = clock.now()
record = make_record("stop", json.loads(sys.argv[2]), config, now)
if sys.argv[1] == "spool":
    from ondeck.sessions.capture import spool
    spool.append(config.spool_dir, record)
else:
    from ondeck.sessions.capture.delivery import Local
    local = Local(config, bare=sys.argv[1] == "bare")
    assert local.store(record, now) is not None, local.problem
    local.close()
"""


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, capture_output=True)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ondeck-bench-"))
    repo = root / "저장소"
    repo.mkdir()
    for step in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", *step], cwd=repo, check=True, capture_output=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b",
                            "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"})  # fmt: skip
    url = f"sqlite:///{root / 'ondeck.db'}"
    open_database(url).dispose()  # created and migrated: every way finds it current
    transcript = root / "transcript.jsonl"
    transcript.write_text("")
    python = sys.executable
    ways = ("bare", "sqlalchemy", "spool", "python -c pass", "import sqlalchemy")
    times: dict[str, list[float]] = {w: [] for w in ways}
    for run in range(args.runs + 2):  # the first two warm the caches, not counted
        order = list(ways)
        random.shuffle(order)
        for way in order:
            env = {
                **os.environ,
                "ONDECK_DATABASE_URL": url,
                "ONDECK_DATA_DIR": str(root / f"data-{way.replace(' ', '-')}"),
                "ONDECK_TZ": "UTC",
                "ONDECK_PORT": "9",  # nothing listens: no server
            }
            if way == "python -c pass":
                argv = [python, "-I", "-c", "pass"]
            elif way == "import sqlalchemy":
                argv = [python, "-I", "-c", "import sqlalchemy"]
            else:
                with transcript.open("a") as handle:
                    handle.write(json.dumps({"turn": f"{way} {run}"}) + "\n")
                payload = {
                    "session_id": SESSION,
                    "hook_event_name": "Stop",
                    "cwd": str(repo),
                    "transcript_path": str(transcript),
                    "last_assistant_message": f"{way} 차례 {run}: turn {run}",
                }
                argv = [python, "-I", "-c", STORE, way, json.dumps(payload)]
            took = _timed(argv, env, repo)
            if run >= 2:
                times[way].append(took)
    load = os.getloadavg()[0]
    print(f"{args.runs} runs each, interleaved; load average {load:.1f}; medians:")
    base = statistics.median(times["python -c pass"])
    alchemy = statistics.median(times["import sqlalchemy"])
    for way in ways:
        median = statistics.median(times[way])
        print(
            f"  {way:18} {median:7.1f} ms   {median / base:4.2f}x python -c pass   "
            f"{median / alchemy:4.2f}x import sqlalchemy"
        )


if __name__ == "__main__":
    main()
