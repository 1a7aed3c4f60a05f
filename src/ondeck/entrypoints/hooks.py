"""Claude Code session hooks: what a session is told at its start, what it lets go at its end.

`session-start` must never fail a session: whatever goes wrong (database unreachable, bad
stdin), it prints valid hook JSON whose context says what happened, and exits 0. It runs at
every session start, so it imports only what it needs (no Typer, no web framework, no MCP).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

# Light: the rendering module loads no SQLAlchemy (the server path goes without it).
from ondeck.services.context_render import Format, hook_output

if TYPE_CHECKING:
    from ondeck.core.config import Settings

MAX_STDIN = 1024 * 1024
SERVER_TIMEOUT_S = 3.0


def read_payload(stream: TextIO) -> dict[str, Any]:
    try:
        data = json.loads(stream.read(MAX_STDIN) or "{}")
    except (ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def project_for(cwd: str | None, mapping: dict[str, str]) -> str | None:
    """The project of a working directory: the longest configured path prefix that holds it,
    else the name of its git top-level directory, else none (the session sees everything)."""
    if not cwd:
        return None
    path = Path(cwd).expanduser()
    best: tuple[int, str] | None = None
    for prefix, project in mapping.items():
        root = Path(prefix).expanduser()
        if path == root or root in path.parents:
            depth = len(root.parts)
            if best is None or depth > best[0]:
                best = (depth, project)
    if best is not None:
        return best[1]
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return _project_name(candidate.name)
    return None


def _project_name(name: str) -> str | None:
    """Directory names become project names within the project pattern `[A-Za-z0-9._-]{1,64}`."""
    cleaned = "".join(c if (c.isalnum() and c.isascii()) or c in "._-" else "-" for c in name)
    cleaned = cleaned.strip("-")[:64]
    return cleaned or None


def session_start(stdin: TextIO, stdout: TextIO, db_url: str | None = None) -> int:
    payload = read_payload(stdin)
    try:
        markdown = _start_context(payload, db_url)
    except Exception as exc:  # never fail the session: tell it what went wrong instead
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        markdown = (
            "# On deck: unavailable\n\n"
            f"ondeck could not read its database ({reason}). Today's reminders, due tasks "
            "and warnings are unknown; check `ondeck context` or the server.\n"
        )
    stdout.write(json.dumps(hook_output(markdown), ensure_ascii=False) + "\n")
    return 0


def _start_context(payload: dict[str, Any], db_url: str | None) -> str:
    from ondeck.core.config import load_settings

    settings = load_settings(database_url=db_url)
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    project = project_for(cwd, settings.projects)
    markdown = _from_server(settings, project)
    source = settings.local_url
    if markdown is None:
        markdown, source = _from_database(settings, project), "the database"
    if os.environ.get("ONDECK_DEBUG"):
        sys.stderr.write(f"ondeck: session context from {source}\n")
    return markdown


def _from_server(settings: Settings, project: str | None) -> str | None:
    """Ask the running server, whose imports and connections are already warm.

    Used only when the server answers for the same database this hook is configured for
    (its `X-Ondeck-Store` fingerprint); anything else falls back to reading the database.
    `http.client` rather than `urllib.request`: the latter's imports cost the hook more than
    the request itself, and nothing here needs redirects, proxies or TLS.
    """
    import http.client
    import urllib.parse

    where = urllib.parse.urlsplit(settings.local_url)
    query = urllib.parse.urlencode(
        {"format": Format.markdown.value, **({"project": project} if project else {})}
    )
    headers = {"Authorization": f"Bearer {settings.token_value}"} if settings.token_value else {}
    try:
        host = where.hostname or "127.0.0.1"  # local_url always names one
        server = http.client.HTTPConnection(host, where.port, timeout=SERVER_TIMEOUT_S)
        try:
            server.request("GET", f"/api/v1/context?{query}", headers=headers)
            response = server.getresponse()
            if response.status != 200 or response.getheader("X-Ondeck-Store") != settings.store_id:
                return None
            return response.read(MAX_STDIN).decode("utf-8")
        finally:
            server.close()
    except (OSError, ValueError, http.client.HTTPException):
        return None


def _from_database(settings: Settings, project: str | None) -> str:
    from ondeck.db import open_database
    from ondeck.entrypoints.store import Store

    engine = open_database(settings.url)
    try:
        return Store(settings=settings, engine=engine).call().context_text(Format.markdown, project)
    finally:
        engine.dispose()  # the process ends with os._exit: close the connection now


def session_end(stdin: TextIO, stdout: TextIO, db_url: str | None = None) -> int:
    """Release the leases the ending session held; the reaper covers sessions that crash."""
    from ondeck.core.config import load_settings
    from ondeck.db import open_database
    from ondeck.entrypoints.store import Store
    from ondeck.services.backlog import release_held_by

    payload = read_payload(stdin)
    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id.strip():
        sys.stderr.write("ondeck: hook session-end: no session_id on stdin, nothing released\n")
        return 0
    settings = load_settings(database_url=db_url)
    engine = open_database(settings.url)
    owner = f"claude:{session_id.strip()[:190]}"
    reason = payload.get("reason") if isinstance(payload.get("reason"), str) else None
    call = Store(settings=settings, engine=engine).call()
    with call.write() as conn:
        released = release_held_by(
            conn, call.now(), owner=owner, actor=f"hook:{session_id[:60]}", reason=reason
        )
    engine.dispose()
    stdout.write(json.dumps({"released": released, "owner": owner}) + "\n")
    return 0
