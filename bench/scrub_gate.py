"""The scrub gate's cost per KB of text, and what a new process pays on its first text: two
trees of ondeck in the same run (the tree before on `--before`, its `src`).

    .venv/bin/python bench/scrub_gate.py --before /tmp/before/src [--runs 9]

Each run starts a fresh process per tree, interleaved (before, after, before, …), which
times, through `db/gate.text` (what every stored text passes):
- first: its first text, an 8,000-character assistant message (prose in two languages and
  code): the rows' regexes compiled for it, gitleaks' rules read and the ones it needs;
- per KB: the steady cost over a mixed set (that message, Korean prose, `git log` output,
  JSON with a secret in it, a 40,000-character source file), total time over total size.
Medians of the runs, and the ratio after / before.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORKER = r"""
import json, sys, time
from pathlib import Path
root = Path(sys.argv[1])
rules = (root / "src/ondeck/core/rules.py").read_text(encoding="utf-8")
korean = "배포는 목요일까지 합니다. 비밀번호 정책은 위키를 보세요. 토큰 수는 4096입니다.\n" * 40
message = ("The deploy is on Thursday; 배포는 목요일입니다.\n" * 20 + "```python\n" + rules)[:8000]
gitlog = "".join(
    f"commit {'%040x' % (n * 7919)}\nAuthor: 김개발 <dev@example.com>\n\n    정리 {n}\n\n"
    for n in range(80)
)
secret = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5"
payload = json.dumps({"cmd": f"export GITHUB_TOKEN={secret}", "notes": ["메모"] * 50})
source = (root / "src/ondeck/db/gate.py").read_text(encoding="utf-8") * 4
start = time.perf_counter()
from ondeck.db import gate
imported = time.perf_counter() - start
start = time.perf_counter()
gate.text(message)
first = time.perf_counter() - start
texts = [message, korean, gitlog, payload, source[:40000]]
size = sum(len(t.encode()) for t in texts) / 1024
start = time.perf_counter()
for _ in range(5):
    for t in texts:
        gate.text(t)
per_kb = (time.perf_counter() - start) / 5 / size
print(json.dumps({"import": imported, "first": first, "per_kb": per_kb}))
"""


def _run(src: str | None) -> dict[str, float]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if src is not None:
        env["PYTHONPATH"] = src
    out = subprocess.run(
        [sys.executable, "-c", WORKER, str(ROOT)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the src directory of the tree before")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    before: list[dict[str, float]] = []
    after: list[dict[str, float]] = []
    for _ in range(args.runs):
        before.append(_run(args.before))
        after.append(_run(None))
    print(f"{'':>22} {'before':>10} {'after':>10} {'ratio':>6}  (medians of {args.runs} runs)")
    for key, label, scale, unit in (
        ("import", "import the gate", 1e3, "ms"),
        ("first", "first 8 KB message", 1e3, "ms"),
        ("per_kb", "per KB, steady", 1e6, "µs"),
    ):
        b = statistics.median(r[key] for r in before) * scale
        a = statistics.median(r[key] for r in after) * scale
        print(f"{label:>22} {b:>8.2f}{unit} {a:>8.2f}{unit} {a / b:>6.2f}")


if __name__ == "__main__":
    main()
