"""Claude Code session hooks: what a session is told at its start, what it leaves behind.

    session-start  the session's record opens (or a resume reopens it); prints the context
    stop           the session's last word (every turn)
    post-compact   Claude's own summary of what was compacted
    session-end    the record ends, with what git says the session did; its leases go

No hook ever fails a session: whatever goes wrong, it exits 0 and says what happened (in
the context at the start, on stdout otherwise).

Where an event goes, in this order:

1. the running server of the same database, reached only through its owner-only Unix
   socket (host/channel.py: never the TCP port, where anyone may listen), and only once the
   hook knows its database's id (learned from the database itself, never from a listener;
   the server's `X-Ondeck-Store` must match it): the hook sends the event with its texts
   already scrubbed (`POST /api/v1/sessions/hook-events`, with the hook's own
   classification rules) and the warm server reads git and the marker file, classifies,
   scrubs again and stores it. On this path the hook imports almost nothing: its whole
   process is meant to cost at most 4x `python -c pass`;
2. the database itself: the hook makes the record (sessions/capture/events.py) and stores it
   through the bare driver, and session-start reads its context the same way (no
   SQLAlchemy, no pydantic: at most the cost of importing SQLAlchemy); a new database, or
   one whose schema is behind, goes through SQLAlchemy, which creates or migrates it;
3. the spool (sessions/capture/spool.py), drained by the next hook or jobs tick that reaches
   the store. A record made here (2., and client mode) is written to the spool first and
   only then stored (capture/pipeline.py): a hook killed while the store makes it wait has
   lost nothing. Once stored, the hook drains for at most a second
   (delivery.DRAIN_BUDGET_S), a line at a time, its own lines answered for without being
   stored again: a long outage's spool never keeps a hook from recording itself, nor from
   ending. What is left waits for the next hook or
   jobs tick; the store orders what arrives late by the events' own times.

In client mode (`ONDECK_SERVER_URL`, sessions/capture/remote.py) there is no database here:
the hook makes the record itself (git and the marker file are this machine's, which the
server, perhaps on another machine, must not read), sends it to that server with
`ONDECK_TOKEN`, else spools it; session-start prints the server's context.
"""

from __future__ import annotations

import sys

