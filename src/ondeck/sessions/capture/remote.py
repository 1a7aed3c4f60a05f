"""Where a hook's record goes in client mode (`ONDECK_SERVER_URL`): the server at that URL,
else the spool. See entrypoints/hooks/verbs.py for the other mode.

The server may run on another machine, so it must not read this machine's paths: the hook
reads git and the marker file itself and makes the whole record (sessions/capture/events.py),
as it does when it stores in the database itself, and sends the finished record (`POST
/api/v1/sessions/records`, with `ONDECK_TOKEN`, the device token). No database, no driver,
no SQLAlchemy or pydantic is imported on the way (tests/cli/test_hook_client.py).

When the server does not take a record (unreachable, too slow, a token it refuses), the
record goes to the spool and the hook says why; the next hook that reaches the server sends
what waits there first, in order, once. A refused token is spooled too: it will not be
accepted later without a person, but a person fixing the token should find the sessions of
the meantime waiting, not lost (the context says so at every session start meanwhile, and
a spool older than ten minutes is a warning of its own).

All requests of one hook share one budget (`SERVER_TIMEOUT_S`): once the server failed to
answer, the hook does not ask it again, so a hook that finds no server ends within it.
"""

from __future__ import annotations

import json
import time

from ondeck.core import clock
from ondeck.sessions.capture import pipeline
from ondeck.sessions.capture.delivery import (
    DRAIN_BUDGET_S,
    OWN_RECORDS_S,
    RECORDS_PATH,
    SERVER_TIMEOUT_S,
    as_sent,
    debug,
    encoded,
    packed,
)
from ondeck.sessions.capture.spool_files import has_waiting

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from ondeck.host.quick_settings import HookConfig


# A request of this process the server did not answer: the mod's line is not asked after it
# (hooks/mod_answer.py).
UNANSWERED: list[str] = []


class TooLarge(Exception):
    """The server refused a body as too large (413): sent again in smaller pieces."""


