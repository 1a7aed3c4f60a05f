"""What a hook the Claude Code mod ran tells the mod in client mode (`"ondeck"` in its answer,
read by the mod only).

In client mode the mod holds no token (nothing of it in the plugin's settings, an argument
list or a file another user might read), so it cannot ask the server anything itself. The
`ondeck hook` it hands each event to has the token: given `ONDECK_MOD_STATUS` (the mod's
status-line query, `session=…&project=…&side=…`), it asks the server what the mod would have
asked over the owner socket in local mode and adds it to its answer:

    line, reachable  the status line (`GET /api/v1/context/status`), and whether the server
                     answered this hook (asked once: not after a request that got no answer)
    facts            a start's side and project as classified here: they scope what follows
    brief            after a compaction (post-compact) and for `/ondeck` (`ondeck hook
                     brief`, which records nothing): the context with its brief (`GET
                     /api/v1/context`), for the session's side and project, as the mod asks
                     for it in local mode (source `compact`, `command`)

In local mode (the owner socket) the mod asks the server itself; given `ONDECK_MOD_STORE`, the
hook adds only

    store            the id of the hook's database, as the hook learned it from the
                     database itself: the mod sends it with each event, so that a server
                     serving another database refuses them rather than splitting a session

A settings hook never has those variables, so its answer is what Claude Code expects.
"""

from __future__ import annotations

import json
import os

from ondeck.sessions.capture.delivery import MOD_STATUS, MOD_STORE, debug

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from typing import Any, TextIO

    from ondeck.host.quick_settings import HookConfig
    from ondeck.sessions.capture.remote import RemoteServer

# The keys of the mod's query that scope what the hook asks for (the session's own facts).
SCOPE = ("project", "side", "unclassified", "session")


def for_the_mod(
    out: dict[str, Any] | None,
    db_url: str | None,
    classification: Any = None,
    brief: str | None = None,
) -> dict[str, Any] | None:
    """`out` with what the mod needs added when the mod ran this hook: in local mode the id
    of the hook's database, in client mode the status line (the brief too, as of `brief`,
    the source the server renders it for); any other hook's answer is as it was."""
    from ondeck.host.quick_settings_read import load_hook_config

    if os.environ.get(MOD_STORE) == "1":
        try:
            store = load_hook_config(db_url).store_id
        except Exception as exc:  # the mod hands the next event over again
            debug(f"store id for the mod: {exc}")
            return out
        return {**(out or {}), "ondeck": {"store": store}} if store else out
    query = os.environ.get(MOD_STATUS)
    if query is None:
        return out

    try:
        config = load_hook_config(db_url)
        if not config.server_url:
            return out
        given = classification if isinstance(classification, dict) else None
        asked = mod_answer(config, query, given, brief)
    except Exception as exc:  # the record is what counts: the line waits for the next
        debug(f"status line for the mod: {exc}")
        return out
    return {**(out or {}), "ondeck": asked}


def mod_answer(
    config: HookConfig, query: str, classification: dict[str, Any] | None, brief: str | None
) -> dict[str, Any]:
    """The server's status line for `query`, scoped by the start's `classification` when
    there is one (given back to the mod as `facts`, to scope the next events' lines), whether
    the server answered this hook, and with `brief` (a source) the context with its brief."""
    from ondeck.host.http_client import query_string
    from ondeck.sessions.capture.remote import (
        UNANSWERED,
        RemoteServer,
        ServerRefused,
        Unanswered,
    )

    out: dict[str, Any] = {}
    if classification is not None:
        facts = {
            "project": (classification.get("project") or {}).get("value"),
            "side": (classification.get("side") or {}).get("value"),
            "unclassified": bool(classification.get("unclassified")),
        }
        out["facts"] = facts
        scoped = {k: str(v).lower() if k == "unclassified" else str(v)
                  for k, v in facts.items() if v}  # fmt: skip
        query = "&".join(filter(None, [query, query_string(scoped) if scoped else ""]))
    if UNANSWERED:
        return {**out, "reachable": False}
    server = RemoteServer(config)
    try:
        if brief is not None:
            try:
                out["brief"] = _brief(server, query, brief)
            except ServerRefused as exc:  # the line may still be given
                debug(f"brief for the mod: {exc}")
        answer = server.request("GET", f"/api/v1/context/status?{query}")
    except Unanswered:
        return {**out, "reachable": False}
    except ServerRefused:
        return {**out, "reachable": True}
    try:
        line = json.loads(answer).get("line")
    except (ValueError, AttributeError):
        line = None
    return {**out, "reachable": True, "line": line if isinstance(line, str) else ""}


def _brief(server: RemoteServer, query: str, source: str) -> str:
    """The context with its brief as the server renders it for the session the mod's query
    names: only that query's scoping pairs are kept, as the mod sent them (encoded)."""
    from ondeck.host.http_client import query_string
    from ondeck.sessions.capture.payload import MAX_STDIN

    pairs = [p for p in query.split("&") if p.partition("=")[0] in SCOPE]
    asked = query_string({"format": "markdown", "brief": "true", "source": source})
    answer = server.request("GET", f"/api/v1/context?{'&'.join([asked, *pairs])}")
    return bytes(answer[:MAX_STDIN]).decode("utf-8", "replace")


def brief_verb(stdout: TextIO, db_url: str | None = None) -> int:
    """`ondeck hook brief`: the mod's `/ondeck` in client mode. It records nothing and reads
    no standard input: it prints `{"ondeck": {line, reachable, brief}}` for the session of
    `ONDECK_MOD_STATUS` (none: no session, no scope). Exit 2, saying why in one line, where
    there is no server to ask (not client mode: the mod asks through the owner socket)."""
    import sys

    from ondeck.host.quick_settings_read import load_hook_config

    query = os.environ.get(MOD_STATUS, "")
    try:
        config = load_hook_config(db_url)
    except Exception as exc:
        sys.stderr.write(f"ondeck: hook brief: {' '.join(str(exc).split())[:300]}\n")
        return 2
    if not config.server_url:
        sys.stderr.write(
            "ondeck: hook brief is for client mode (ONDECK_SERVER_URL); here "
            "`ondeck context` gives the brief\n"
        )
        return 2
    answer = {"ondeck": mod_answer(config, query, None, "command")}
    stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
    return 0