from ondeck.sessions.capture.agents import CLAUDE_CODE, agent_of
from ondeck.sessions.capture.delivery import (
    SERVER_TIMEOUT_S,
    Local,
    NoServer,
    Server,
    debug,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime
    from typing import Any

    from ondeck.db.plain import Db
    from ondeck.host.quick_settings import HookConfig
    from ondeck.memory.brief import BriefRequest

    # How a start's context is read from the database when no server gives it: the
    # gateway's `hook_context`, which the entry point passes (the context sits above the
    # sessions in the layers, tests/unit/test_imports.py).
    ContextReader = Callable[[Db, HookConfig, datetime, str | None, BriefRequest], str]
    from ondeck.sessions.capture.remote import RemoteServer

# What a hook leaves for after its answer (client mode: a session end's git changes); the
# entry point runs it in a detached child once the answer is out (entrypoints/cli._hook).
AFTER: list[Callable[[], None]] = []


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


# --- session-start -----------------------------------------------------------------------------


def start(
    payload: dict[str, Any], db_url: str | None, read_context: ContextReader
) -> tuple[str, Any]:
    """A session's start recorded (or spooled): the context to give it, and the
    classification the record was given (None when nothing was recorded). Never raises: what
    went wrong is said in the context instead."""
    seen: dict[str, Any] = {}
    try:
        markdown = _start(payload, db_url, seen, read_context)
    except Exception as exc:  # never fail the session: tell it what went wrong instead
        markdown = _unavailable(exc)
    return markdown, seen.get("classification")


def _unavailable(exc: BaseException) -> str:
    from ondeck.core.errors import ConfigError

    settings = isinstance(exc, ConfigError)
    what = "use its settings" if settings else "read its database"
    unknown = (
        "warnings are unknown, and this session is not recorded"
        if settings
        else ("warnings are unknown")
    )
    return (
        "# On deck: unavailable\n\n"
        f"ondeck could not {what} ({_one_line(exc)}). Today's reminders, due tasks and "
        f"{unknown}; check `ondeck context` or the server.\n"
    )


def _start(
    payload: dict[str, Any], db_url: str | None, seen: dict[str, Any], read: ContextReader
) -> str:
    from ondeck.core import clock
    from ondeck.host.quick_settings_read import load_hook_config
    from ondeck.sessions.capture.events import session_id_of

    config = load_hook_config(db_url)
    now = clock.now()
    notes: list[str] = []
    server = Server(config)
    client = _client(config)
    local: Local | RemoteServer = client or Local(config)
    try:
        classification = None
        session_number = None
        markdown = None
        facts: dict[str, Any] | None = None  # the place as the record read it (git)
        if session_id_of(payload) is not None and client is not None:
            # The context is asked for with the start's record: one request.
            def ask(c: dict[str, Any]) -> None:
                brief = _brief_of(payload, config, c, bool(c.get("unclassified")))
                client.ask_with_start(c["project"]["value"], brief)

            classification, session_number, facts = _start_here(
                client, payload, now, notes, meanwhile=ask
            )
        elif session_id_of(payload) is not None:
            try:
                result = server.send_event("session-start", payload, now.isoformat())
                classification = result.get("classification")
                session_number = (result.get("session") or {}).get("id")
                _remember_start(config, payload, result.get("session"))
                context = result.get("context")
                markdown = context if isinstance(context, str) and context else None
            except NoServer as exc:
                debug(f"server: {exc}")
                classification, session_number, facts = _start_here(local, payload, now, notes)
        unclassified = bool(classification and classification.get("unclassified"))
        if classification is None:  # no session id: the context only, scoped by the place
            from ondeck.sessions.capture.events import observe

            facts, found = observe(payload.get("cwd"), config)
            classification = {
                "project": {"value": found.project.value},
                "side": {"value": found.side.value},
                "unclassified": False,
            }
            # Not recorded, so not in the inbox; but its place decides nothing either.
            unclassified = found.unclassified
        seen["classification"] = classification
        if classification.get("unclassified"):
            notes.append(_unclassified_note(classification.get("reason", ""), session_number))
        project = (classification.get("project") or {}).get("value")
        brief = _brief_of(payload, config, classification, unclassified)
        source = config.owner_socket
        if client is not None:
            markdown = _context_from_client(client, project, brief)  # says where from
            source = ""
        if markdown is None and server.ok:
            markdown = _context_from_server(config, server.expected(), project, brief)
        if markdown is None:
            source = "the database"
            try:
                assert isinstance(local, Local)  # client mode has its context by now
                markdown = _context_from_database(local, config, project, now, brief, facts, read)
            except Exception as exc:  # what was recorded (or spooled) is still worth saying
                markdown = _unavailable(exc)
        if source:
            debug(f"session context from {source}")
    finally:
        local.close()
    return _with_notes(markdown, notes)


def _client(config: HookConfig) -> RemoteServer | None:
    """Client mode (`ONDECK_SERVER_URL`): the server there takes the records, no database."""
    if not config.server_url:
        return None
    from ondeck.sessions.capture.remote import RemoteServer

    return RemoteServer(config)


def _context_from_client(client: RemoteServer, project: str | None, brief: dict[str, Any]) -> str:
    from ondeck.sessions.capture.remote import ServerRefused, Unanswered

    try:
        markdown = client.context(project, brief)
    except (ServerRefused, Unanswered) as exc:
        return client.unavailable(exc)
    debug(f"session context from {client.url}")
    return markdown


def _brief_of(
    payload: dict[str, Any], config: HookConfig, classification: dict[str, Any], unclassified: bool
) -> dict[str, Any]:
    from ondeck.sessions.capture.events import brief_fields

    return brief_fields(
        payload, classification, sides_on=bool(config.sides), unclassified=unclassified
    )


def _with_notes(markdown: str, notes: list[str]) -> str:
    """The context and the hook's notes about this session, within the hook's 9,000
    characters (the context left them their room: memory/brief_render.HOOK_NOTES_ROOM)."""
    if not notes:
        return markdown
    from ondeck.memory.brief_render import HOOK_OUTPUT_MAX, HOOK_WRAPPER, total

    lines = [*markdown.rstrip("\n").split("\n"), "", "## This session"]
    room = HOOK_OUTPUT_MAX - HOOK_WRAPPER - total(lines)
    for note in notes:
        line = f"- {note}"
        while line and total([line]) > room:
            line = line[: max(len(line) // 2, 0)].rstrip() + "…" if len(line) > 40 else ""
        if not line:
            break
        lines.append(line)
        room -= total([line])
    return "\n".join(lines) + "\n"


def _start_here(
    local: Local | RemoteServer,
    payload: dict[str, Any],
    now: datetime,
    notes: list[str],
    meanwhile: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[dict[str, Any] | None, int | None, dict[str, Any] | None]:
    """The start recorded here: its classification, its number once stored, and the facts
    of its place (cwd, git) the record read. `meanwhile` is given the classification as
    soon as it is known, before the rest of the record is made."""
    from ondeck.sessions.capture.events import make_record

    try:
        record = make_record("start", payload, local.config, now, classified=meanwhile)
    except Exception as exc:  # the context is still worth giving
        notes.append(f"ondeck could not record this session's start ({_one_line(exc)}).")
        return None, None, None
    if record is None:
        return None, None, None
    facts = record["facts"]
    _remember_start(
        local.config, payload, {"start_head": facts.get("head"), "at": record["at"], **facts}
    )
    try:
        result = local.store(record, now)
    except Exception as exc:
        notes.append(f"ondeck could not record this session's start ({_one_line(exc)}).")
        return record["classification"], None, facts
    if result is None:
        notes.append(local.spooled_line("start"))
        return record["classification"], None, facts
    classification = record["classification"]
    if result.get("warning"):
        notes.append(f"ondeck: {result['warning']}.")
    stored = result.get("session") or {}
    if stored.get("unclassified") and not classification.get("unclassified"):
        # The server did not know the side this machine gave it: its inbox, not that side.
        nowhere = {"value": None}
        reason = stored.get("reason") or "the server does not know this session's side"
        classification = {
            "side": nowhere,
            "project": nowhere,
            "unclassified": True,
            "reason": reason,
        }
    return classification, result["session"]["id"], facts


def _unclassified_note(reason: str, number: int | None) -> str:
    which = str(number) if number else "ID"
    return (
        f"This session is unclassified ({reason}): its record waits in the inbox and is "
        "shown to no other session until a person moves it "
        f"(`ondeck session move {which} --side SIDE`; the inbox: "
        "`ondeck session list --status unclassified`)."
    )


def _context_from_server(
    config: HookConfig, expected: str, project: str | None, brief: dict[str, Any]
) -> str | None:
    """Ask the running server, whose imports and connections are already warm."""
    import urllib.parse

    from ondeck.host.http_client import HttpError, request

    asked: dict[str, Any] = {"format": "markdown", "brief": "true"}  # Format.markdown
    if project:
        asked["project"] = project
    for key in ("side", "source", "session", "cwd"):
        if brief.get(key):
            asked[key] = brief[key]
    if brief.get("unclassified"):
        asked["unclassified"] = "true"
    if brief.get("agent") not in (None, "claude-code"):  # the default: not said
        asked["agent"] = brief["agent"]
    query = urllib.parse.urlencode(asked)
    headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
    try:
        status, found, body = request(
            config.local_url,
            "GET",
            f"/api/v1/context?{query}",
            headers=headers,
            timeout=SERVER_TIMEOUT_S,
            owner_socket=config.owner_socket,
        )
    except HttpError:
        return None
    if status != 200 or found.get("x-ondeck-store") != expected:
        return None
    from ondeck.sessions.capture.payload import MAX_STDIN

    return body[:MAX_STDIN].decode("utf-8", "replace")


def _context_from_database(
    local: Local,
    config: HookConfig,
    project: str | None,
    now: datetime,
    brief: dict[str, Any],
    facts: dict[str, Any] | None,
    hook_context: ContextReader,
) -> str:
    from ondeck.memory.brief import BriefRequest
    from ondeck.sessions.capture.events import repo_of

    request = BriefRequest(**brief, repo=repo_of(facts, brief["cwd"]))
    return local.read(lambda db: hook_context(db, config, now, project, request))


# --- stop, post-compact, session-end ---------------------------------------------------------


def record(verb: str, payload: dict[str, Any], db_url: str | None = None) -> dict[str, Any] | None:
    """`stop`, `post-compact` or `session-end` recorded (or spooled): the hook's answer to
    its agent (a systemMessage at most). Never raises: what went wrong is in the answer."""
    try:
        return _record(verb, payload, db_url)
    except Exception as exc:  # never fail the session: say what went wrong instead
        return {"systemMessage": f"ondeck could not record this {verb}: {_one_line(exc)}"}


def _record(verb: str, payload: dict[str, Any], db_url: str | None) -> dict[str, Any] | None:
    from ondeck.core import clock
    from ondeck.host.quick_settings_read import load_hook_config
    from ondeck.sessions.capture.events import HOOK_KINDS, session_id_of

    kind = HOOK_KINDS[verb]
    if session_id_of(payload) is None:
        sys.stderr.write(f"ondeck: hook {verb}: no session_id on stdin, nothing recorded\n")
        return None
    config = load_hook_config(db_url)
    now = clock.now()
    last = None
    if kind == "end" and agent_of(payload) == CLAUDE_CODE:
        # The last turn's answer, in case Claude Code cancelled its Stop (the others wait
        # for theirs, and their transcripts are not Claude Code's).
        from ondeck.sessions.capture.transcript_tail import last_message

        last = last_message(payload)
    if config.server_url:  # client mode: the record is made here, then sent (client_mode.py)
        return _record_here(kind, payload, config, now, last)
    try:
        Server(config).send_event(verb, payload, now.isoformat(), last=last)
    except NoServer as exc:
        debug(f"server: {exc}")
    else:
        if kind == "end":
            _forget_start(config, payload)
        return None
    return _record_here(kind, payload, config, now, last)


def _remember_start(config: HookConfig, payload: dict[str, Any], start: Any) -> None:
    """Keep where the session started in git, for an end that cannot reach the store."""
    from ondeck.sessions.capture import start_commits
    from ondeck.sessions.capture.events import session_id_of

    session = session_id_of(payload)
    if session is None or not isinstance(start, dict):
        return
    if start.get("start_head") and start.get("capture", True):
        start_commits.remember(
            config.data_dir,
            session,
            start.get("start_head"),
            start.get("git_root"),
            start.get("started_at") or start.get("at"),
        )


def _forget_start(config: HookConfig, payload: dict[str, Any]) -> None:
    from ondeck.sessions.capture import start_commits
    from ondeck.sessions.capture.events import session_id_of

    session = session_id_of(payload)
    if session is not None:
        start_commits.forget(config.data_dir, session)


def _record_here(
    kind: str,
    payload: dict[str, Any],
    config: HookConfig,
    now: datetime,
    last: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The record made here, stored in the database, or in client mode sent to the server
    (either way, else spooled)."""
    from ondeck.sessions.capture.events import make_record
    from ondeck.sessions.capture.git_changes import changes_of

    record = make_record(kind, payload, config, now, last=last)
    if record is None:
        return None
    local = _client(config) or Local(config)
    try:
        result = local.store(record, now)
        what = {"stop": "last word", "compact": "compaction", "end": "end"}[kind]
        warning = result.get("warning") if result else None
        if kind != "end":
            if result is None:
                return {"systemMessage": local.spooled_line(what)}
            return {"systemMessage": f"ondeck: {warning}."} if warning else None
        # Claude Code reads only its own keys here (a SessionEnd hook's output is a
        # systemMessage at most); which leases the end released is in the session's events.
        out: dict[str, Any] = {}
        if result is None:
            out["systemMessage"] = local.spooled_line(what)
        elif warning:
            out["systemMessage"] = f"ondeck: {warning}."
        from ondeck.sessions.capture import start_commits

        stored = result["session"] if result else None
        start = start_commits.known(config.data_dir, config.spool_dir, record["session"], stored)
        if result is not None and not isinstance(local, Local):
            # Client mode: the commits and files go after the answer, as the server path
            # reads them after answering (a session's end waits for neither).
            client = local

            def send_changes() -> None:
                changes = changes_of(record, start, config, now)
                if changes is not None:
                    client.store(changes, now)  # else spooled, for the next hook
                _forget_start(config, payload)

            AFTER.append(send_changes)
            return out or None
        changes = changes_of(record, start, config, now)
        _forget_start(config, payload)
        if changes is not None and local.store(changes, now) is None and result is not None:
            out["systemMessage"] = local.spooled_line("git changes")
        return out or None
    finally:
        local.close()
