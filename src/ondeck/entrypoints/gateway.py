"""How every entry point reaches the services: the API, the dashboard, the CLI, the MCP
server and the session hooks all go through here, so they cannot drift apart.

    Store   what a process shares: the settings, the engine, and the jobs loop running in
            this process (the server's), if any.
    Call    one HTTP request, command or tool call. It reads the clock once, when it is made,
            so everything it writes and shows is stamped with the same instant. It opens
            read transactions (a deferred BEGIN on SQLite: a reader never queues behind a
            writer's lock) and write transactions (BEGIN IMMEDIATE). After a write commits
            a change that asked the jobs loop to tick now (`schedules.wake_jobs`: "now"), it
            wakes this process's loop: on SQLite that is the only wake-up there is. And it
            builds the session context, fitted to its size, in the format asked for.

The jobs loop itself reads the clock once per tick and is not a Call. The services are
imported where they are used: the CLI and the session hook import this module on every run,
and the session hook's database path (`hook_context`) runs without SQLAlchemy, so it is
imported here only where a Call uses it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import date, datetime, tzinfo
from typing import TYPE_CHECKING, Protocol

from ondeck.context.render import DEFAULT_CHARS, Format, fit_context, render
from ondeck.core import clock
from ondeck.core.sides import OWNER, Access

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine
    from starlette.requests import Request

    from ondeck.context.build import Context, ContextSettings
    from ondeck.core.memory import Scope
    from ondeck.core.sides import SideView
    from ondeck.db.plain import Db
    from ondeck.host.settings import Settings
    from ondeck.memory.brief import BriefRequest


class Wakeable(Protocol):
    def wake(self) -> None: ...


@dataclass(eq=False)
class Store:
    settings: Settings
    engine: Engine
    # The jobs loop running in this process: set by the server while it runs one.
    jobs: Wakeable | None = None
    # The database's random id (system/store_id.py), read once; see `store_id`.
    known_store_id: str | None = None

    def store_id(self, *, fresh: bool = False) -> str:
        """The id of the database this process serves (made on first use); `fresh` reads it
        again (a restore may have put another store's data in place meanwhile)."""
        if self.known_store_id is None or fresh:
            from ondeck.db.engine import reading, writing
            from ondeck.db.plain import as_db
            from ondeck.system import store_id as store_identity

            with reading(self.engine) as conn:  # no write lock for a row that is there
                found = store_identity.read(as_db(conn))
            if found is None:
                with writing(self.engine) as conn:
                    found = store_identity.ensure(as_db(conn), clock.now())
            self.known_store_id = found
        return self.known_store_id

    def call(self, now: datetime | None = None) -> Call:
        """A new call, at `now` (default: the clock, read here and only here)."""
        return Call(self, clock.aware(now) if now is not None else clock.now())

    def wake_jobs(self) -> None:
        """Make this process's jobs loop tick now (nothing when it runs none)."""
        jobs = self.jobs
        if jobs is not None:
            jobs.wake()


@dataclass(frozen=True, eq=False)
class Call:
    store: Store
    instant: datetime
    # Who makes the call, as its changes are recorded: for an HTTP request, the identity its
    # token proved (`api`, `api:<token name>`; set by the API's guard through `acting_as`).
    actor: str = "api"
    # What it may see and write (core/sides.py): the owner's every side, or the one side its
    # token or MCP client is held to, and whether it may write. Made once, where the caller
    # came from (the API's guard, the MCP server), and read by every door through the
    # methods below, never decided again by a route.
    access: Access = OWNER

    @property
    def settings(self) -> Settings:
        return self.store.settings

    @property
    def engine(self) -> Engine:
        return self.store.engine

    @property
    def zone(self) -> tzinfo:
        return self.store.settings.zone

    @property
    def side_limit(self) -> str | None:
        """The one side this call is held to; None: every side."""
        return self.access.side

    def now(self) -> datetime:
        """The instant of this call: the same however often it is asked."""
        return self.instant

    def acting_as(self, actor: str, access: Access | None = None) -> Call:
        """This call (the same instant) made by `actor`, with `access` if given (else the
        access it had: a new actor never widens what the caller may reach)."""
        return replace(self, actor=actor, access=self.access if access is None else access)

    def side_view(
        self, side: str | None, *, inbox: bool = False, required: bool = True
    ) -> SideView:
        """The side a list shows a caller with no directory (the API, the dashboard): the one
        it names, or its own; with sides configured, naming none is refused (sides are read
        one at a time) unless not `required`."""
        return self.access.reader(self.settings.sides, side, inbox=inbox, required=required)

    def scope(self, side: str | None, project: str | None, *, inbox: bool = False) -> Scope:
        """Whose memory a list shows: `side_view` and a project within it."""
        from ondeck.core.errors import InvalidInput
        from ondeck.core.memory import Scope

        if inbox and side:
            raise InvalidInput("give either side or unclassified=true, not both")
        return Scope(view=self.side_view(side, inbox=inbox), project=project)

    def side_to_write(self, side: str | None) -> str | None:
        """The side a new item made by this caller gets, or an edit moves one to: the one
        named (required with sides configured), or its own (a caller held to a side moves
        nothing out of it)."""
        return self.access.to_write(self.settings.sides, side)

    def id_view(self) -> SideView:
        """What a step on one item named by id may reach: any side for the owner (the id
        names it), its own side only for a caller held to one."""
        return self.access.reach(self.settings.sides)

    def check_reaches(self, side: str | None, what: str) -> None:
        """An item of a side this caller does not reach is "not found"."""
        self.access.check_reaches(self.settings.sides, side, what)

    def limited(self, side: str | None, *, inbox: bool = False) -> str | None:
        """`side`, or this call's own side (naming another, or the inbox, is refused)."""
        return self.access.own(side, inbox=inbox)

    def today(self) -> date:
        return clock.today(self.instant, self.zone)

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only transaction: for every call that changes nothing."""
        from ondeck.db.engine import reading

        with reading(self.engine) as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction, committed at the end; then the jobs loop is woken if a change
        asked for it (only once committed: a rolled-back "now" wakes nobody)."""
        from ondeck.db.engine import writing

        with writing(self.engine) as conn:
            try:
                yield conn
            except BaseException:
                _wake_requested(conn)
                raise
            wake = _wake_requested(conn)
        if wake:
            self.store.wake_jobs()

    def context(
        self,
        project: str | None = None,
        budget: int | None = None,
        *,
        chars: int = DEFAULT_CHARS,
        conn: Connection | None = None,
        brief: BriefRequest | None = None,
        view: SideView | None = None,
    ) -> Context:
        """The session context at this call's instant, within `budget` items (default the
        service's) and `chars` characters of Markdown, with the brief `brief` asks for, in
        `conn`'s transaction or a read transaction of its own. `view`: whose tasks and
        reminders (None: the brief's side; context/build.py `context_for`)."""
        args = (self.instant, self.settings, project, budget, chars, brief, view)
        if conn is None:
            with self.read() as own:
                return _fitted(own, *args)
        return _fitted(conn, *args)

    def context_text(
        self,
        fmt: Format | str,
        project: str | None = None,
        budget: int | None = None,
        *,
        brief: BriefRequest | None = None,
        view: SideView | None = None,
    ) -> str:
        """The session context rendered in `fmt` (markdown, json, hook)."""
        return render(self.context(project, budget, brief=brief, view=view), self.zone, fmt)


def _fitted(
    conn: Db | Connection,
    instant: datetime,
    settings: ContextSettings,
    project: str | None,
    budget: int | None,
    chars: int,
    brief: BriefRequest | None,
    view: SideView | None = None,
) -> Context:
    from ondeck.context.build import DEFAULT_BUDGET, context_for

    items = DEFAULT_BUDGET if budget is None else budget
    ctx = context_for(conn, instant, settings, project, items, brief=brief, view=view)
    fit_context(ctx, settings.zone, chars)
    return ctx


def hook_context(
    db: Db,
    config: ContextSettings,
    instant: datetime,
    project: str | None,
    brief: BriefRequest | None,
) -> str:
    """The session hook's context read from the database, as `Call.context_text` gives it in
    Markdown, in `db`'s read transaction: the bare driver's (db/bare.py), or SQLAlchemy's
    when the database had to be created or migrated first. The hook comes here rather than
    through a Store: its settings are `host/quick_settings.HookConfig`, read without pydantic (whose
    import alone costs most of the hook's budget), and it imports no SQLAlchemy."""
    ctx = _fitted(db, instant, config, project, None, DEFAULT_CHARS, brief)
    return render(ctx, config.zone, Format.markdown)


def _wake_requested(conn: Connection) -> bool:
    """Whether a change in this transaction asked the jobs loop to tick now; forgets it.

    The mark lives in the DBAPI connection's `info`, which the pool keeps for the next
    checkout, so it is taken off whatever happens. An invalidated connection has lost it
    already (and asking would try to reconnect inside a failed transaction)."""
    from ondeck.work.schedules import WAKE_REQUESTED

    if conn.invalidated:
        return False
    return bool(conn.info.pop(WAKE_REQUESTED, False))


def call_of(request: Request) -> Call:
    """The Call of an HTTP request: made at its first use and kept on the request, so the
    route, its dependencies and the page it renders share one instant."""
    call = getattr(request.state, "ondeck_call", None)
    if call is None:
        store: Store = request.app.state.store
        call = store.call()
        request.state.ondeck_call = call
    return call


def identify_as(request: Request, actor: str, access: Access = OWNER) -> Call:
    """The request's Call, from now on made by `actor` (who its token proved to be), with
    what its token may see and write."""
    call = call_of(request).acting_as(actor, access)
    request.state.ondeck_call = call
    return call


def open_to_serve(settings: Settings) -> Engine:
    """`ondeck serve`'s engine (entrypoints/server/serve.py), once its schema is current. A
    server writes as it starts only to bring
    as it starts only to bring the schema up to date or to make the store's id; when it must
    and another process holds SQLite's write lock (a long import), it waits for the lock
    (db/locks.py, bounded, said in one line) rather than fail after the busy timeout a short
    command has. With nothing to write it starts at once: reads do not wait for a writer,
    and the jobs loop waits on its own."""
    import logging

    from ondeck.db import locks
    from ondeck.db.engine import make_engine, reading
    from ondeck.db.migrate import HEAD, ensure_schema, known_revisions, read_revision
    from ondeck.db.plain import as_db
    from ondeck.system import store_id

    engine = make_engine(settings.url)
    try:
        revision = read_revision(engine)
        if revision != HEAD:
            # A revision this ondeck does not know is refused by ensure_schema, at once.
            must_write = revision is None or revision in known_revisions()
            what = "bring its schema up to date"
        else:
            with reading(engine) as conn:
                must_write = store_id.read(as_db(conn)) is None
            what = "make the store's id"
        if must_write:
            say = logging.getLogger("ondeck.server").warning
            locks.wait_for_write_lock(engine, what=what, say=say)
        ensure_schema(engine)
    except BaseException:  # refused or unreachable: no connection is left open behind it
        engine.dispose()
        raise
    return engine
