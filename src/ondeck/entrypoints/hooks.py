"""Claude Code session hooks: what a session is told at its start, what it leaves behind.

    session-start  the session's record opens (or a resume reopens it); prints the context
    stop           the session's last word (every turn)
    post-compact   Claude's own summary of what was compacted
    session-end    the record ends, with what git says the session did; its leases go

No hook ever fails a session: whatever goes wrong, it exits 0 and says what happened (in
the context at the start, on stdout otherwise). Each record goes, in this order, to the
running server of the same database (it is warm: the hook only sends), else to the database
itself, else to the spool (`services/spool.py`), drained by the next hook or jobs tick that
reaches the store; whatever waits in the spool goes first.

These run at every turn (Stop) and within Claude Code's 1.5 s for SessionEnd, so they import
only what they need: no Typer, no web framework, no MCP, no pydantic (core/hook_config.py),
and no SQLAlchemy either on their way to a server or, for all but session-start, to the
database (services/session_store.py runs its statements on the bare driver).
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from datetime import datetime

    from ondeck.core.hook_config import HookConfig
    from ondeck.services.classify import Classification

MAX_STDIN = 1024 * 1024
SERVER_TIMEOUT_S = 3.0
RECORDS_PATH = "/api/v1/sessions/records"


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


# --- what the hook sees ----------------------------------------------------------------------


def observe(cwd: Any, config: HookConfig) -> tuple[dict[str, Any], Classification]:
    """The facts of the working directory (marker file, git) and their classification."""
    from ondeck.core.git import Deadline, read_repo
    from ondeck.services.classify import Facts, Rules, classify, read_marker, strip_credentials

    place = cwd if isinstance(cwd, str) and cwd and "\x00" not in cwd else None
    repo = read_repo(place, Deadline(), remotes=bool(config.remotes))
    facts = Facts(
        cwd=place,
        marker=read_marker(place),
        git_root=repo.root,
        branch=repo.branch,
        head=repo.head,
        remotes={name: strip_credentials(url) for name, url in repo.remotes.items()},
    )
    shown = {"cwd": place, "git_root": repo.root, "branch": repo.branch, "head": repo.head}
    return shown, classify(facts, Rules.of(config))


def make_record(
    kind: str, payload: dict[str, Any], config: HookConfig, now: datetime
) -> dict[str, Any] | None:
    from ondeck.services.hook_records import new_record, session_id_of

    if session_id_of(payload) is None:
        return None
    facts, classification = observe(payload.get("cwd"), config)
    return new_record(kind, payload, at=now, facts=facts, classification=classification)


# --- where records go ------------------------------------------------------------------------


class Delivery:
    """Sends records to the server, else the database, else the spool; remembers which
    worked, so a hook's second record (the end's git changes) goes the same way."""

    def __init__(self, config: HookConfig, *, use_server: bool = True) -> None:
        self.config = config
        self.server_ok: bool | None = None if use_server else False
        self.via = ""
        self.problem = ""
        self._bare: Any = None
        self._engine: Any = None

    # -- public ---------------------------------------------------------------------------

    def send(self, record: dict[str, Any], now: datetime) -> dict[str, Any] | None:
        """Store `record` (after whatever waits in the spool); its outcome, or None when it
        was spooled (`self.problem` says why)."""
        from ondeck.services import spool
        from ondeck.services.hook_records import parse_record

        checked = parse_record(record)  # what the store would refuse is a bug: say so here
        if self.server_ok is not False:
            try:
                self._drain(spool, self._post)
                result = self._post([record])[0]
                self.via = self.config.local_url
                _debug(f"{record['kind']} stored through {self.via}")
                return result
            except (_NoServer, _Unreachable) as exc:
                self.server_ok = False
                _debug(f"server: {exc}")
        try:
            self._drain(spool, lambda batch: self._apply_here(batch, now))
            result = self._apply_here([checked], now, checked=True)[0]
            self.via = "the database"
            _debug(f"{record['kind']} stored in {self.via}")
            return result
        except _Unreachable as exc:
            self.problem = str(exc)
        spool.append(self.config.spool_dir, record)
        self.via = "the spool"
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

    # -- the spool first ------------------------------------------------------------------

    def _drain(self, spool: Any, apply: Any) -> None:
        from ondeck.services.hook_records import parse_record

        if not spool.has_waiting(self.config.spool_dir):
            return

        def batch_apply(batch: list[dict[str, Any]]) -> list[str | None]:
            try:
                results = apply([_as_sent(r) for r in batch])
            except (_NoServer, _Unreachable) as exc:
                raise spool.Unreachable(str(exc)) from exc
            return [r.get("reason") if r.get("outcome") == "rejected" else None for r in results]

        drained = spool.drain(self.config.spool_dir, batch_apply, parse_record)
        if drained.left and not drained.busy:
            # The store went away while draining: what is newer must wait behind it.
            raise _Unreachable("the store went away while the spool drained")
        if drained.busy:
            raise _Unreachable("another process is draining the spool")

    # -- the server -----------------------------------------------------------------------

    def _post(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from ondeck.entrypoints.hook_http import HttpError, request

        body = json.dumps({"records": records}, ensure_ascii=False).encode()
        try:
            status, headers, answer = request(
                self.config.local_url,
                "POST",
                RECORDS_PATH,
                body=body,
                headers=_server_headers(self.config),
                timeout=SERVER_TIMEOUT_S,
            )
        except HttpError as exc:
            raise _NoServer(f"not reachable ({exc})") from None
        if headers.get("x-ondeck-store") != self.config.store_id:
            raise _NoServer("it serves another database")
        if status != 200:
            raise _NoServer(f"answered {status}")
        try:
            results = json.loads(answer)["results"]
        except (ValueError, KeyError, TypeError):
            raise _NoServer("answered something else than results") from None
        if not isinstance(results, list) or len(results) != len(records):
            raise _NoServer("answered for other records")
        self.server_ok = True
        return results

    # -- the database ---------------------------------------------------------------------

    def _apply_here(
        self, records: list[dict[str, Any]], now: datetime, *, checked: bool = False
    ) -> list[dict[str, Any]]:
        from ondeck.services.hook_records import parse_record

        results = []
        for record in records:
            if not checked:
                try:
                    record = parse_record(record)
                except ValueError as exc:
                    results.append({"outcome": "rejected", "reason": str(exc)})
                    continue
            results.append(self._apply_one(record, now))
        return results

    def _apply_one(self, record: dict[str, Any], now: datetime) -> dict[str, Any]:
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

        with writing(self._sqlalchemy()) as conn:
            return release_held_by(
                conn,
                now,
                owner=f"{OWNER_PREFIX}{record['session'][:190]}",
                actor=f"hook:{record['session'][:60]}",
                reason=record.get("reason"),
            )

    def _sqlalchemy(self) -> Any:
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
            with writing(self._sqlalchemy()) as conn:
                return apply_record(conn, now, record)
        except Unavailable as exc:
            raise _Unreachable(str(exc)) from None

    def engine(self) -> Any:
        """The SQLAlchemy engine (session-start's context needs it anyway)."""
        return self._sqlalchemy()


class _NoServer(Exception):
    pass


class _Unreachable(Exception):
    pass


def _as_sent(record: dict[str, Any]) -> dict[str, Any]:
    """A checked record back in the form it travels in (instants as ISO text)."""
    out = dict(record)
    out["at"] = record["at"].isoformat() if hasattr(record["at"], "isoformat") else record["at"]
    return out


def _server_headers(config: HookConfig) -> dict[str, str]:
    headers = {"X-Ondeck-Store-Expected": config.store_id}
    if config.token:
        headers["Authorization"] = f"Bearer {config.token}"
    return headers


def _spooled_line(delivery: Delivery, what: str) -> str:
    return (
        f"ondeck could not store this session's {what} ({delivery.problem}); it is kept in "
        f"the spool ({delivery.waiting()} event(s) waiting in {delivery.config.spool_dir}) "
        "and stored by the next hook or jobs tick that reaches the database."
    )


# --- session-start -----------------------------------------------------------------------------


def session_start(stdin: TextIO, stdout: TextIO, db_url: str | None = None) -> int:
    payload = read_payload(stdin)
    try:
        markdown = _start(payload, db_url)
    except Exception as exc:  # never fail the session: tell it what went wrong instead
        markdown = (
            "# On deck: unavailable\n\n"
            f"ondeck could not read its database ({_one_line(exc)}). Today's reminders, due "
            "tasks and warnings are unknown; check `ondeck context` or the server.\n"
        )
    stdout.write(json.dumps(hook_output(markdown), ensure_ascii=False) + "\n")
    return 0


def _start(payload: dict[str, Any], db_url: str | None) -> str:
    from ondeck.core import clock
    from ondeck.core.hook_config import load_hook_config

    config = load_hook_config(db_url)
    now = clock.now()
    notes: list[str] = []
    project = None
    delivery = Delivery(config)
    try:
        record = None
        try:
            record = make_record("start", payload, config, now)
        except Exception as exc:  # the context is still worth giving
            notes.append(f"ondeck could not record this session's start ({_one_line(exc)}).")
        if record is not None:
            classification = record["classification"]
            project = classification["project"]["value"]
            result = _send_start(delivery, record, now, notes)
            if classification["unclassified"]:
                number = result["session"]["id"] if result else None
                notes.append(_unclassified_note(classification["reason"], number))
        else:
            _, classification_ = observe(payload.get("cwd"), config)
            project = classification_.project.value
        markdown = None
        if delivery.server_ok is not False:
            markdown = _context_from_server(config, project)
        source = config.local_url
        if markdown is None:
            markdown, source = (
                _context_from_database(delivery, config, project, now),
                "the database",
            )
        _debug(f"session context from {source}")
    finally:
        delivery.close()
    if notes:
        markdown = (
            markdown.rstrip("\n")
            + "\n\n## This session\n"
            + "".join(f"- {note}\n" for note in notes)
        )
    return markdown


def _send_start(
    delivery: Delivery, record: dict[str, Any], now: datetime, notes: list[str]
) -> dict[str, Any] | None:
    try:
        result = delivery.send(record, now)
    except Exception as exc:
        notes.append(f"ondeck could not record this session's start ({_one_line(exc)}).")
        return None
    if result is None:
        notes.append(_spooled_line(delivery, "start"))
    return result


def _unclassified_note(reason: str, number: int | None) -> str:
    which = f"session {number}" if number else "this session"
    return (
        f"This session is unclassified ({reason}): its record waits in the inbox and is "
        f"shown to no other session until a person moves it (`ondeck session move {number or 'ID'}"
        f" --side SIDE`); {which} is listed by `ondeck session list --status unclassified`."
    )


def _context_from_server(config: HookConfig, project: str | None) -> str | None:
    """Ask the running server, whose imports and connections are already warm.

    Used only when the server answers for the same database this hook is configured for
    (its `X-Ondeck-Store` fingerprint); anything else falls back to reading the database.
    """
    import urllib.parse

    from ondeck.entrypoints.hook_http import HttpError, request

    query = urllib.parse.urlencode(
        {"format": "markdown", **({"project": project} if project else {})}
    )
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
    delivery: Delivery, config: HookConfig, project: str | None, now: datetime
) -> str:
    from ondeck.db.engine import reading
    from ondeck.services.context import build_context
    from ondeck.services.context_render import to_markdown
    from ondeck.services.sessions import context_warnings

    with reading(delivery.engine()) as conn:
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

