"""Every benchmark, one after another (never two at once: they would share two cores), with
the exact command of each printed before its output. `make bench` runs this.

Run: .venv/bin/python bench/all.py [--quick] [--skip NAME ...]
`--quick` runs smaller sizes to check that everything works (the figures are not the
documented ones).
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable

FULL = {
    "rules": ["rules.py"],
    "tick": ["tick.py"],
    "context": ["context.py"],
    "sessions": ["sessions.py"],
    "memory": ["memory.py"],
    "pages": ["pages.py"],
    "compare_claims": ["compare_claims.py"],
    "compare_claims_durable": ["compare_claims.py", "--durable"],
    "server": ["server.py"],
}
QUICK = {
    "rules": ["rules.py"],
    "tick": ["tick.py", "--schedules", "5000", "--due", "500"],
    "context": shlex.split("context.py --tasks 5000 --schedules 500 --events 20000 --rounds 20"),
    "sessions": shlex.split("sessions.py --runs 3 --records 2000 --rounds 20 --only sqlite"),
    "memory": shlex.split(
        "memory.py --notes 5000 --sessions 1000 --tasks 1000 --rounds 20 --hook-runs 3"
    ),
    "pages": ["pages.py", "--sqlite-only"],
    "compare_claims": ["compare_claims.py", "--jobs", "1000", "--rounds", "1"],
    "compare_claims_durable": ["compare_claims.py", "--jobs", "1000", "--rounds", "1", "--durable"],
    "server": ["server.py", "--only", "sqlite", "--runs", "1", "--seconds", "3"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip", nargs="*", default=[], choices=list(FULL))
    args = parser.parse_args()
    failed = []
    for name, argv in (QUICK if args.quick else FULL).items():
        if name in args.skip:
            continue
        command = [PY, str(HERE / argv[0]), *argv[1:]]
        shown = " ".join(["bench/" + argv[0], *map(shlex.quote, argv[1:])])
        print(f"\n=== {name}: .venv/bin/python {shown}", flush=True)
        began = time.perf_counter()
        done = subprocess.run(command, cwd=HERE.parent, check=False)
        print(f"=== {name}: exit {done.returncode} after {time.perf_counter() - began:.0f} s")
        if done.returncode != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
