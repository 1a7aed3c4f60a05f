"""Where a hook's record goes: the running server of the same database (`Server`), else the
database itself or the spool (`Local`). See entrypoints/hooks/verbs.py for the order and why.

Imported by every hook: `Server` needs nothing beyond `json`, `os` and ondeck's small HTTP
client; `Local` imports what it uses when it is used.
"""

from __future__ import annotations

import json

from ondeck.core.http_limits import MAX_BODY_BYTES
from ondeck.sessions.capture import pipeline
from ondeck.sessions.capture.pipeline import debug as debug
from ondeck.sessions.capture.spool_files import has_waiting

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime
    from typing import Any, TypeVar

    from ondeck.db.plain import Db
    from ondeck.host.quick_settings import HookConfig

    T = TypeVar("T")

# Set by the Claude Code mod on the `ondeck hook` it hands an event to, and by nothing else:
# the query of its status line (`session=…`). In client mode the mod holds no token (nothing
# of it in the plugin's settings, argv or files another user might read); the hook, which
# has it, asks for the line (and the brief) itself and adds it to its answer (mod_answer.py).
MOD_STATUS = "ONDECK_MOD_STATUS"
# Set by the mod in local mode on the `ondeck hook` it hands an event to: the hook adds the
# id of its database (as it learned it from the database itself) to its answer, and the mod
# sends it with each event over the owner socket (`X-Ondeck-Store-Expected`): a server
# serving another database refuses them (409) instead of filing half a session there.
MOD_STORE = "ONDECK_MOD_STORE"

SERVER_TIMEOUT_S = 3.0
# How long a hook drains the spool once its own event is stored; what is left waits for the
# next hook or jobs tick (a hook must end: Claude Code may kill a slow one).
DRAIN_BUDGET_S = 1.0
# What a drain is given at least, once the budget is spent, to take a hook's own records
# (written to the spool before they were stored) out of it.
OWN_RECORDS_S = 0.2
RECORDS_PATH = "/api/v1/sessions/records"
EVENTS_PATH = "/api/v1/sessions/hook-events"
BATCH = 100  # records per request when the spool drains (the route takes 500)
# A request's body stays under the server's limit (core/http_limits.py), with room for what
# wraps the records.
BODY_ROOM = MAX_BODY_BYTES - 1024


class NoServer(Exception):
    """No server of the same database takes the event: the hook makes the record itself."""


class DatabaseGone(Exception):
    """Neither can the database: the record goes to the spool."""


class ContentRefused(Exception):
    """The database refuses the record for its own content: it is set aside, not retried."""


# --- 1. the server ---------------------------------------------------------------------------