VERBS = {"stop": "stop", "post-compact": "compact", "session-end": "end"}


def run_hook(verb: str, stdin: TextIO, stdout: TextIO, db_url: str | None = None) -> int:
    """`ondeck hook stop|post-compact|session-end`: record the event; never fail the session."""
    kind = VERBS[verb]
    payload = read_payload(stdin)
    try:
        message = _record(kind, payload, db_url)
    except Exception as exc:  # never fail the session: say what went wrong instead
        message = {"systemMessage": f"ondeck could not record this {verb}: {_one_line(exc)}"}
        if kind == "end":
            message.update({"released": [], "owner": _owner(payload)})
    if message:
        stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
    return 0


def _owner(payload: dict[str, Any]) -> str | None:
    value = payload.get("session_id")
    return f"claude:{value.strip()[:190]}" if isinstance(value, str) and value.strip() else None


def _record(kind: str, payload: dict[str, Any], db_url: str | None) -> dict[str, Any] | None:
    from ondeck.core import clock
    from ondeck.core.hook_config import load_hook_config

    config = load_hook_config(db_url)
    now = clock.now()
    record = make_record(kind, payload, config, now)
    if record is None:
        sys.stderr.write(f"ondeck: hook {kind}: no session_id on stdin, nothing recorded\n")
        return {"released": [], "owner": None} if kind == "end" else None
    delivery = Delivery(config)
    try:
        result = delivery.send(record, now)
        what = {"stop": "last word", "compact": "compaction", "end": "end"}[kind]
        if kind != "end":
            if result is None:
                return {"systemMessage": _spooled_line(delivery, what)}
            return None
        out: dict[str, Any] = {
            "released": result["released"] if result else [],
            "owner": _owner(payload),
            "session": result["session"]["id"] if result else None,
        }
        if result is None:
            out["systemMessage"] = _spooled_line(delivery, what)
        changes = _changes(record, result, config, now)
        if changes is not None and delivery.send(changes, now) is None and result is not None:
            out["systemMessage"] = _spooled_line(delivery, "git changes")
        return out
    finally:
        delivery.close()


