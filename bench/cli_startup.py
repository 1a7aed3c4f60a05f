"""The CPU of a short `ondeck` command as a process of its own: what every script, hook
fallback and test pays for each call.

    .venv/bin/python bench/cli_startup.py [--runs 15]

Each command runs as `ondeck` runs it (`main`: no cyclic collection while modules load,
their objects frozen, none walked at exit) and through `run` alone in a bare process (Python's
default housekeeping), interleaved, on one SQLite home with 200 tasks; the CPU (user + sys)
of each child is read from getrusage. Medians, and their ratio, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile

COMMANDS = (["task", "list"], ["task", "add", "벤치 작업"], ["schedule", "list"], ["--help"])
BARE = "import sys\nfrom ondeck.entrypoints.cli import run\nsys.exit(run(sys.argv[1:]))"
MAIN = "from ondeck.entrypoints.cli import main\nmain()"


def _cpu(argv: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "ONDECK_HOME": home, "ONDECK_TZ": "UTC"}
        env.pop("ONDECK_SERVER_URL", None)
        env.pop("ONDECK_DATABASE_URL", None)
        seed = (
            "from ondeck.entrypoints.cli import run\n"
            "for n in range(200): run(['task', 'add', f'일 {n}'])"
        )
        subprocess.run([sys.executable, "-c", seed], env=env, check=True, stdout=subprocess.DEVNULL)
        print(f"{'main ms':>8} {'bare ms':>8} {'ratio':>6}  command ({runs} runs each)")
        for args in COMMANDS:
            main_cpu: list[float] = []
            bare_cpu: list[float] = []
            for _ in range(runs):
                main_cpu.append(_cpu([sys.executable, "-c", MAIN, *args], env))
                bare_cpu.append(_cpu([sys.executable, "-c", BARE, *args], env))
            m, b = statistics.median(main_cpu), statistics.median(bare_cpu)
            print(f"{m * 1000:8.0f} {b * 1000:8.0f} {m / b:6.2f}  {' '.join(args)}")


if __name__ == "__main__":
    main()
