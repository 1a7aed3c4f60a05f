"""Refused writes, through real `ondeck hook …` processes on both stores: a store that
refuses every write (read-only) keeps every event in the spool with its reason; a record the
store refuses for its own content is set aside without blocking the rest (hooks and the jobs
tick); a huge spool never keeps a hook from storing its own event, in bounded time and
memory; a torn spool line takes no event with it; input that is not clean text is stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from ondeck.core import clock
from ondeck.db.engine import make_engine, reading
from ondeck.db.tables import events
from ondeck.sessions import records as svc
from support.hooks import ONDECK, SESSION_ID, new_repo, payload, run_hook, serverless_env
from support.procs import at_time, run_ondeck

DOWN = "postgresql+psycopg://x@127.0.0.1:1/none"  # nothing listens: every hook spools


class Hooks:
    def __init__(self, tmp_path: Path, db_url: str) -> None:
        self.repo = new_repo(tmp_path / "site")
        self.data = tmp_path / "data"
        self.spool = self.data / "spool"
        self.transcript = tmp_path / "transcript.jsonl"
        self.transcript.write_text("")
        self.env = serverless_env(db_url, self.data)

    def data_of(self, name: str, **changes: Any) -> dict[str, Any]:
        with self.transcript.open("a") as handle:  # a new turn each time
            handle.write(json.dumps({"turn": name}) + "\n")
        return payload(name, cwd=str(self.repo), transcript_path=str(self.transcript), **changes)

    def hook(self, verb: str, name: str, *, url: str | None = None, **changes: Any) -> Any:
        env = {**self.env, "ONDECK_DATABASE_URL": url} if url else self.env
        done = run_hook(verb, self.data_of(name, **changes), env)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        return json.loads(done.stdout) if done.stdout.strip() else None

    def waiting(self) -> list[dict[str, Any]]:
        return [
            json.loads(line)
            for name in ("draining.jsonl", "events.jsonl")
            if (self.spool / name).exists()
            for line in (self.spool / name).read_text().splitlines()
            if line.strip()
        ]

    def rejected(self) -> list[dict[str, Any]]:
        path = self.spool / "rejected.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _context(started: Any) -> str:
    return str(started["hookSpecificOutput"]["additionalContext"])


def _kinds(engine: Engine) -> list[str]:
    with reading(engine) as conn:
        rows = conn.execute(
            events.select().where(events.c.kind.startswith("session.")).order_by(events.c.id)
        )
        return [r.kind for r in rows]


def _session(engine: Engine, external: str = SESSION_ID) -> Any:
    with reading(engine) as conn:
        return svc.find_session(conn, external)


# --- a store that refuses every write ----------------------------------------------------


@pytest.fixture
def read_only(db_url: str, tmp_path: Path) -> Iterator[tuple[str, Any, Any]]:
    """(URL the hooks use, make it read-only, make it writable again). PostgreSQL: as after
    a failover to a standby (`default_transaction_read_only`); SQLite: its directory a
    read-only bind mount (root: permissions alone would not stop it)."""
    url = make_url(db_url)
    if url.get_backend_name() == "postgresql":
        admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")

        def pg(on: bool) -> None:
            with admin.connect() as conn:
                conn.execute(
                    text(
                        f"ALTER DATABASE {url.database} SET default_transaction_read_only = "
                        + ("on" if on else "off")
                    )
                )

        try:
            yield db_url, lambda: pg(True), lambda: pg(False)
        finally:
            pg(False)
            admin.dispose()
        return
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    folder = tmp_path / "store"  # a directory of its own: the test writes beside it
    folder.mkdir()
    moved = folder / "ondeck.db"
    Path(str(url.database)).rename(moved)

    def mount() -> None:
        for args in (["--bind", str(folder), str(folder)], ["-o", "remount,ro,bind", str(folder)]):
            done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
            if done.returncode != 0:
                pytest.skip(f"mount {' '.join(args)}: {done.stderr.strip()}")

    def unmount() -> None:
        subprocess.run(["umount", str(folder)], capture_output=True, check=False)

    try:
        yield f"sqlite:///{moved}", mount, unmount
    finally:
        unmount()


@pytest.mark.slow
def test_a_read_only_store_keeps_every_event_in_the_spool_with_its_reason(
    tmp_path: Path, read_only: tuple[str, Any, Any]
) -> None:
    url, lock, unlock = read_only
    engine = make_engine(url)
    hooks = Hooks(tmp_path, url)
    lock()
    started = hooks.hook("session-start", "start")
    assert "kept in the spool (1 event waiting" in _context(started)
    said = hooks.hook("stop", "stop", last_assistant_message="읽기 전용이었다 (read-only)")
    assert "kept in the spool" in said["systemMessage"]
    # The store's own reason (SQLite cannot even open a WAL database on a read-only mount).
    reason = "in a read-only transaction" if url.startswith("postgresql") else "unable to open"
    assert "(database unavailable: " in said["systemMessage"]
    assert reason in said["systemMessage"]
    ended = hooks.hook("session-end", "end")
    assert "kept in the spool" in ended["systemMessage"]
    assert [r["kind"] for r in hooks.waiting()] == ["start", "stop", "end", "changes"]
    assert hooks.rejected() == []
    unlock()

    hooks.hook("session-start", "start", session_id="a-later-session")
    assert hooks.waiting() == []
    s = _session(engine)
    engine.dispose()
    assert s.status == "ended" and s.last_word == "읽기 전용이었다 (read-only)"


# --- a record the store refuses for its own content ----------------------------------------


def _narrow_trigger(engine: Engine) -> None:
    """The store refuses a compaction's trigger longer than 3 characters, as PostgreSQL
    refused a 20-character one in a 16-character column (SQLite keeps no lengths: a trigger
    on the table says the same)."""
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            narrow = "ALTER TABLE session_compactions ALTER COLUMN trigger TYPE varchar(3)"
            conn.execute(text(narrow))
        else:
            conn.execute(
                text(
                    "CREATE TRIGGER narrow BEFORE INSERT ON session_compactions "
                    "WHEN length(NEW.trigger) > 3 BEGIN "
                    "SELECT RAISE(ABORT, 'CHECK constraint failed: trigger too long'); END"
                )
            )


def test_a_record_the_store_refuses_is_set_aside_and_the_rest_go_on(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    hooks = Hooks(tmp_path, db_url)
    hooks.hook("session-start", "start")
    # While the database was away: a turn, a compaction the store will refuse, a turn, and
    # one made by an older ondeck that let a 20-character trigger through.
    hooks.hook("stop", "stop", url=DOWN, last_assistant_message="first")
    hooks.hook("post-compact", "compact", url=DOWN, trigger="auto")
    hooks.hook("stop", "stop", url=DOWN, last_assistant_message="second")
    old = {**hooks.waiting()[1], "trigger": "a-twenty-char-trigger", "fingerprint": "f" * 32}
    with (hooks.spool / "events.jsonl").open("a") as handle:
        handle.write(json.dumps(old) + "\n")
    _narrow_trigger(engine)

    assert hooks.hook("stop", "stop", last_assistant_message="third") is None  # stored
    assert hooks.waiting() == []
    reasons = [r["reason"] for r in hooks.rejected()]
    assert len(reasons) == 2
    assert reasons[0].startswith("refused by the database:")
    assert reasons[1].startswith("malformed: record trigger must be a short word (at most 16")
    assert _session(engine).last_word == "third"
    with reading(engine) as conn:
        receipts = conn.execute(text("SELECT kind FROM hook_receipts ORDER BY kind")).scalars()
        assert list(receipts) == ["start", "stop", "stop", "stop"]  # all three turns came

    # Its own record refused: set aside and said, the session goes on.
    said = hooks.hook("post-compact", "compact", trigger="auto")
    assert "set aside" in said["systemMessage"] and len(hooks.rejected()) == 3
    started = hooks.hook("session-start", "resume")
    assert "3 spooled hook events could not be applied" in _context(started)


def test_the_jobs_tick_sets_a_refused_record_aside_and_marks_lost_sessions(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    hooks = Hooks(tmp_path, db_url)
    hooks.hook("session-start", "start", session_id="silent-one")
    hooks.hook("post-compact", "compact", url=DOWN, trigger="auto")
    hooks.hook("stop", "stop", url=DOWN, last_assistant_message="after it")
    _narrow_trigger(engine)
    later = clock.now() + timedelta(days=2)
    done = run_ondeck("jobs", "--once", env=at_time({**os.environ, **hooks.env}, later))
    assert done.returncode == 0, done.stderr  # no failed step
    assert hooks.waiting() == [] and len(hooks.rejected()) == 1
    assert _session(engine).last_word == "after it"
    assert _session(engine, "silent-one").status == "lost"


# --- a schema newer than the code -------------------------------------------------------------


def _stamp(engine: Engine, revision: str) -> None:
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})


def _written(engine: Engine) -> dict[str, int]:
    with reading(engine) as conn:
        return {
            table: int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())
            for table in ("sessions", "hook_receipts", "events", "notes", "store_identity")
        }


def test_a_schema_newer_than_the_code_is_never_written_into(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    """What an older release's hook meets once a newer ondeck migrated the database: the
    revision after this code's head, which it does not know. The hook writes nothing (it
    said "unavailable" and wrote anyway), keeps the records in the spool and says why; the
    CLI and the jobs tick refuse in one line; with the revision back, a drain stores them."""
    from ondeck.db.bare import SCHEMA_HEAD

    ahead = f"{int(SCHEMA_HEAD) + 1:04d}"
    hooks = Hooks(tmp_path, db_url)
    _stamp(engine, ahead)
    before = _written(engine)

    context = _context(hooks.hook("session-start", "start"))
    assert f"schema version {ahead}, which this ondeck does not know" in context, context
    assert "start (" in context and "kept in the spool (1 event waiting" in context, context
    said = hooks.hook("stop", "stop", last_assistant_message="새 스키마에는 쓰지 않는다")
    assert f"schema version {ahead}" in said["systemMessage"], said
    assert "kept in the spool (2 events waiting" in said["systemMessage"], said
    env = {**os.environ, **hooks.env}
    for args in (("note", "add", "새 스키마"), ("jobs", "--once")):
        done = run_ondeck(*args, env=env)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and f"schema version {ahead}" in done.stderr
    assert _written(engine) == before  # not a row, not an event
    assert [r["kind"] for r in hooks.waiting()] == ["start", "stop"]
    assert hooks.rejected() == []

    _stamp(engine, SCHEMA_HEAD)  # as the newer ondeck's backup restored, say
    done = run_ondeck("jobs", "--once", env=env)
    assert done.returncode == 0, done.stderr
    assert hooks.waiting() == []
    s = _session(engine)
    assert s.status == "open" and s.last_word == "새 스키마에는 쓰지 않는다"


# --- a drain killed midway ------------------------------------------------------------------

KILLED_SPOOL = 2_400  # records: a drain of some seconds, long enough to be killed midway
REFUSED_LINES = 8  # 4 malformed, 4 the store refuses, spread over the spool


def test_a_drain_killed_midway_counts_each_refused_line_once(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    """A jobs tick killed (-9) while it drains has set some lines aside; the next drain
    reads the same lines again (the taken file is cut only when a drain ends) and must not
    set them aside a second time: the warning counts rejected.jsonl's lines (it said 14
    for 8)."""
    hooks = Hooks(tmp_path, db_url)
    hooks.hook("session-start", "start")
    hooks.hook("stop", "stop", url=DOWN, session_id="template")
    hooks.hook("post-compact", "compact", url=DOWN, session_id="template", trigger="auto")
    stop, compaction = hooks.waiting()
    (hooks.spool / "events.jsonl").unlink()
    spaced = {KILLED_SPOOL * (2 * k + 1) // (2 * REFUSED_LINES): k for k in range(REFUSED_LINES)}
    with (hooks.spool / "events.jsonl").open("w", encoding="utf-8") as out:
        for n in range(KILLED_SPOOL):
            if n in spaced and spaced[n] % 2:
                line = '{"v":1,"kind":"stop","agent":"claude-code","session":"잘린 줄'  # torn
            elif n in spaced:  # a compaction whose trigger the narrowed store refuses
                line = json.dumps(
                    {
                        **compaction,
                        "session": f"old-{n}",
                        "fingerprint": f"{n:032x}",
                        "trigger": "manual",
                    },
                    ensure_ascii=False,
                )
            else:
                text = {**stop["text"], "value": f"{n}: 기다린 마지막 말"}
                line = json.dumps(
                    {**stop, "session": f"old-{n}", "fingerprint": f"{n:032x}", "text": text},
                    ensure_ascii=False,
                )
            out.write(line + "\n")
    _narrow_trigger(engine)
    assert len(spaced) == REFUSED_LINES

    env = {**os.environ, **hooks.env}
    rejected = hooks.spool / "rejected.jsonl"

    def set_aside() -> int:
        return len(rejected.read_text().splitlines()) if rejected.exists() else 0

    drain = subprocess.Popen(
        [ONDECK, "jobs", "--once"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while set_aside() < 2 and drain.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        drain.kill()  # SIGKILL, midway: some lines set aside, most still waiting
    finally:
        drain.wait(timeout=30)
    assert drain.returncode == -9, "the drain ended before it could be killed midway"
    before = set_aside()
    assert 2 <= before < REFUSED_LINES, before
    waiting = (hooks.spool / "draining.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(waiting) > KILLED_SPOOL // 4  # much of it was still to drain

    done = run_ondeck("jobs", "--once", env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert hooks.waiting() == []
    reasons = [r["reason"] for r in hooks.rejected()]
    assert len(reasons) == REFUSED_LINES, reasons
    assert sum(r.startswith("malformed") for r in reasons) == REFUSED_LINES // 2, reasons
    assert sum(r.startswith("refused by the database") for r in reasons) == REFUSED_LINES // 2
    started = hooks.hook("session-start", "resume")
    assert f"{REFUSED_LINES} spooled hook events could not be applied" in _context(started)


# --- a drain with no end --------------------------------------------------------------------

# Runs a hook as Claude Code would, kills it after KILL_AFTER seconds if it has not ended,
# and reports its peak memory (the child's maximum resident set).
WRAPPER = """
import json, resource, subprocess, sys
with open(sys.argv[3], "rb") as stdin:
    child = subprocess.Popen([sys.argv[1], "hook", sys.argv[2]], stdin=stdin,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = child.communicate(timeout=float(sys.argv[4]))
        killed = False
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        killed = True
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"killed": killed, "peak_kb": peak, "code": child.returncode,
                  "stderr": err.decode()[-2000:]}))
