"""Memory: recall and the context with the brief at 100,000 notes and 20,000 sessions, in
process, on SQLite and PostgreSQL; and the session-start hook (whole process) on that data.

Run: .venv/bin/python bench/memory.py [--notes 100000] [--sessions 20000] [--tasks 10000]
     [--rounds 200] [--hook-runs 11] [--pg-url URL] [--only sqlite|postgresql] [--no-hook]
Targets (issue 15): recall p95 under 20 ms in-process on both stores; the context with the
brief p95 under 25 ms; the session-start hook within issue 14's bounds (database path at
most 1.0x `python -c 'import sqlalchemy'`, server path at most 4x `python -c pass`; the
session records bench measured 1.14 and 3.33 on SQLite, 1.38 and 3.64 on PostgreSQL with
no memory stored), medians of the same interleaved run.

Data: notes of 15-40 words drawn with Zipf frequencies (s = 1) from 5,000 made-up Korean
and English words and file paths, the words queried placed at common to rare ranks (one
note in ten with a unique reference), 80% in side `work`, over 40 projects (a fifth side-wide); 85%
active, the rest superseded, wrong or expired; 2% pinned; one handoff per session for half
the sessions; sessions with last words, a quarter with a compaction summary; tasks with
titles and bodies from the same words. Written through the tables (the full-text triggers
and indexes of migration 0004 in place), so the load time is the write cost too.

Queries (side work, no project, limit 20; each class 1/9 of the rounds, interleaved): a
common and a rare two-syllable Korean word, a 3-syllable Korean stem, an English word, an
English word form, a path, two terms, a 2-letter English term, a reference that matches
one note, and nothing at all.
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
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from _stores import percentiles, postgres_url, sqlite_url
from sqlalchemy import Engine, insert, null

from ondeck.context.build import build_context
from ondeck.context.render import to_markdown
from ondeck.core import clock
from ondeck.core.memory import Scope
from ondeck.db import open_database
from ondeck.db.engine import reading
from ondeck.db.tables import notes, session_compactions, sessions, tasks
from ondeck.memory.brief import BriefRequest
from ondeck.memory.recall import recall
from ondeck.memory.recall_index import fold

BIN = Path(sys.executable).parent
UTC = ZoneInfo("UTC")
KOREAN = [
    "배포",
    "일정",
    "서버",
    "버그",
    "수정",
    "테스트",
    "확인",
    "회의",
    "문서",
    "인증",
    "데이터베이스",
    "백업",
    "복구",
    "로그",
    "성능",
    "메모리",
    "검색",
    "세션",
    "작업",
    "완료",
    "했다",
    "하기",
    "내일",
    "오늘",
    "금요일",
    "목요일",
    "고객",
    "요청",
    "보고서",
    "정리",
    "배포했다",
    "배포를",
    "검토",
    "결정",
    "변경",
    "설정",
    "환경",
    "운영",
    "장애",
    "원인",
    "분석",
    "계획",
    "마감",
    "리뷰",
    "승인",
]
ENGLISH = [
    "deploy",
    "deployment",
    "server",
    "lease",
    "grace",
    "schedule",
    "reminder",
    "backup",
    "restore",
    "database",
    "index",
    "query",
    "release",
    "migration",
    "tests",
    "review",
    "decision",
    "note",
    "handoff",
    "session",
    "context",
    "brief",
    "token",
    "scrubber",
    "worker",
    "tick",
    "heartbeat",
    "claim",
    "renew",
    "complete",
    "cancel",
    "project",
    "side",
    "pin",
    "superseded",
    "wrong",
    "expired",
    "recall",
    "search",
    "trigram",
    "postgres",
    "sqlite",
    "timeout",
    "latency",
    "cache",
    "retry",
    "queue",
    "event",
    "activity",
    "dashboard",
    "template",
    "htmx",
    "config",
    "settings",
]
PATHS = [
    "src/ondeck/memory/recall.py",
    "src/ondeck/memory/notes.py",
    "src/ondeck/db/engine.py",
    "src/ondeck/entrypoints/hooks/verbs.py",
    "tests/integration/test_recall.py",
    "docs/benchmarks.md",
    "bench/memory.py",
    "src/ondeck/core/scrubber.py",
    "migrations/versions/0004_memory.py",
]
PROJECTS = [f"p{n}" for n in range(40)]
QUERIES = {
    "ko 2 common": "배포",
    "ko 2 rare": "승인",
    "ko 3": "배포했",
    "en word": "deploy",
    "en form": "deploying",
    "path": "memory/recall.py",
    "two terms": "lease grace",
    "en 2 letters": "db",
    "one note": "ref-77777",
    "nothing": "zqxwv",
}


SYLLABLES = (
    "가나다라마바사아자차카타파하배포일정서버그수정테스확인회의문인증데이백업복구로성"
    "능메검색세션작완료했내오늘금목고객요청보정리결변설환경운장애원분계획마감리뷰승"
)


def vocabulary(rng: random.Random, size: int = 5_000) -> list[str]:
    """Words in Zipf rank order: made-up Korean and English words, with the words the queries
    look for at the ranks a real notebook would give them (common, middling, rare)."""
    made: list[str] = []
    while len(made) < size:
        if rng.random() < 0.5:
            word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        else:
            word = "".join(
                rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))
            )
        if word not in made:
            made.append(word)
    for rank, word in enumerate(["했다", "the", "and", "to", "수정", "확인"], start=1):
        made[rank] = word
    placed = {30: "배포", 60: "deploy", 90: "deployment", 120: "서버", 200: "lease",
              300: "grace", 400: "src/ondeck/memory/recall.py", 500: "배포했다",
              800: "승인", 1200: "db/engine.py", 2000: "src/ondeck/db/engine.py"}  # fmt: skip
    for rank, word in placed.items():
        made[rank] = word
    made[1500:1500] = [w for w in KOREAN + ENGLISH + PATHS if w not in made][:200]
    return made[:size]


_VOCABULARY: list[str] = []
_WEIGHTS: list[float] = []


def words(rng: random.Random, low: int, high: int) -> str:
    """Zipf-distributed words (s = 1, 5,000 words), as real text has them."""
    if not _VOCABULARY:
        _VOCABULARY.extend(vocabulary(random.Random(1)))
        total = 0.0
        for rank in range(1, len(_VOCABULARY) + 1):
            total += 1 / rank
            _WEIGHTS.append(total)
    return " ".join(rng.choices(_VOCABULARY, cum_weights=_WEIGHTS, k=rng.randint(low, high)))


def side_of(project: str | None, rng: random.Random) -> str:
    if project is None:
        return "work" if rng.random() < 0.8 else "personal"
    return "personal" if int(project[1:]) % 5 == 0 else "work"


def populate(engine: Engine, n_notes: int, n_sessions: int, n_tasks: int, seed: int = 7) -> float:
    rng = random.Random(seed)
    now = clock.now()
    began = time.perf_counter()
    with engine.begin() as conn:
        rows = []
        for i in range(n_sessions):
            project = rng.choice(PROJECTS)
            at = now - timedelta(minutes=5 * (n_sessions - i))
            rows.append(
                {
                    "agent": "claude-code",
                    "external_id": f"bench-session-{i:06d}",
                    "status": "ended",
                    "started_at": at,
                    "last_seen_at": at + timedelta(minutes=30),
                    "ended_at": at + timedelta(minutes=30),
                    "end_reason": "prompt_input_exit",
                    "start_source": "startup",
                    "cwd": f"/home/me/work/{project}",
                    "git_root": f"/home/me/work/{project}",
                    "branch": "main",
                    "capture": True,
                    "side": side_of(project, rng),
                    "project": project,
                    "side_rule": "path",
                    "project_rule": "git",
                    "unclassified": False,
                    "classification": {"reason": "bench"},
                    "disagreements": [],
                    "last_word": words(rng, 10, 40),
                    "last_word_at": at + timedelta(minutes=29),
                    "commits": {"items": [], "total": rng.randint(0, 5)},
                    "files": null(),
                    "redaction_kinds": {},
                    "created_at": at,
                    "updated_at": at + timedelta(minutes=30),
                }
            )
        for start in range(0, len(rows), 2000):
            conn.execute(insert(sessions), rows[start : start + 2000])
        compactions = [
            {
                "session_id": sid,
                "at": now - timedelta(minutes=5 * (n_sessions - sid)),
                "trigger": "auto",
                "summary": words(rng, 40, 120),
                "chars": 0,
                "redactions": 0,
            }
            for sid in range(1, n_sessions + 1, 4)
        ]
        for start in range(0, len(compactions), 2000):
            conn.execute(insert(session_compactions), compactions[start : start + 2000])
        task_rows = [
            {
                "title": words(rng, 3, 8)[:500],
                "body": words(rng, 0, 30),
                "project": rng.choice(PROJECTS),
                "created_at": now - timedelta(minutes=n_tasks - i),
                "updated_at": now - timedelta(minutes=n_tasks - i),
            }
            for i in range(n_tasks)
        ]
        for start in range(0, len(task_rows), 2000):
            conn.execute(insert(tasks), task_rows[start : start + 2000])
        note_rows = []
        handoffs = 0
        for i in range(n_notes):
            project = rng.choice(PROJECTS) if rng.random() < 0.8 else None
            text = words(rng, 15, 40) + (f" ref-{i}" if i % 10 == 7 else "")
            roll = rng.random()
            status = (
                "active"
                if roll < 0.85
                else "superseded"
                if roll < 0.93
                else "wrong"
                if roll < 0.97
                else "expired"
            )
            kind = "decision" if rng.random() < 0.2 else "note"
            session_id = None
            side = side_of(project, rng)
            if handoffs < n_sessions // 2 and rng.random() < 0.1 and project is not None:
                kind, handoffs = "handoff", handoffs + 1
                session_id = handoffs * 2 - 1
                project, side = rows[session_id - 1]["project"], rows[session_id - 1]["side"]
            at = now - timedelta(minutes=n_notes - i)
            note_rows.append(
                {
                    "side": side,
                    "project": project,
                    "kind": kind,
                    "text": text[:8000],
                    "pinned": status == "active" and rng.random() < 0.02,
                    "status": status,
                    "status_reason": "bench" if status in ("wrong", "expired") else None,
                    "origin": "person" if session_id is None else f"agent:bench-{session_id}",
                    "session_id": session_id,
                    "head": "a" * 40 if kind == "handoff" else None,
                    "branch": "main" if kind == "handoff" else None,
                    "created_at": at,
                    "updated_at": at,
                }
            )
        for start in range(0, len(note_rows), 2000):
            conn.execute(insert(notes), note_rows[start : start + 2000])
    return time.perf_counter() - began


def index(engine: Engine) -> float:
    """Recall's word index made from what `populate` wrote (the queue its triggers filled),
    as the first recall or the jobs tick would; then the planner's statistics."""
    began = time.perf_counter()
    with engine.begin() as conn:
        fold(conn)
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE")
    else:
        with engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")
    return time.perf_counter() - began


