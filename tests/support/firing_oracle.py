"""A mix of schedules for the fault tests, and what firing them day after day must leave.

`expected_fires` is written from the design's rules, not from `ondeck.work.firing`: the day a
run first processes a schedule catches up its missed dates by its `missed` policy (latest:
one fire at the last due date, the others counted as skipped; all: one fire per date, the
last 31; skip: today only, if due today); after that, each processed day fires the
schedules it is an occurrence of. `check_exactly_once` compares the store with it.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, insert, select

from ondeck.core import rules
from ondeck.db.tables import backups, events, fires, schedules, tasks

RULES = [
    ("daily", 6),
    ("weekly:MON,WED,FRI", 2),
    ("weekly:TUE", 1),
    ("monthly:1,15,last", 1),
    ("monthly:2", 1),
    ("every:2", 1),
    ("every:3", 1),
]
MAX_BACKFILL = 31  # the design's bound on missed=all


@dataclass(frozen=True)
class Planned:
    id: int
    kind: str
    rule: str
    missed: str
    start_on: date
    next_due: date


def make_schedules(
    engine: Engine, count: int, first_day: date, *, seed: int, behind: int = 10
) -> list[Planned]:
    """`count` task and remind schedules of every rule and missed policy, most of them due
    on `first_day`, some up to `behind` days late (so missed dates pile up), some later."""
    rng = random.Random(seed)
    names, weights = zip(*RULES, strict=True)
    now = datetime.combine(first_day, datetime.min.time(), tzinfo=UTC) - timedelta(days=60)
    rows = []
    for i in range(count):
        rule = rng.choices(names, weights)[0]
        start = first_day - timedelta(days=rng.randint(0, 60))
        lag = rng.randint(0, behind)
        parsed = rules.parse(rule)
        next_due = parsed.next_on_or_after(max(start, first_day - timedelta(days=lag)), start)
        rows.append(
            {
                "title": f"{rule} #{i}",
                "kind": "task" if rng.random() < 0.6 else "remind",
                "rule": rule,
                "missed": rng.choice(["latest", "all", "skip"]),
                "start_on": start,
                "next_due": next_due,
                "priority": rng.randint(0, 9),
                "created_at": now,
                "updated_at": now,
            }
        )
    with engine.begin() as conn:
        conn.execute(insert(schedules), rows)
        found = conn.execute(
            select(
                schedules.c.id,
                schedules.c.kind,
                schedules.c.rule,
                schedules.c.missed,
                schedules.c.start_on,
                schedules.c.next_due,
            )
            .where(schedules.c.kind != "backup")
            .order_by(schedules.c.id)
        ).all()
    return [Planned(**row._mapping) for row in found]


def expected_fires(s: Planned, days: list[date]) -> dict[date, int]:
    """{fire date: skipped} after processing `days` (consecutive, each to its end)."""
    rule = rules.parse(s.rule)
    found: dict[date, int] = {}
    first = days[0]
    if s.next_due <= first:
        dates = [s.next_due]
        while (following := rule.next_after(dates[-1], s.start_on)) <= first:
            dates.append(following)
        if s.missed == "latest":
            found[dates[-1]] = len(dates) - 1
        elif s.missed == "all":
            kept = dates[-MAX_BACKFILL:]
            found.update(dict.fromkeys(kept, 0))
            found[kept[0]] = len(dates) - len(kept)
        elif dates[-1] == first:  # skip: only today's
            found[first] = 0
    for day in days[1:]:
        if day >= s.next_due and rule.next_on_or_after(day, s.start_on) == day:
            found[day] = 0
    return found


def check_exactly_once(engine: Engine, planned: list[Planned], days: list[date]) -> dict[str, int]:
    """Assert every (schedule, fire date) fired exactly once, with exactly one task for task
    schedules, none missing, none extra; return the counts."""
    by_id = {s.id: s for s in planned}
    expected = {
        (s.id, day, skipped) for s in planned for day, skipped in expected_fires(s, days).items()
    }
    with engine.connect() as conn:
        fired = conn.execute(
            select(fires.c.schedule_id, fires.c.fire_date, fires.c.skipped, fires.c.task_id).where(
                fires.c.schedule_id.in_(list(by_id))
            )
        ).all()
        made = conn.execute(
            select(tasks.c.id, tasks.c.source, tasks.c.due_on).where(tasks.c.source.is_not(None))
        ).all()
        fire_events = conn.execute(
            select(events.c.subject, events.c.details).where(events.c.kind == "schedule.fired")
        ).all()
        create_events = conn.execute(
            select(events.c.subject).where(events.c.kind == "task.created")
        ).all()
        next_dues = dict(
            conn.execute(
                select(schedules.c.id, schedules.c.next_due).where(schedules.c.id.in_(list(by_id)))
            ).all()
        )
    got = {(f.schedule_id, f.fire_date, f.skipped) for f in fired}
    assert len(got) == len(fired)
    missing, extra = expected - got, got - expected
    assert not missing, f"{len(missing)} fires missing, e.g. {sorted(missing)[:5]}"
    assert not extra, f"{len(extra)} unexpected fires, e.g. {sorted(extra)[:5]}"

    task_fires = [f for f in fired if by_id[f.schedule_id].kind == "task"]
    assert all(f.task_id is None for f in fired if by_id[f.schedule_id].kind == "remind")
    sources = {t.source: t for t in made}
    want = {f"sch:{f.schedule_id}:{f.fire_date.isoformat()}": f for f in task_fires}
    assert set(sources) == set(want), "tasks without a fire, or fires without their task"
    for source, fire in want.items():
        assert sources[source].id == fire.task_id
        assert sources[source].due_on == fire.fire_date

    # Events are not UNIQUE: a date processed twice would show here even where a
    # constraint absorbed the second row.
    per_fire = Counter(
        (int(subject.split(":")[1]), details["fire_date"]) for subject, details in fire_events
    )
    per_fire = Counter({k: v for k, v in per_fire.items() if k[0] in by_id})
    assert set(per_fire.values()) <= {1}, "a fire event recorded twice"
    assert set(per_fire) == {(sid, day.isoformat()) for sid, day, _ in expected}
    per_task = Counter(subject for (subject,) in create_events)
    task_ids = {f"task:{t.id}" for t in made}
    assert all(per_task[subject] == 1 for subject in task_ids), "a task created twice"

    for s in planned:
        rule = rules.parse(s.rule)
        want_next = s.next_due if s.next_due > days[-1] else rule.next_after(days[-1], s.start_on)
        assert next_dues[s.id] == want_next, f"schedule {s.id} next_due"
    return {
        "schedules": len(planned),
        "fires": len(fired),
        "task_fires": len(task_fires),
        "tasks": len(made),
        "remind_fires": len(fired) - len(task_fires),
        "coalesced": sum(f.skipped for f in fired),
    }


def backup_record(engine: Engine) -> dict[str, Any]:
    """The backup schedule's fires and runs: {"fires": [dates], "runs": [(status, day)]}."""
    with engine.connect() as conn:
        schedule_id = conn.execute(
            select(schedules.c.id).where(schedules.c.kind == "backup")
        ).scalar_one()
        dates = conn.execute(
            select(fires.c.fire_date)
            .where(fires.c.schedule_id == schedule_id)
            .order_by(fires.c.fire_date)
        ).scalars()
        runs = conn.execute(select(backups.c.status, backups.c.started_at, backups.c.error)).all()
    return {
        "fires": list(dates),
        "runs": [(r.status, r.started_at.date(), r.error) for r in runs],
    }