def _changes(
    end: dict[str, Any], result: dict[str, Any] | None, config: HookConfig, now: datetime
) -> dict[str, Any] | None:
    """What git says the session did, from its start's HEAD to now: the end's second record."""
    from ondeck.core.git import FILES_MAX, Deadline, changed_paths, commits_between
    from ondeck.core.scrubber import is_private_path
    from ondeck.services.hook_records import changes_record

    if not end["capture"]:
        return None
    facts = end["facts"]
    start = _start_facts(end, result, config)
    note = None
    commits = files = None
    commits_total = files_total = private = 0
    if start is None:
        note = "not read: the session's start is not known here (the database was unreachable)"
    elif not start.get("start_head") or not facts.get("head"):
        note = "not read: no git HEAD at the session's start or end"
    elif start.get("git_root") != facts.get("git_root"):
        note = "not read: the session ended in another repository than it started in"
    else:
        root, deadline = facts["git_root"], Deadline()
        log = commits_between(root, start["start_head"], facts["head"], deadline)
        listing = changed_paths(root, start["start_head"], deadline)
        notes = [n for n in (log.note, listing.note) if n]
        note = "; ".join(notes) or None
        if log.items is not None:
            commits = [(sha, subject) for sha, subject in log.items]  # type: ignore[misc]
            commits_total = log.total
        if listing.items is not None:
            public = [p for p in listing.items if not is_private_path(str(p), config.private_globs)]
            private = len(listing.items) - len(public)
            files, files_total = [str(p) for p in public[:FILES_MAX]], len(public)
    return changes_record(
        end,
        at=now,
        commits=commits,
        commits_total=commits_total,
        files=files,
        files_total=files_total,
        files_private=private,
        note=note,
    )


def _start_facts(
    end: dict[str, Any], result: dict[str, Any] | None, config: HookConfig
) -> dict[str, Any] | None:
    if result is not None:
        return result["session"]
    from ondeck.services import spool

    found = spool.find(
        config.spool_dir,
        lambda r: r.get("kind") == "start" and r.get("session") == end["session"],
    )
    if found is None:
        return None
    facts = found.get("facts") or {}
    return {"start_head": facts.get("head"), "git_root": facts.get("git_root")}
