"""The hooks' fast path, behind one wall: every module `ondeck hook VERB` may load.

An agent runs a hook at every session start and end, every turn and every compaction, and
waits for it. The budget (docs/benchmarks.md): with this machine's server or in client mode,
each hook at most 4x `python -c pass`; writing the database itself, at most the time of
`python -c 'import sqlalchemy'`. SQLAlchemy's import alone spends the second budget, and
pydantic, FastAPI, Typer, rich, Alembic or the MCP SDK each spend more than the first. So the
hooks run on a stack of their own:

- plain SQL through the bare driver (`db/bare.py`, `db/plain.py`), with statements written
  in `sessions/rows.py` and `context/reads.py`, held to `db/tables.py` by tests;
- the settings read with the standard library (`host/quick_settings.py`), not pydantic;
- frozen records (`core/frozen.py`) for dataclasses, `http.client` over the owner socket
  (`host/http_client.py`) for httpx, `posix_spawn` for subprocess (`host/git.py`);
- `TYPE_CHECKING = False` where a module needs types only for mypy: `typing` itself costs.

The wall (tests/cli/test_hook_imports.py holds it):
- a hook process loads no ondeck module outside the set of its path below, whichever verb
  and however the event is delivered, and none of `NEVER`;
- at import, a module listed here imports only the standard library and other listed
  modules. Anything else is imported inside the function that needs it, on a branch a hook
  takes only when it must (a database to create or migrate goes the SQLAlchemy way).
A module enters the path by being added here, which puts it under both checks.
"""

from __future__ import annotations

# Never loaded by a hook that finds its store ready (SQLAlchemy and pydantic only when a
# database must be created or migrated first).
NEVER = (
    *("fastapi", "starlette", "uvicorn", "mcp", "typer", "click", "rich", "alembic"),
    *("sqlalchemy", "pydantic", "pydantic_settings"),
)

# What every path shares: reading the payload and the settings, the record of the event, and
# the spool that keeps it when nothing takes it.
COMMON = frozenset(
    {
        "ondeck",
        "ondeck.core",
        "ondeck.core.clock",
        "ondeck.core.column_limits",
        "ondeck.core.frozen",
        "ondeck.core.http_limits",
        # Counts in the lines a hook says ("1 event waiting"): the standard library only.
        "ondeck.core.humanize",
        "ondeck.core.scrubber",
        "ondeck.core.scrubber_checks",
        # gitleaks' rules: the standard library only, the file read when a text is scrubbed.
        "ondeck.core.scrubber_gitleaks",
        "ondeck.core.scrubber_patterns",
        "ondeck.core.session_terms",
        "ondeck.entrypoints",
        "ondeck.entrypoints.cli",
        "ondeck.entrypoints.client",
        "ondeck.host.http_client",
        "ondeck.entrypoints.hooks",
        "ondeck.sessions.capture.delivery",
        "ondeck.entrypoints.hooks.mod_answer",
        "ondeck.sessions.capture.payload",
        "ondeck.entrypoints.hooks.verbs",
        "ondeck.host",
        "ondeck.host.channel",
        "ondeck.host.private",
        "ondeck.host.quick_settings",
        "ondeck.host.quick_settings_read",
        "ondeck.host.quick_settings_rules",
        "ondeck.sessions",
        "ondeck.sessions.capture",
        "ondeck.sessions.capture.pipeline",
        "ondeck.sessions.capture.verbs",
        "ondeck.sessions.capture.agents",
        "ondeck.sessions.capture.events",
        "ondeck.sessions.capture.git_changes",
        "ondeck.sessions.capture.events_check",
        "ondeck.sessions.capture.spool",
        "ondeck.sessions.capture.spool_files",
        "ondeck.sessions.capture.start_commits",
        "ondeck.sessions.capture.transcript_tail",
    }
)

# This machine's server takes the event through the owner socket: nothing more.
SERVER = COMMON

# Client mode: the hook makes the record (git read, classified) and sends it with a token.
CLIENT = COMMON | {
    "ondeck.sessions.capture.remote",
    "ondeck.host.git",
    "ondeck.host.git_run",
    "ondeck.sessions.classify",
}

# Client mode with the server gone: the event waits in the spool, and session-start tells the
# session so, in a context it renders itself.
CLIENT_ALONE = CLIENT | {
    "ondeck.core.errors",
    "ondeck.core.humanize",
    "ondeck.core.memory",
    "ondeck.core.sides",  # the brief's Scope holds its side view (standard library only)
    "ondeck.core.validation",
    "ondeck.db",
    "ondeck.db.plain",
    "ondeck.db.predicates",
    "ondeck.memory",
    "ondeck.memory.brief",
    "ondeck.memory.brief_render",
    "ondeck.sessions.records_tasks",
}

# No server: the hook writes the database and reads the session's context from it.
DATABASE = CLIENT - {"ondeck.sessions.capture.remote"} | {
    "ondeck.context",
    "ondeck.context.build",
    "ondeck.context.reads",
    "ondeck.context.render",
    "ondeck.core.errors",
    "ondeck.core.humanize",
    "ondeck.core.memory",
    "ondeck.core.models",
    "ondeck.core.sides",
    "ondeck.core.validation",
    "ondeck.db",
    "ondeck.db.bare",
    "ondeck.db.gate",
    "ondeck.db.plain",
    "ondeck.db.predicates",
    "ondeck.db.textpairs",
    "ondeck.entrypoints.gateway",
    "ondeck.memory",
    "ondeck.memory.brief",
    "ondeck.memory.brief_render",
    "ondeck.sessions.alerts",
    "ondeck.sessions.compactions",
    "ondeck.sessions.records_tasks",
    "ondeck.sessions.rows",
    "ondeck.sessions.rows_change",
    "ondeck.sessions.rows_sql",
    "ondeck.system",
    "ondeck.system.heartbeat",
    "ondeck.system.store_id",
    "ondeck.work",
    "ondeck.work.lease_state",
}

MODULES = SERVER | CLIENT | CLIENT_ALONE | DATABASE