"""
KILL_AFTER = 5.0  # as Claude Code was seen to
SPOOLED = 15_000


def _huge_spool(hooks: Hooks, template: dict[str, Any]) -> int:
    """SPOOLED records of other sessions (1,000-character Korean last words): the size."""
    path = hooks.spool / "events.jsonl"
    with path.open("a", encoding="utf-8") as out:
        for n in range(SPOOLED):
            text = {**template["text"], "value": f"{n}: " + "오래 기다린 마지막 말 " * 80}
            line = {**template, "session": f"old-{n}", "fingerprint": f"{n:032x}", "text": text}
            out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path.stat().st_size


@pytest.mark.slow
def test_a_huge_spool_never_keeps_a_hook_from_storing_its_own_event(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    hooks = Hooks(tmp_path, db_url)
    hooks.hook("session-start", "start")
    hooks.hook("stop", "stop", url=DOWN, session_id="template")
    [template] = hooks.waiting()
    size = _huge_spool(hooks, template)
    assert size > 40 * 2**20  # tens of MB
    stdin = tmp_path / "end.json"
    stdin.write_text(json.dumps(hooks.data_of("end")))

    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, ONDECK, "session-end", str(stdin), str(KILL_AFTER)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **hooks.env, "ONDECK_DEBUG": "1"},
        check=True,
    )
    took = time.monotonic() - began
    report = json.loads(done.stdout)
    assert _session(engine).status == "ended", report  # its own event, first
    left = len(hooks.waiting())
    assert 0 < left < SPOOLED + 1, "it drained some, for a bounded time, and left the rest"
    assert not report["killed"] and took < KILL_AFTER, report  # bounded: it ended by itself
    # Bounded memory: a hook's own (the interpreter, the driver), not the spool's 40+ MB.
    assert report["peak_kb"] < 100 * 1024, report


# --- a torn spool line ----------------------------------------------------------------------


def test_a_torn_spool_line_takes_no_event_with_it(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    hooks = Hooks(tmp_path, db_url)
    hooks.hook("session-start", "start")
    hooks.hook("stop", "stop", url=DOWN, last_assistant_message="before the crash")
    with (hooks.spool / "events.jsonl").open("a") as handle:
        handle.write('{"v":1,"kind":"stop","agent":"claude-code","session":"3f1c')  # died here
    # The next event, while a jobs tick holds the drain (so nothing reads the spool first).
    import fcntl

    lock = os.open(hooks.spool / ".drain.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        hooks.hook("post-compact", "compact", url=DOWN)
    finally:
        os.close(lock)
    hooks.hook("stop", "stop", last_assistant_message="after it")
    assert hooks.waiting() == []
    [torn] = hooks.rejected()
    assert torn["line"].endswith('"session":"3f1c') and torn["reason"].startswith("malformed")
    s = _session(engine)
    assert s.compactions == 1 and s.last_word == "after it"


# --- input that is not clean text -----------------------------------------------------------


def _raw_hook(hooks: Hooks, verb: str, raw: bytes) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        [ONDECK, "hook", verb],
        input=raw,
        capture_output=True,
        timeout=300,
        env={**os.environ, **hooks.env},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr, done.stderr
    return done


def _input_notes(engine: Engine, kind: str) -> list[str]:
    with reading(engine) as conn:
        rows = conn.execute(events.select().where(events.c.kind == kind)).all()
    return [note for r in rows for note in (r.details or {}).get("input", [])]


def test_a_lone_surrogate_anywhere_is_stored_as_a_replacement_character(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    hooks = Hooks(tmp_path, db_url)
    start = hooks.data_of("start", model="claude-\ud83d")  # cut in the middle of an emoji
    done = _raw_hook(hooks, "session-start", json.dumps(start).encode())
    context = _context(json.loads(done.stdout))
    assert "could not" not in context and context.startswith("# On deck"), context
    stop = hooks.data_of("stop", last_assistant_message="다 됐어요 \ud83d")
    assert b"\\ud83d" in json.dumps(stop).encode()  # as JSON carries it
    _raw_hook(hooks, "stop", json.dumps(stop).encode())
    assert hooks.waiting() == []
    assert _session(engine).last_word == "다 됐어요 \ufffd"
    assert _input_notes(engine, "session.started") == ["1 lone UTF-16 surrogate replaced by U+FFFD"]
    assert _input_notes(engine, "session.last_word") == [
        "1 lone UTF-16 surrogate replaced by U+FFFD"
    ]


def test_deeply_nested_input_is_cut_and_the_event_stored(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    hooks = Hooks(tmp_path, db_url)
    data = json.dumps(hooks.data_of("start"))
    deep = data[:-1] + ', "tool_input": ' + "[" * 100_000 + "]" * 100_000 + "}"
    done = _raw_hook(hooks, "session-start", deep.encode())
    assert _context(json.loads(done.stdout)).startswith("# On deck")
    assert _session(engine).status == "open"
    [note] = _input_notes(engine, "session.started")
    assert note == "1 structure nested over 64 levels cut"


@pytest.mark.slow
def test_standard_input_over_256_mib_is_cut_and_the_event_stored(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    hooks = Hooks(tmp_path, db_url)
    hooks.hook("session-start", "start")
    head = json.dumps(hooks.data_of("stop", last_assistant_message=""))[:-2]  # ...: "
    raw = head.encode() + b"a" * (257 * 2**20) + b'"}'
    _raw_hook(hooks, "stop", raw)
    del raw
    s = _session(engine)
    assert s.last_word == "a" * 4_000
    assert _input_notes(engine, "session.last_word") == ["standard input over 256 MiB: cut there"]
