"""Claude Code session hooks: what a session is told at its start, what it leaves behind.

    session-start  the session's record opens (or a resume reopens it); prints the context
    stop           the session's last word (every turn)
    post-compact   Claude's own summary of what was compacted
    session-end    the record ends, with what git says the session did; its leases go

No hook ever fails a session: whatever goes wrong, it exits 0 and says what happened (in
the context at the start, on stdout otherwise).

Where an event goes, in this order:

1. the running server of the same database (its `X-Ondeck-Store` fingerprint matches): the
   hook sends the event as it received it (`POST /api/v1/sessions/hook-events`, with the
   hook's own classification rules) and the warm server reads git and the marker file,
   classifies, scrubs and stores it. On this path the hook imports almost nothing: its whole
   process is meant to cost at most 4x `python -c pass`;
2. the database itself: the hook makes the record (services/hook_records.py) and stores it
   through the bare driver (no SQLAlchemy, no pydantic: at most the cost of importing
   SQLAlchemy), except session-start, whose context is built with SQLAlchemy anyway;
3. the spool (services/spool.py), drained by the next hook or jobs tick that reaches the
   store. Whatever waits in the spool goes before anything newer.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see core/hook_config
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any, TextIO

    from ondeck.core.hook_config import HookConfig

MAX_STDIN = 8 * 1024 * 1024  # a last word may be long: its texts are cut to a window later
SERVER_TIMEOUT_S = 3.0
RECORDS_PATH = "/api/v1/sessions/records"
EVENTS_PATH = "/api/v1/sessions/hook-events"


def hook_output(markdown: str) -> dict[str, Any]:
    """The JSON Claude Code's SessionStart hook accepts on stdout."""
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": markdown}}