class Server:
    """This machine's ondeck server, if it runs and serves the same database."""

    def __init__(self, config: HookConfig) -> None:
        self.config = config
        self.ok: bool | None = None  # None: not asked yet
        self._expected: str | None = None

    def expected(self) -> str:
        """The id of the hook's database, learned from the database itself (never from a
        listener); NoServer before anything is sent when it is not known yet: the hook then
        stores in the database and learns it (Local)."""
        if self._expected is None:
            self._expected = self.config.store_id
            if self._expected is None:
                self.ok = False
                raise NoServer("the id of this database is not known here yet")
        return self._expected

    def headers(self) -> dict[str, str]:
        headers = {"X-Ondeck-Store-Expected": self.expected()}
        if self.config.token:
            headers["Authorization"] = f"Bearer {self.config.token}"
        return headers

    def post(self, path: str, body: dict[str, Any] | bytes, count: int) -> list[dict[str, Any]]:
        """POST and the `results` (one per item sent); NoServer when it is not usable."""
        if self.ok is False:
            raise NoServer("not usable")
        from ondeck.host.http_client import HttpError, request

        sent_headers = self.headers()  # (NoServer before connecting: no id to expect)
        try:
            status, headers, answer = request(
                self.config.local_url,
                "POST",
                path,
                body=body
                if isinstance(body, bytes)
                else json.dumps(body, ensure_ascii=False).encode(),
                headers=sent_headers,
                timeout=SERVER_TIMEOUT_S,
                owner_socket=self.config.owner_socket,
            )
        except HttpError as exc:
            self.ok = False
            raise NoServer(f"not reachable ({exc})") from None
        if headers.get("x-ondeck-store") != self.expected():
            self.ok = False
            raise NoServer("it serves another database")
        if status != 200:
            self.ok = False
            raise NoServer(f"answered {status}: {answer[:200].decode('utf-8', 'replace')}")
        try:
            results = json.loads(answer)["results"]
        except (ValueError, KeyError, TypeError):
            self.ok = False
            raise NoServer("answered something else than results") from None
        if not isinstance(results, list) or len(results) != count:
            self.ok = False
            raise NoServer("answered for other events")
        self.ok = True
        return results

    def send_event(
        self, verb: str, payload: dict[str, Any], at: str, *, last: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The event as received: the server makes and stores its record(s); then what
        waits in the spool, for a bounded time. `last`: an end's transcript's last answer,
        read here (the server reads no file a request names)."""
        from ondeck.sessions.capture.events import transcript_size, trim

        event: dict[str, Any] = {
            "hook": verb,
            "payload": trim(payload),
            "at": at,
            "transcript_size": transcript_size(payload),
        }
        if last is not None:
            event["last_message"] = last
        if verb == "session-start":  # and its context in the same answer: one round trip
            event["context"] = True
        body = {"events": [event], "rules": self.config.rules()}
        result = self.post(EVENTS_PATH, body, 1)[0]
        if result.get("outcome") == "declined":  # the server cannot read this place
            raise NoServer(f"declined: {result.get('reason')}")
        debug(f"{verb} stored through {self.config.owner_socket}")
        try:
            self.drain_spool()
        except Exception as exc:  # its own event is stored: the spool waits for another
            debug(f"spool: not drained ({exc})")
        return result

    def drain_spool(self) -> None:
        """What waits in the spool, sent for at most DRAIN_BUDGET_S (rare: two stats when
        nothing waits); what is left waits for the next hook or jobs tick."""
        if not has_waiting(self.config.spool_dir):
            return
        from ondeck.sessions.capture import spool
        from ondeck.sessions.capture.events_check import parse_record

        def apply(batch: list[dict[str, Any]]) -> list[str | None]:
            answers: list[str | None] = []
            for part in packed([encoded(as_sent(r)) for r in batch]):
                body = b'{"records":[' + b",".join(part) + b"]}"
                try:
                    results = self.post(RECORDS_PATH, body, len(part))
                except NoServer as exc:
                    if not answers:
                        raise spool.StoreGone(str(exc)) from exc
                    return answers
                answers += [
                    r.get("reason") if r.get("outcome") == "rejected" else None for r in results
                ]
            return answers

        drained = spool.drain(self.config.spool_dir, apply, parse_record, budget_s=DRAIN_BUDGET_S)
        debug(f"spool: {drained.applied} sent, {drained.rejected} set aside, {drained.left} left")


def as_sent(record: dict[str, Any]) -> dict[str, Any]:
    """A checked record back in the form it travels in (instants as ISO text)."""
    at = record["at"]
    return {**record, "at": at.isoformat() if hasattr(at, "isoformat") else at}


def encoded(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()


def packed(items: list[bytes]) -> list[list[bytes]]:
    """Records in requests of at most BATCH records and BODY_ROOM bytes each, in order."""
    parts: list[list[bytes]] = [[]]
    size = 0
    for item in items:
        if parts[-1] and (len(parts[-1]) >= BATCH or size + len(item) + 1 > BODY_ROOM):
            parts.append([])
            size = 0
        parts[-1].append(item)
        size += len(item) + 1
    return [p for p in parts if p]


# --- 2. the database, 3. the spool ---------------------------------------------------------


class Local:
    """Records made here, stored in the database (the bare driver where it can) or the
    spool, and session-start's context read from it; remembers which way worked, so an
    end's git changes and a start's context go the same way."""

    def __init__(self, config: HookConfig, *, bare: bool = True) -> None:
        self.config = config
        self.problem = ""
        self._bare: Any = None if bare else False  # False: straight to SQLAlchemy
        self._engine: Any = None
        self._until: float | None = None  # when this hook's drain budget ends
        self._now: datetime | None = None  # the instant of the record being stored
        self._checked: tuple[dict[str, Any] | None, dict[str, Any]] = (None, {})
        self._known_records: dict[str, str | None] = {}  # stored or refused by this hook
        self._known: str | None = None  # the store id this process last remembered

    @property
    def spool_dir(self) -> str:
        return self.config.spool_dir

    def store(self, record: dict[str, Any], now: datetime) -> dict[str, Any] | None:
        """`record` through the one way in (capture/pipeline.py: the spool first, then the
        database, then what waits in the spool, for a bounded time): its outcome, or None
        when it waits in the spool (`self.problem` says why). A record the database refuses
        for its content is set aside (rejected.jsonl) and said: ValueError."""
        from ondeck.sessions.capture.events_check import parse_record

        self._now = now
        # What the store would refuse is a bug: said here, before anything is written.
        self._checked = (record, parse_record(record))
        return pipeline.delivered(self, record, self._known_records, "in the database")

    def put(self, record: dict[str, Any]) -> dict[str, Any]:
        """One record stored (pipeline.Store): Gone or Refused when it is not."""
        from ondeck.sessions.capture.events_check import parse_record

        made, checked = self._checked
        assert self._now is not None, "put before store"
        try:
            return self._apply(checked if made is record else parse_record(record), self._now)
        except DatabaseGone as exc:
            raise pipeline.Gone(str(exc)) from None
        except ContentRefused as exc:
            raise pipeline.Refused(f"refused by the database: {exc}") from None

    def waiting(self) -> int:
        from ondeck.sessions.capture import spool

        return spool.status(self.config.spool_dir).waiting

    def close(self) -> None:
        if self._bare:
            self._bare.close()
        if self._engine is not None:
            self._engine.dispose()

    def drain(self, known: dict[str, str | None]) -> None:
        """What waits in the spool, in order, for what is left of this hook's
        DRAIN_BUDGET_S (pipeline.Store); the records in `known` are answered for, not
        stored again. The rest waits for the next hook or jobs tick."""
        from ondeck.sessions.capture import spool
        from ondeck.sessions.capture.events_check import parse_record

        if not spool.has_waiting(self.config.spool_dir):
            return
        import time

        if self._until is None:  # one budget per hook, however many records it stores
            self._until = time.monotonic() + DRAIN_BUDGET_S
        until = self._until
        now = self._now
        assert now is not None, "drain before store"

        def apply(batch: list[dict[str, Any]]) -> list[str | None]:
            answers: list[str | None] = []
            for record in batch:
                if answers and time.monotonic() >= until:
                    return answers  # the budget is spent: the rest waits, in order
                try:
                    self._apply(record, now)
                except ContentRefused as exc:  # its own content: set aside, the rest goes on
                    answers.append(f"refused by the database: {exc}")
                    continue
                except DatabaseGone as exc:
                    if not answers:
                        raise spool.StoreGone(str(exc)) from exc
                    return answers
                answers.append(None)
            return answers

        # Its own records are in the spool too (written first): a little time to take them
        # out even when the budget went on what waited before them.
        left = max(until - time.monotonic(), OWN_RECORDS_S)
        drained = spool.drain(
            self.config.spool_dir,
            pipeline.answering_known(known, apply),
            parse_record,
            budget_s=left,
        )
        why = drained.why or ("another process drains it" if drained.busy else "")
        debug(f"spool: {drained.applied} stored, {drained.rejected} set aside, {drained.left} left")
        if why:
            debug(f"spool: {why}")

    def _apply(self, record: dict[str, Any], now: datetime) -> dict[str, Any]:
        from ondeck.db.bare import RecordRefused, SchemaBehind, StoreUnavailable, open_bare

        if self._engine is None:
            try:
                if self._bare is None:
                    self._bare = open_bare(self.config.url) or False
                if self._bare:
                    return self._apply_bare(record, now)
            except StoreUnavailable as exc:
                raise DatabaseGone(f"database unavailable: {exc}") from None
            except RecordRefused as exc:
                raise ContentRefused(str(exc)) from None
            except SchemaBehind:
                debug("database schema behind: migrating it first")
        return self._apply_sqlalchemy(record, now)

    def read(self, reader: Callable[[Db], T]) -> T:
        """`reader` run in a read transaction: on the bare driver when the database is
        there at the current revision, else on SQLAlchemy, which creates or migrates it
        first (a database at an older revision says nothing: it is brought up to date)."""
        from ondeck.db.bare import SchemaBehind, open_bare

        if self._engine is None:
            if self._bare is None:
                self._bare = open_bare(self.config.url) or False
            if self._bare:
                try:
                    with self._bare.reading() as db:
                        db.check_revision()
                        return reader(db)
                except SchemaBehind:
                    debug("database schema behind: migrating it first")
        from ondeck.db.engine import reading
        from ondeck.db.plain import as_db

        with reading(self.engine()) as conn:
            return reader(as_db(conn))

    def _apply_bare(self, record: dict[str, Any], now: datetime) -> dict[str, Any]:
        from ondeck.sessions import rows as session_rows
        from ondeck.system import store_id as store_identity

        with self._bare.transaction() as db:
            applied = session_rows.apply(db, record, now, grace=self.config.session_grace)
            self._learned(store_identity.ensure(db, now))
            held = session_rows.held_leases(db, record["session"]) if applied["ended"] else []
        released: list[int] = []
        if held:  # rare: only then is SQLAlchemy worth its import
            released = self._release(record, now)
        return session_rows.outcome(applied, record, released)

    def _release(self, record: dict[str, Any], now: datetime) -> list[int]:
        from ondeck.db.engine import writing
        from ondeck.sessions.intake import release_at_end

        with writing(self.engine()) as conn:
            return release_at_end(conn, now, record)

    def engine(self) -> Any:
        """The SQLAlchemy engine: a new database or one whose schema is behind."""
        if self._engine is None:
            from ondeck.core.errors import SchemaUnknown, Unavailable
            from ondeck.db import open_database

            try:
                self._engine = open_database(self.config.url)
            except Unavailable as exc:
                raise DatabaseGone(str(exc)) from None
            except SchemaUnknown as exc:  # a newer ondeck's: the record waits for a current one
                raise DatabaseGone(f"{exc}; nothing is written into it") from None
        return self._engine

    def _apply_sqlalchemy(self, record: dict[str, Any], now: datetime) -> dict[str, Any]:
        from sqlalchemy.exc import DBAPIError

        from ondeck.core.errors import Unavailable
        from ondeck.db.engine import writing
        from ondeck.db.plain import as_db
        from ondeck.db.refusals import is_content
        from ondeck.sessions.intake import apply_record
        from ondeck.system import store_id as store_identity

        try:
            with writing(self.engine()) as conn:
                result = apply_record(conn, now, record, grace=self.config.session_grace)
                self._learned(store_identity.ensure(as_db(conn), now))
                return result
        except Unavailable as exc:
            raise DatabaseGone(str(exc)) from None
        except DBAPIError as exc:
            reason = " ".join(str(exc.orig or exc).split())[:300]
            if exc.orig is not None and is_content(exc.orig):
                raise ContentRefused(reason) from None
            # Any other refusal by the store: the record waits for one that takes it.
            raise DatabaseGone(f"database refused it: {reason}") from None

    def _learned(self, store_id: str) -> None:
        """The database's own id, read where the record was stored: the next hooks expect
        it of the server (Server.expected)."""
        if store_id != self._known:
            self.config.learned_store_id(store_id)
            self._known = store_id

    def spooled_line(self, what: str) -> str:
        from ondeck.core.humanize import counted

        return (
            f"ondeck could not store this session's {what} ({self.problem}); it is kept in the "
            f"spool ({counted(self.waiting(), 'event')} waiting in {self.config.spool_dir}) "
            "and stored "
            "by the next hook or jobs tick that reaches the database."
        )
