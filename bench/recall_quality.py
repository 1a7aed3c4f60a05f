"""Recall quality: does recall put the note that answers a question first? A year of a
solo developer's memory (bench/recall_quality_data.py: notes, decisions and handoffs in
Korean, English and both, over projects whose words overlap) and the questions a person
asks of it, each with the notes that answer it.

Run: .venv/bin/python bench/recall_quality.py [--store sqlite|postgresql] [--pg-url URL]
     [--limit 20] [--show-misses] [--json]

Baseline: main at 1763ef1 (recall finds the items holding every term of the question as a
substring, ranked by whole-query match, then recency), `.venv/bin/python bench/recall_quality.py`
and `... --store postgresql`, the same figures on both stores:
    285 questions over 313 notes: hit@1 0.260, hit@5 0.267, MRR 0.263
    English 156: 0.288 / 0.288 / 0.288; Korean 93: 0.226 / 0.247 / 0.237;
    mixed 36: 0.222 / 0.222 / 0.222; one question refused (10 terms, at most 8).
By length: one-word questions 34 of 35 in the first 5 (identifiers, paths, versions, rare
words), two words 21 of 44, three or more words 21 of 206: a question asked as a sentence
almost never has all its words in the note that answers it.

Recall by words (BM25 over stems, Korean pieces and the glossary; issue 24), the same
command, the same figures on both stores:
    285 questions over 313 notes: hit@1 0.716, hit@5 0.905, MRR 0.802
    English 156: 0.724 / 0.891 / 0.801; Korean 93: 0.720 / 0.914 / 0.814;
    mixed 36: 0.667 / 0.944 / 0.770; none refused.
Of the 27 still missed, most ask in other words than the note's (a laptop that is a
MacBook) or in one language of a note in the other beyond the glossary.

Figures: hit@1 and hit@5 (the share of questions whose first answering note is at rank 1,
or within the first 5), MRR (the mean of 1/rank of the first answering note within the
first `--limit`, 0 when none is), by the language of the question too. A question recall
refuses (InvalidInput) counts as a miss.

How: a throwaway store (SQLite by default); every note written through ondeck's own
service (`ondeck.memory.notes.add_note`; a handoff through `write_handoff` for a session of
its own), sides off and no project, so every note is in scope; in a fixed shuffled order,
each 3 hours after the one before, so recency breaks ties the same way at every run. Each
question is asked with `recall` in a write transaction (a recall may bring its index up to
date first).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from _stores import postgres_url, sqlite_url
from recall_quality_data import NOTES, QUESTIONS
from sqlalchemy import Engine

from ondeck.core.errors import InvalidInput
from ondeck.core.memory import Scope
from ondeck.db import open_database
from ondeck.memory import notes as svc
from ondeck.memory.recall import recall
from support.memory import make_session

UTC = ZoneInfo("UTC")
FIRST = datetime(2025, 11, 3, 8, 0, tzinfo=UTC)
STEP = timedelta(hours=3)
SEED = 20251103
NOTE_KINDS = ("note", "decision", "handoff")


def check_data() -> None:
    keys = [key for key, _, _ in NOTES]
    if len(set(keys)) != len(keys):
        raise SystemExit("duplicate note keys in recall_quality_data.py")
    for key, kind, _ in NOTES:
        if kind not in NOTE_KINDS:
            raise SystemExit(f"note {key}: kind {kind!r} is not one of {NOTE_KINDS}")
    for question, answers in QUESTIONS:
        unknown = [a for a in answers if a not in set(keys)]
        if not answers or unknown:
            raise SystemExit(f"question {question!r}: no answers or unknown keys {unknown}")


def write_notes(engine: Engine) -> tuple[dict[int, str], datetime]:
    """Every note through the service, in a fixed shuffled order, `STEP` apart; returns
    the key of each note id and the moment after the last."""
    order = list(NOTES)
    random.Random(SEED).shuffle(order)
    keys: dict[int, str] = {}
    now = FIRST
    with engine.begin() as conn:
        for key, kind, text in order:
            if kind == "handoff":
                sid = make_session(
                    conn, now - timedelta(minutes=40), external_id=f"bench-{key}", minutes=30
                )
                note, _ = svc.write_handoff(conn, now, sid, text, actor="bench")
            else:
                note = svc.add_note(
                    conn, now, text=text, kind=kind, side=None, project=None, sides=(),
                    zone=UTC, actor="bench",
                )  # fmt: skip
            keys[note.id] = key
            now += STEP
    return keys, now


@dataclass
class Tally:
    asked: int = 0
    at1: int = 0
    at5: int = 0
    rr: float = 0.0

    def add(self, rank: int | None) -> None:
        self.asked += 1
        if rank is not None:
            self.at1 += rank == 1
            self.at5 += rank <= 5
            self.rr += 1 / rank

    def figures(self) -> dict[str, Any]:
        n = max(self.asked, 1)
        return {
            "questions": self.asked,
            "hit@1": round(self.at1 / n, 3),
            "hit@5": round(self.at5 / n, 3),
            "mrr": round(self.rr / n, 3),
        }


@dataclass
class Miss:
    question: str
    answers: list[str]
    rank: int | None
    first: list[str] = field(default_factory=list)
    refused: str | None = None


def language(question: str) -> str:
    hangul = any("\uac00" <= c <= "\ud7a3" for c in question)
    latin = any(c.isascii() and c.isalpha() for c in question)
    return "mixed" if hangul and latin else "ko" if hangul else "en"


def ask(engine: Engine, keys: dict[int, str], day: Any, limit: int) -> dict[str, Any]:
    overall, by_language = Tally(), {name: Tally() for name in ("en", "ko", "mixed")}
    misses: list[Miss] = []
    for question, answers in QUESTIONS:
        ranked: list[str] = []
        refused = None
        try:
            with engine.begin() as conn:
                found = recall(conn, question, Scope.of(sides_on=False), day, limit=limit)
            ranked = [
                keys.get(h.id, f"?{h.id}") if h.kind in NOTE_KINDS else f"{h.kind}:{h.id}"
                for h in found.hits
            ]
        except InvalidInput as refusal:
            refused = str(refusal)
        rank = next((i for i, key in enumerate(ranked[:limit], 1) if key in answers), None)
        overall.add(rank)
        by_language[language(question)].add(rank)
        if rank is None or rank > 5:
            misses.append(Miss(question, list(answers), rank, ranked[:3], refused))
    return {
        **overall.figures(),
        "notes": len(NOTES),
        "by_language": {name: t.figures() for name, t in by_language.items()},
        "misses": misses,
    }


@contextlib.contextmanager
def store(name: str, pg_url: str | None) -> Iterator[Engine]:
    with sqlite_url() if name == "sqlite" else postgres_url(pg_url) as url:
        engine = open_database(url)
        try:
            yield engine
        finally:
            engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--pg-url")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    check_data()
    with store(args.store, args.pg_url) as engine:
        keys, after = write_notes(engine)
        result = ask(engine, keys, (after + timedelta(days=1)).date(), args.limit)
    misses: list[Miss] = result.pop("misses")
    if args.json:
        result["store"] = args.store
        if args.show_misses:
            result["misses"] = [m.__dict__ for m in misses]
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return
    print(f"{args.store}: {result['questions']} questions over {result['notes']} notes, "
          f"limit {args.limit}")  # fmt: skip
    print(f"  all     hit@1 {result['hit@1']:.3f}  hit@5 {result['hit@5']:.3f}  "
          f"MRR {result['mrr']:.3f}")  # fmt: skip
    for name, f in result["by_language"].items():
        print(f"  {name:7} hit@1 {f['hit@1']:.3f}  hit@5 {f['hit@5']:.3f}  "
              f"MRR {f['mrr']:.3f}  ({f['questions']} questions)")  # fmt: skip
    refused = [m for m in misses if m.refused]
    for m in refused:
        print(f"  refused: {m.question!r}: {m.refused}")
    if args.show_misses:
        print(f"\nnot in the first 5 ({len(misses)}):")
        for m in misses:
            where = (
                "refused"
                if m.refused
                else f"none in the first {args.limit}"
                if m.rank is None
                else f"rank {m.rank}"
            )
            print(f"  {m.question!r}  want {m.answers}, {where}; first {m.first or '-'}")


if __name__ == "__main__":
    sys.exit(main())