def read_payload(stream: TextIO) -> dict[str, Any]:
    try:
        data = json.loads(stream.read(MAX_STDIN) or "{}")
    except (ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _debug(message: str) -> None:
    if os.environ.get("ONDECK_DEBUG"):
        sys.stderr.write(f"ondeck: {message}\n")


class _NoServer(Exception):
    pass


class _Unreachable(Exception):
    pass


# --- 1. the server ---------------------------------------------------------------------------


class Server:
    """This machine's ondeck server, if it runs and serves the same database."""

    def __init__(self, config: HookConfig) -> None:
        self.config = config
        self.ok: bool | None = None  # None: not asked yet

    def headers(self) -> dict[str, str]:
        headers = {"X-Ondeck-Store-Expected": self.config.store_id}
        if self.config.token:
            headers["Authorization"] = f"Bearer {self.config.token}"
        return headers

    def post(self, path: str, body: dict[str, Any], count: int) -> list[dict[str, Any]]:
        """POST and the `results` (one per item sent); _NoServer when it is not usable."""
        if self.ok is False:
            raise _NoServer("not usable")
        from ondeck.entrypoints.hook_http import HttpError, request

        try:
            status, headers, answer = request(
                self.config.local_url,
                "POST",
                path,
                body=json.dumps(body, ensure_ascii=False).encode(),
                headers=self.headers(),
                timeout=SERVER_TIMEOUT_S,
            )
        except HttpError as exc:
            self.ok = False
            raise _NoServer(f"not reachable ({exc})") from None
        if headers.get("x-ondeck-store") != self.config.store_id:
            self.ok = False
            raise _NoServer("it serves another database")
        if status != 200:
            self.ok = False
            raise _NoServer(f"answered {status}: {answer[:200].decode('utf-8', 'replace')}")
        try:
            results = json.loads(answer)["results"]
        except (ValueError, KeyError, TypeError):
            self.ok = False
            raise _NoServer("answered something else than results") from None
        if not isinstance(results, list) or len(results) != count:
            self.ok = False
            raise _NoServer("answered for other events")
        self.ok = True
        return results

    def send_event(self, verb: str, payload: dict[str, Any], at: str) -> dict[str, Any]:
        """The event as received: the server makes and stores its record(s)."""
        from ondeck.services.hook_records import transcript_size, trim

        self.drain_spool()
        event = {
            "hook": verb,
            "payload": trim(payload),
            "at": at,
            "transcript_size": transcript_size(payload),
        }
        body = {"events": [event], "rules": self.config.rules()}
        result = self.post(EVENTS_PATH, body, 1)[0]
        if result.get("outcome") == "declined":  # the server cannot read this place
            raise _NoServer(f"declined: {result.get('reason')}")
        _debug(f"{verb} stored through {self.config.local_url}")
        return result

    def drain_spool(self) -> None:
        """What waits in the spool goes first (rare: two stats when nothing waits)."""
        if not _spool_waits(self.config.spool_dir):
            return
        from ondeck.services import spool
        from ondeck.services.hook_records import parse_record

        def apply(batch: list[dict[str, Any]]) -> list[str | None]:
            try:
                results = self.post(
                    RECORDS_PATH, {"records": [_sent(r) for r in batch]}, len(batch)
                )
            except _NoServer as exc:
                raise spool.Unreachable(str(exc)) from exc
            return [r.get("reason") if r.get("outcome") == "rejected" else None for r in results]

        drained = spool.drain(self.config.spool_dir, apply, parse_record)
        if drained.left:
            raise _NoServer("the spool could not be drained through the server")


def _spool_waits(spool_dir: str) -> bool:
    # = spool.has_waiting, without importing the spool module on every hook.
    for name in ("draining.jsonl", "events.jsonl"):
        try:
            if os.stat(os.path.join(spool_dir, name)).st_size > 0:
                return True
        except OSError:
            continue
    return False


def _sent(record: dict[str, Any]) -> dict[str, Any]:
    """A checked record back in the form it travels in (instants as ISO text)."""
    at = record["at"]
    return {**record, "at": at.isoformat() if hasattr(at, "isoformat") else at}


# --- 2. the database, 3. the spool ---------------------------------------------------------


class Local:
    """Records made here, stored in the database (the bare driver where it can) or the
    spool; remembers which worked, so an end's git changes go the same way."""

    def __init__(self, config: HookConfig) -> None:
        self.config = config
        self.problem = ""
        self._bare: Any = None
        self._engine: Any = None

    def store(self, record: dict[str, Any], now: datetime) -> dict[str, Any] | None:
        """Store `record` after whatever waits in the spool: its outcome, or None when it was
        spooled (`self.problem` says why)."""
        from ondeck.services import spool
        from ondeck.services.hook_records import parse_record

        checked = parse_record(record)  # what the store would refuse is a bug: say so here
        try:
            self._drain(spool, now)
            result = self._apply(checked, now)
            _debug(f"{record['kind']} stored in the database")
            return result
        except _Unreachable as exc:
            self.problem = str(exc)
        spool.append(self.config.spool_dir, record)
        _debug(f"{record['kind']} kept in the spool: {self.problem}")
        return None

    def waiting(self) -> int:
        from ondeck.services import spool

        return spool.status(self.config.spool_dir).waiting

    def close(self) -> None:
        if self._bare:
            self._bare.close()
        if self._engine is not None:
            self._engine.dispose()

    def _drain(self, spool: Any, now: datetime) -> None:
        from ondeck.services.hook_records import parse_record

        if not spool.has_waiting(self.config.spool_dir):
            return

        def apply(batch: list[dict[str, Any]]) -> list[str | None]:
            answers: list[str | None] = []
            for record in batch:
                try:
                    self._apply(record, now)
                except _Unreachable as exc:
                    if not answers:
                        raise spool.Unreachable(str(exc)) from exc
                    return answers
                answers.append(None)
            return answers

        drained = spool.drain(self.config.spool_dir, apply, parse_record)
        if drained.busy:
            raise _Unreachable("another process is draining the spool")
        if drained.left:
            raise _Unreachable("the store went away while the spool drained")

    def _apply(self, record: dict[str, Any], now: datetime) -> dict[str, Any]:
        from ondeck.db.bare import SchemaBehind, StoreUnavailable, open_bare

        if self._engine is None:
            try:
                if self._bare is None:
                    self._bare = open_bare(self.config.url) or False
                if self._bare:
                    return self._apply_bare(record, now)
            except StoreUnavailable as exc:
                raise _Unreachable(f"database unavailable: {exc}") from None
            except SchemaBehind:
                _debug("database schema behind: migrating it first")
        return self._apply_sqlalchemy(record, now)

    def _apply_bare(self, record: dict[str, Any], now: datetime) -> dict[str, Any]:
        from ondeck.services import session_store

        with self._bare.transaction() as db:
            applied = session_store.apply(db, record, now)
            held = session_store.held_leases(db, record["session"]) if applied["ended"] else []
        released: list[int] = []
        if held:  # rare: only then is SQLAlchemy worth its import
            released = self._release(record, now)
        return session_store.outcome(applied, record, released)

    def _release(self, record: dict[str, Any], now: datetime) -> list[int]:
        from ondeck.db.engine import writing
        from ondeck.services.backlog import release_held_by
        from ondeck.services.session_store import OWNER_PREFIX

        with writing(self.engine()) as conn:
            return release_held_by(
                conn,
                now,
                owner=f"{OWNER_PREFIX}{record['session'][:190]}",
                actor=f"hook:{record['session'][:60]}",
                reason=record.get("reason"),
            )

    def engine(self) -> Any:
        """The SQLAlchemy engine (session-start's context needs it anyway)."""
        if self._engine is None:
            from ondeck.core.errors import Unavailable
            from ondeck.db import open_database

            try:
                self._engine = open_database(self.config.url)
            except Unavailable as exc:
                raise _Unreachable(str(exc)) from None
        return self._engine

    def _apply_sqlalchemy(self, record: dict[str, Any], now: datetime) -> dict[str, Any]:
        from ondeck.core.errors import Unavailable
        from ondeck.db.engine import writing
        from ondeck.services.sessions import apply_record

        try:
            with writing(self.engine()) as conn:
                return apply_record(conn, now, record)
        except Unavailable as exc:
            raise _Unreachable(str(exc)) from None

    def spooled_line(self, what: str) -> str:
        return (
            f"ondeck could not store this session's {what} ({self.problem}); it is kept in the "
            f"spool ({self.waiting()} event(s) waiting in {self.config.spool_dir}) and stored "
            "by the next hook or jobs tick that reaches the database."
        )


# --- session-start -----------------------------------------------------------------------------


def session_start(stdin: TextIO, stdout: TextIO, db_url: str | None = None) -> int:
    payload = read_payload(stdin)
    try:
        markdown = _start(payload, db_url)
    except Exception as exc:  # never fail the session: tell it what went wrong instead
        markdown = _unavailable(exc)
    stdout.write(json.dumps(hook_output(markdown), ensure_ascii=False) + "\n")
    return 0


def _unavailable(exc: BaseException) -> str:
    return (
        "# On deck: unavailable\n\n"
        f"ondeck could not read its database ({_one_line(exc)}). Today's reminders, due "
        "tasks and warnings are unknown; check `ondeck context` or the server.\n"
    )


def _start(payload: dict[str, Any], db_url: str | None) -> str:
    from ondeck.core import clock
    from ondeck.core.hook_config import load_hook_config
    from ondeck.services.hook_records import session_id_of

    config = load_hook_config(db_url)
    now = clock.now()
    notes: list[str] = []
    server = Server(config)
    local = Local(config)
    try:
        classification = None
        session_number = None
        if session_id_of(payload) is not None:
            try:
                result = server.send_event("session-start", payload, now.isoformat())
                classification = result.get("classification")
                session_number = (result.get("session") or {}).get("id")
            except _NoServer as exc:
                _debug(f"server: {exc}")
                classification, session_number = _start_here(local, payload, now, notes)
        if classification is None:  # no session id: the context only, scoped by the place
            from ondeck.services.hook_records import observe

            found = observe(payload.get("cwd"), config)[1]
            classification = {"project": {"value": found.project.value}, "unclassified": False}
        if classification.get("unclassified"):
            notes.append(_unclassified_note(classification.get("reason", ""), session_number))
        project = (classification.get("project") or {}).get("value")
        markdown = _context_from_server(config, project) if server.ok else None
        source = config.local_url
        if markdown is None:
            source = "the database"
            try:
                markdown = _context_from_database(local, config, project, now)
            except Exception as exc:  # what was recorded (or spooled) is still worth saying
                markdown = _unavailable(exc)
        _debug(f"session context from {source}")
    finally:
        local.close()
    if notes:
        markdown = markdown.rstrip("\n") + "\n\n## This session\n"
        markdown += "".join(f"- {note}\n" for note in notes)
    return markdown


def _start_here(
    local: Local, payload: dict[str, Any], now: datetime, notes: list[str]
) -> tuple[dict[str, Any] | None, int | None]:
    from ondeck.services.hook_records import make_record

    try:
        record = make_record("start", payload, local.config, now)
    except Exception as exc:  # the context is still worth giving
        notes.append(f"ondeck could not record this session's start ({_one_line(exc)}).")
        return None, None
    if record is None:
        return None, None
    try:
        result = local.store(record, now)
    except Exception as exc:
        notes.append(f"ondeck could not record this session's start ({_one_line(exc)}).")
        return record["classification"], None
    if result is None:
        notes.append(local.spooled_line("start"))
        return record["classification"], None
    return record["classification"], result["session"]["id"]


def _unclassified_note(reason: str, number: int | None) -> str:
    which = str(number) if number else "ID"
    return (
        f"This session is unclassified ({reason}): its record waits in the inbox and is "
        "shown to no other session until a person moves it "
        f"(`ondeck session move {which} --side SIDE`; the inbox: "
        "`ondeck session list --status unclassified`)."
    )


def _context_from_server(config: HookConfig, project: str | None) -> str | None:
    """Ask the running server, whose imports and connections are already warm. (A project
    name is `[A-Za-z0-9._-]`: nothing in it needs escaping in a query.)"""
    from ondeck.entrypoints.hook_http import HttpError, request

    query = "format=markdown" + (f"&project={project}" if project else "")
    headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
    try:
        status, found, body = request(
            config.local_url,
            "GET",
            f"/api/v1/context?{query}",
            headers=headers,
            timeout=SERVER_TIMEOUT_S,
        )
    except HttpError:
        return None
    if status != 200 or found.get("x-ondeck-store") != config.store_id:
        return None
    return body[:MAX_STDIN].decode("utf-8", "replace")


def _context_from_database(
    local: Local, config: HookConfig, project: str | None, now: datetime
) -> str:
    from ondeck.db.engine import reading
    from ondeck.services.context import build_context
    from ondeck.services.context_render import to_markdown
    from ondeck.services.sessions import context_warnings

    engine = local.engine()
    with reading(engine) as conn:
        ctx = build_context(
            conn,
            now,
            project,
            zone=config.zone,
            lease_grace=config.lease_grace,
            tick_seconds=config.tick_seconds,
            extra_warnings=context_warnings(conn, now, config),
        )
    return to_markdown(ctx, config.zone)


# --- stop, post-compact, session-end ---------------------------------------------------------


def run_hook(verb: str, stdin: TextIO, stdout: TextIO, db_url: str | None = None) -> int:
    """`ondeck hook stop|post-compact|session-end`: record the event; never fail the session."""
    payload = read_payload(stdin)
    try:
        message = _record(verb, payload, db_url)
    except Exception as exc:  # never fail the session: say what went wrong instead
        message = {"systemMessage": f"ondeck could not record this {verb}: {_one_line(exc)}"}
        if verb == "session-end":
            message.update({"released": [], "owner": _owner(payload)})
    if message:
        stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
    return 0


def _owner(payload: dict[str, Any]) -> str | None:
    value = payload.get("session_id")
    return f"claude:{value.strip()[:190]}" if isinstance(value, str) and value.strip() else None


def _record(verb: str, payload: dict[str, Any], db_url: str | None) -> dict[str, Any] | None:
    from ondeck.core import clock
    from ondeck.core.hook_config import load_hook_config
    from ondeck.services.hook_records import HOOK_KINDS, session_id_of

    kind = HOOK_KINDS[verb]
    if session_id_of(payload) is None:
        sys.stderr.write(f"ondeck: hook {verb}: no session_id on stdin, nothing recorded\n")
        return {"released": [], "owner": None} if kind == "end" else None
    config = load_hook_config(db_url)
    now = clock.now()
    try:
        result = Server(config).send_event(verb, payload, now.isoformat())
    except _NoServer as exc:
        _debug(f"server: {exc}")
    else:
        if kind != "end":
            return None
        return {"released": result.get("released", []), "owner": _owner(payload)}
    return _record_here(kind, payload, config, now)


def _record_here(
    kind: str, payload: dict[str, Any], config: HookConfig, now: datetime
) -> dict[str, Any] | None:
    from ondeck.services.hook_records import changes_of, make_record

    record = make_record(kind, payload, config, now)
    if record is None:
        return None
    local = Local(config)
    try:
        result = local.store(record, now)
        what = {"stop": "last word", "compact": "compaction", "end": "end"}[kind]
        if kind != "end":
            return None if result is not None else {"systemMessage": local.spooled_line(what)}
        out: dict[str, Any] = {
            "released": result["released"] if result else [],
            "owner": _owner(payload),
        }
        if result is None:
            out["systemMessage"] = local.spooled_line(what)
        start = result["session"] if result else _start_in_spool(record, config)
        changes = changes_of(record, start, config, now)
        if changes is not None and local.store(changes, now) is None and result is not None:
            out["systemMessage"] = local.spooled_line("git changes")
        return out
    finally:
        local.close()


def _start_in_spool(end: dict[str, Any], config: HookConfig) -> dict[str, Any] | None:
    """The session's start, when it too waits in the spool (the database was away)."""
    from ondeck.services import spool

    found = spool.find(
        config.spool_dir,
        lambda r: r.get("kind") == "start" and r.get("session") == end["session"],
    )
    if found is None:
        return None
    facts = found.get("facts") or {}
    return {"start_head": facts.get("head"), "git_root": facts.get("git_root")}
