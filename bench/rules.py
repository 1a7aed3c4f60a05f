"""Time Rule.next_on_or_after over 100,000 random (rule, day, start) triples.

Run: .venv/bin/python bench/rules.py   (target: under 1 second in total)
"""

from __future__ import annotations

import random
import time
from datetime import date, timedelta

from ondeck.core.rules import Rule, parse

CALLS = 100_000
SEED = 20260615
FIRST = date(1990, 1, 1)
SPAN = (date(2100, 12, 31) - FIRST).days


def random_rule(rng: random.Random) -> Rule:
    kind = rng.randrange(4)
    if kind == 0:
        return parse("daily")
    if kind == 1:
        days = rng.sample(["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"], rng.randint(1, 7))
        return parse("weekly:" + ",".join(days))
    if kind == 2:
        days = [str(d) for d in rng.sample(range(1, 29), rng.randint(0, 5))]
        return parse(
            "monthly:" + ",".join(days or ["last"]) + (",last" if rng.random() < 0.3 else "")
        )
    return parse(f"every:{rng.choice([rng.randint(1, 30), rng.randint(1, 3650)])}")


def random_day(rng: random.Random) -> date:
    return FIRST + timedelta(days=rng.randrange(SPAN))


def main() -> None:
    rng = random.Random(SEED)
    triples = [(random_rule(rng), random_day(rng), random_day(rng)) for _ in range(CALLS)]
    began = time.perf_counter()
    for rule, day, start in triples:
        rule.next_on_or_after(day, start)
    total = time.perf_counter() - began
    print(f"next_on_or_after: {CALLS:,} calls in {total:.3f} s ({total / CALLS * 1e6:.2f} µs/call)")


if __name__ == "__main__":
    main()