def timed(engine: Engine, rounds: int, calls: list[Callable[[Any], Any]]) -> list[float]:
    samples = []
    for i in range(rounds):
        call = calls[i % len(calls)]
        began = time.perf_counter()
        with reading(engine) as conn:
            call(conn)
        samples.append((time.perf_counter() - began) * 1000)
    return samples


def recall_times(engine: Engine, rounds: int) -> dict[str, Any]:
    scope = Scope.of(sides_on=True, side="work")
    day = clock.today(clock.now(), UTC)
    hits: dict[str, int] = {}

    def query(name: str, text: str) -> Callable[[Any], Any]:
        def run(conn: Any) -> None:
            hits[name] = len(recall(conn, text, scope, day).hits)

        return run

    calls = [query(name, text) for name, text in QUERIES.items()]
    timed(engine, 20, calls)  # warm-up
    by_class: dict[str, list[float]] = {name: [] for name in QUERIES}
    overall: list[float] = []
    for i in range(rounds):
        name = list(QUERIES)[i % len(QUERIES)]
        sample = timed(engine, 1, [calls[i % len(calls)]])[0]
        by_class[name].append(sample)
        overall.append(sample)
    return {
        "overall": percentiles(overall),
        "classes": {
            name: {"median": statistics.median(s), "max": max(s), "hits": hits[name]}
            for name, s in by_class.items()
        },
    }