class ServerRefused(Exception):
    """The server answered, but will not take what was sent (token, or an error of its own)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Unanswered(Exception):
    """The server did not answer: not reachable, too slow, or not an HTTP answer."""


class RemoteServer:
    """The server of client mode; the same face as delivery.Local (`store`,
    `spooled_line`, `close`), so the hooks treat both alike."""

    def __init__(self, config: HookConfig) -> None:
        self.config = config
        self.url = str(config.server_url)
        self.problem = ""  # why the server did not take a record (or a request) last
        self._failed: Exception | None = None  # the server did not answer: not asked again
        self._spool_problem = ""
        # A session start's context: asked with its record, answered with it.
        self._asked: str | None = None
        self._given: str | None = None
        self._until = time.monotonic() + SERVER_TIMEOUT_S
        self._drain_until: float | None = None  # when this hook's drain budget ends
        self._known_records: dict[str, str | None] = {}  # sent or refused by this hook
        # The store this machine's events are captured for, learned from the first server
        # met (kept in the owner-only run directory, host/channel.py), and the store the
        # server said it serves in its last answer: events never land in another store.
        self.known_store: str | None = config.server_store_id
        self.server_store: str | None = None

    # --- requests --------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        store: str | None = None,
    ) -> bytes:
        """The answer's body (status 200); ServerRefused or Unanswered, saying why, otherwise. With
        `store`, the server refuses (409) unless it serves that store."""
        if self._failed is not None:
            raise self._failed
        from ondeck.host.http_client import HttpError, request

        headers = {"Authorization": f"Bearer {self.config.token}"} if self.config.token else {}
        if store is not None:
            headers["X-Ondeck-Store-Expected"] = store
        left = self._until - time.monotonic()
        try:
            if left <= 0:
                raise HttpError(f"no answer within {SERVER_TIMEOUT_S:g} s")
            status, answered, answer = request(
                self.url,
                method,
                path,
                body=None if body is None else body,
                headers=headers,
                timeout=left,
            )
        except HttpError as exc:
            self._failed = Unanswered(f"the server {self.url} did not answer ({exc})")
            UNANSWERED.append(str(exc))
            raise self._failed from None
        self.server_store = answered.get("x-ondeck-store") or self.server_store
        if status == 200:
            return answer
        said = _message_of(answer)
        if status == 413:
            raise TooLarge(f"the server {self.url} refused a body as too large: 413 {said}")
        if status == 409 and store is not None and b"store_mismatch" in answer[:2000]:
            raise ServerRefused(self._other_store(store))
        # Not remembered as a failure: a token that may only read still gets the context.
        if status in (401, 403):
            who = "no token (ONDECK_TOKEN is not set)" if not self.config.token else "its token"
            raise ServerRefused(
                f"the server {self.url} refused {who}: {status} {said}; on the server, "
                "`ondeck token create NAME` makes a device token for ONDECK_TOKEN here"
            )
        raise ServerRefused(f"the server {self.url} answered {status}: {said}", status)

    def _other_store(self, expected: str) -> str:
        now = f" (id {self.server_store})" if self.server_store else ""
        return (
            f"the server {self.url} now serves another database{now} than the one this "
            f"machine's events were captured for (id {expected}), so they wait here; if the "
            f"move was meant, remove {self.config.known_store_file} to send new events there"
        )

    def post_records(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Sent with the store they were captured for (all the same one, or none yet): a
        server serving another refuses them all."""
        stores = {r.get("store") for r in records} - {None}
        assert len(stores) <= 1, "records of two stores in one request"
        return self._postencoded([encoded(r) for r in records], next(iter(stores), None))

    def _postencoded(self, encoded: list[bytes], store: str | None) -> list[dict[str, Any]]:
        # This machine's clock as the records leave: the server tells a clock far from its
        # own, and orders what it stores by its own (rows.clock_offset). BODY_ROOM
        # leaves room for it.
        sent_at = json.dumps(clock.now().isoformat()).encode()
        body = b'{"records":[' + b",".join(encoded) + b'],"sent_at":' + sent_at + b"}"
        asked, self._asked = self._asked, None
        path = f"{RECORDS_PATH}?{asked}" if asked else RECORDS_PATH
        try:
            answer = self.request("POST", path, body, store=store)
        except ServerRefused as exc:
            if not asked or exc.status != 422:
                raise
            # A server that will not take the question (another version's rules) still
            # takes the records: `context` asks for the context on its own, and says why.
            answer = self.request("POST", RECORDS_PATH, body, store=store)
        self._learn()
        try:
            data = json.loads(answer)
            results = data["results"]
        except (ValueError, KeyError, TypeError):
            results = None
        if not isinstance(results, list) or len(results) != len(encoded):
            raise ServerRefused(f"the server {self.url} answered for other records")
        if asked:  # a server older than the question leaves it out: `context` asks again
            given = data.get("context")
            self._given = given if isinstance(given, str) and given else None
        return results

    # --- records ---------------------------------------------------------------------------

    @property
    def spool_dir(self) -> str:
        return self.config.spool_dir

    def store(self, record: dict[str, Any], now: datetime) -> dict[str, Any] | None:
        """`record` through the one way in (capture/pipeline.py: the spool first, then the
        server, then what waits in the spool, for a bounded time): its outcome, or None when
        it waits in the spool (`self.problem` says why)."""
        from ondeck.sessions.capture.events_check import parse_record

        del now  # the record carries its own time; the server's clock is the server's
        if self.known_store is not None:
            record = {**record, "store": self.known_store}
        parse_record(record)  # what the server would refuse is a bug: say so here
        return pipeline.delivered(self, record, self._known_records, f"through {self.url}")

    def put(self, record: dict[str, Any]) -> dict[str, Any]:
        """One record sent (pipeline.Store): Gone or Refused when the server did not take it."""
        try:
            result = self.post_records([as_sent(record)])[0]
        except (ServerRefused, Unanswered, TooLarge) as exc:
            raise pipeline.Gone(str(exc)) from None
        if result.get("outcome") == "rejected":
            raise pipeline.Refused(f"refused by the server: {result.get('reason')}")
        return dict(result)

    def drain(self, known: dict[str, str | None]) -> None:
        """What waits in the spool, for at most DRAIN_BUDGET_S of this hook, in requests
        under the server's body limit (pipeline.Store); the records in `known` are answered
        for, not sent again. The rest waits for the next hook."""
        if not has_waiting(self.config.spool_dir):
            return
        from ondeck.sessions.capture import spool
        from ondeck.sessions.capture.events_check import parse_record

        def apply(batch: list[dict[str, Any]]) -> list[str | None]:
            answers: list[str | None] = []
            # Requests of one store each (in order), under the server's body limit.
            for group in _parts(batch):
                store = group[0].get("store")
                for part in packed([encoded(as_sent(r)) for r in group]):
                    try:
                        answers += self._send_part(part, store)
                    except (ServerRefused, Unanswered) as exc:
                        self._spool_problem = str(exc)
                        if not answers:
                            raise spool.StoreGone(str(exc)) from exc
                        return answers
            return answers

        if self._drain_until is None:  # one budget per hook, however many records it sends
            self._drain_until = time.monotonic() + DRAIN_BUDGET_S
        left = max(self._drain_until - time.monotonic(), OWN_RECORDS_S)
        drained = spool.drain(
            self.config.spool_dir,
            pipeline.answering_known(known, apply),
            parse_record,
            budget_s=left,
        )
        debug(
            f"spool: {drained.applied} sent to {self.url}, {drained.rejected} set aside, "
            f"{drained.left} left {self._spool_problem}".rstrip()
        )

    def _send_part(self, part: list[bytes], store: str | None) -> list[str | None]:
        """One request's records: their answers; refused as too large, sent again in halves
        (a single record the server will not take is set aside, with the reason)."""
        try:
            results = self._postencoded(part, store)
        except TooLarge as exc:
            if len(part) == 1:
                return [str(exc)]
            half = len(part) // 2
            return self._send_part(part[:half], store) + self._send_part(part[half:], store)
        return [r.get("reason") if r.get("outcome") == "rejected" else None for r in results]

    def _learn(self) -> None:
        """The first server met names the store this machine's events are captured for."""
        if self.known_store is None and self.server_store is not None:
            self.config.learned_server_store_id(self.server_store)
            self.known_store = self.server_store

    def waiting(self) -> int:
        from ondeck.sessions.capture import spool

        return spool.status(self.config.spool_dir).waiting

    def spooled_line(self, what: str) -> str:
        from ondeck.core.humanize import counted

        return (
            f"ondeck could not store this session's {what} ({self.problem}); it is kept in the "
            f"spool ({counted(self.waiting(), 'event')} waiting in {self.config.spool_dir}) "
            "and sent "
            "by the next hook that reaches the server."
        )

    def close(self) -> None:
        """Nothing held open (each request has its own connection)."""

    # --- the context -----------------------------------------------------------------------

    def context(self, project: str | None, brief: dict[str, Any]) -> str:
        """The session context as the server gives it (Markdown, with the brief); ServerRefused or
        Unanswered when there is none.

        The working directory is not sent: the server is not to read this machine's paths,
        so the brief says its git drift was not read (host/git.drift would need the
        handoff's HEAD, which only the server knows, and this machine's repository)."""
        given, self._given = self._given, None
        if given is not None:
            return given
        answer = self.request("GET", f"/api/v1/context?{_context_query(project, brief)}")
        return bytes(answer).decode("utf-8", "replace")

    def ask_with_start(self, project: str | None, brief: dict[str, Any]) -> None:
        """The context is asked for with the start's record (one request): the server makes
        it once the session is stored, so it knows the session, and for the side the server
        gave it. `context` then takes it; a server that gave none is asked again there."""
        self._asked = "context=true&" + _context_query(project, brief)

    def unavailable(self, exc: BaseException) -> str:
        """The context when the server gave none: which server, and why."""
        return (
            "# On deck: unavailable\n\n"
            f"ondeck runs as a client here, and {_sentence(str(exc))}. Today's reminders, "
            "due tasks and warnings are unknown; check the server, or `ondeck context`.\n"
        )


def _parts(batch: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The batch in runs of one store each, in order (`packed` then sizes the requests)."""
    parts: list[list[dict[str, Any]]] = []
    for record in batch:
        store = record.get("store")
        if parts and parts[-1][0].get("store") == store:
            parts[-1].append(record)
        else:
            parts.append([record])
    return parts


def _context_query(project: str | None, brief: dict[str, Any]) -> str:
    from ondeck.host.http_client import query_string

    asked: dict[str, str] = {"format": "markdown", "brief": "true"}  # Format.markdown
    if project:
        asked["project"] = project
    for key in ("side", "source", "session"):
        if brief.get(key):
            asked[key] = str(brief[key])
    if brief.get("unclassified"):
        asked["unclassified"] = "true"
    if brief.get("agent") not in (None, "claude-code"):  # the default: not said
        asked["agent"] = str(brief["agent"])
    return query_string(asked)


def _sentence(text: str) -> str:
    return text[:1].lower() + text[1:] if text else "the server gave no context"


def _message_of(answer: bytes) -> str:
    """The one line of an ondeck error answer (`{"error": {"message": …}}`), else its start."""
    text = answer[:2000].decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(data.get("detail"), str):
            text = data["detail"]
    return " ".join(text.split())[:300] or "no reason given"