def brief_times(engine: Engine, rounds: int, cwd: str | None = None) -> dict[str, float]:
    now = clock.now()

    def context(project: str) -> Callable[[Any], Any]:
        request = BriefRequest(
            sides_on=True, side="work", project=project, session="bench", cwd=cwd
        )

        def run(conn: Any) -> None:
            ctx = build_context(conn, now, project, zone=UTC, brief=request)
            to_markdown(ctx, UTC)

        return run

    calls = [context(p) for p in PROJECTS if int(p[1:]) % 5]
    timed(engine, 10, calls)
    return percentiles(timed(engine, rounds, calls))


# Unmeasured first runs: they fill the bytecode cache and, on the server path, the server's
# own (psycopg prepares a statement the fifth time a connection runs it; a server in use has
# run each of a session start's statements long before).
WARM_UP = 6


def hook_times(url: str, runs: int, server: bool) -> dict[str, float]:
    """session-start as a whole process on this data (a new session each run), interleaved
    with its yardstick: medians and their ratio.

    Both run with a bytecode cache, as an installed ondeck has (a private
    `PYTHONPYCACHEPREFIX`, filled by the unmeasured first runs): an environment with
    PYTHONDONTWRITEBYTECODE would otherwise have the hook compile ondeck's modules from
    source at every run (about 10 ms here) while the yardstick's come compiled."""
    with tempfile.TemporaryDirectory(prefix="ondeck-bench-hook-") as tmp:
        work = Path(tmp) / "work"
        repo = work / "p7"
        repo.mkdir(parents=True)
        for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "x"]):
            subprocess.run(
                ["git", "-C", str(repo), "-c", "user.email=b@b", "-c", "user.name=b", *args],
                check=True,
            )
        port = _free_port()
        env = {
            **os.environ,
            "ONDECK_DATABASE_URL": url,
            "ONDECK_PORT": str(port),
            "ONDECK_TZ": "UTC",
            "ONDECK_DATA_DIR": str(Path(tmp) / "data"),
            "ONDECK_SIDES": json.dumps({"work": [str(work)], "personal": ["/nonexistent"]}),
            "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pyc"),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        proc = None
        if server:
            proc = subprocess.Popen(
                [str(BIN / "ondeck"), "serve", "--port", str(port), "--no-jobs"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            _wait(port)
        try:
            hook, baseline, sizes = [], [], []
            for i in range(runs + WARM_UP):
                payload = json.dumps(
                    {
                        "session_id": f"bench-hook-{server}-{i}-{time.time_ns()}",
                        "cwd": str(repo),
                        "hook_event_name": "SessionStart",
                        "source": "startup",
                    }
                )
                began = time.perf_counter()
                done = subprocess.run(
                    [str(BIN / "ondeck"), "hook", "session-start"],
                    input=payload,
                    capture_output=True,
                    text=True,
                    env={**env, "ONDECK_DEBUG": "1"},
                    check=True,
                )
                elapsed = time.perf_counter() - began
                want = "session context from http" if server else "from the database"
                if want not in done.stderr:
                    raise SystemExit(f"the hook did not take the path measured: {done.stderr}")
                # Issue 14's yardsticks: `import sqlalchemy` for the database path, `pass`
                # for the server path; each run right after the hook's, so both see the
                # same machine load.
                yardstick = "pass" if server else "import sqlalchemy"
                began = time.perf_counter()
                subprocess.run([sys.executable, "-c", yardstick], env=env, check=True)
                base = time.perf_counter() - began
                if i >= WARM_UP:
                    hook.append(elapsed * 1000)
                    baseline.append(base * 1000)
                    sizes.append(len(done.stdout))
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
    return {
        "yardstick": "python -c pass" if server else "python -c 'import sqlalchemy'",
        "hook_ms": statistics.median(hook),
        "import_ms": statistics.median(baseline),
        "ratio": statistics.median(hook) / statistics.median(baseline),
        "output_chars": max(sizes),
    }


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(port: int) -> None:
    import urllib.request

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the server never answered")


def git_repo_with_commits(root: Path) -> str:
    root.mkdir(parents=True, exist_ok=True)
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "a"]):
        subprocess.run(
            ["git", "-C", str(root), "-c", "user.email=b@b", "-c", "user.name=b", *args],
            check=True,
        )
    return str(root)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--hook-runs", type=int, default=11)
    parser.add_argument("--pg-url")
    parser.add_argument("--only", choices=("sqlite", "postgresql"))
    parser.add_argument("--no-hook", action="store_true")
    args = parser.parse_args()
    stores = [("sqlite", sqlite_url), ("postgresql", lambda: postgres_url(args.pg_url))]
    for name, make in stores:
        if args.only and name != args.only:
            continue
        with make() as url:
            engine = open_database(url)
            load = populate(engine, args.notes, args.sessions, args.tasks)
            indexed = index(engine)
            print(f"{name}: loaded {args.notes} notes, {args.sessions} sessions, "
                  f"{args.tasks} tasks in {load:.0f} s, indexed for recall in {indexed:.0f} s",
                  flush=True)  # fmt: skip
            found = recall_times(engine, args.rounds)
            p = found["overall"]
            print(f"{name}: recall p50 {p['p50']:.1f} / p95 {p['p95']:.1f} / p99 "
                  f"{p['p99']:.1f} ms", flush=True)  # fmt: skip
            for query, c in found["classes"].items():
                print(f"    {query:14} {QUERIES[query]!r:22} median {c['median']:.1f} ms, "
                      f"max {c['max']:.1f} ms, {c['hits']} hits", flush=True)  # fmt: skip
            b = brief_times(engine, args.rounds)
            print(f"{name}: context with the brief p50 {b['p50']:.1f} / p95 {b['p95']:.1f} "
                  f"/ p99 {b['p99']:.1f} ms", flush=True)  # fmt: skip
            with tempfile.TemporaryDirectory() as tmp:
                g = brief_times(
                    engine, max(args.rounds // 4, 10), git_repo_with_commits(Path(tmp) / "r")
                )
            print(f"{name}: ... with git read for the handoff's drift p50 {g['p50']:.1f} / "
                  f"p95 {g['p95']:.1f} ms", flush=True)  # fmt: skip
            engine.dispose()
            if not args.no_hook:
                for server in (False, True):
                    h = hook_times(url, args.hook_runs, server)
                    path = "server running" if server else "database path"
                    print(f"{name}: session-start hook ({path}) {h['hook_ms']:.0f} ms, "
                          f"{h['yardstick']} {h['import_ms']:.0f} ms, ratio {h['ratio']:.2f}, "
                          f"output {h['output_chars']} characters", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
