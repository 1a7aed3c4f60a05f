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

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine
    from starlette.requests import Request

    from ondeck.context.build import Context, ContextSettings
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
    # The one side its token sees and writes (`token create --side`); None: every side.
    side_limit: str | None = None

    @property
    def settings(self) -> Settings:
        return self.store.settings

    @property
    def engine(self) -> Engine:
        return self.store.engine

    @property
    def zone(self) -> tzinfo:
        return self.store.settings.zone

    def now(self) -> datetime:
        """The instant of this call: the same however often it is asked."""
        return self.instant

    def acting_as(self, actor: str, side_limit: str | None = None) -> Call:
        """This call (the same instant) made by `actor`, seeing `side_limit` only if set."""
        return replace(self, actor=actor, side_limit=side_limit)

    def side_view(self, side: str | None, *, inbox: bool = False) -> SideView:
        """The side a caller with no directory reads (the API, the dashboard): the one it
        names, or its token's; with sides configured, naming none is refused (sides are
        read one at a time), and a side-limited token reads its side only."""
        from ondeck.core.errors import InvalidInput
        from ondeck.core.sides import view_of

        sides = self.settings.sides
        side = self.limited(side, inbox=inbox)
        if sides and side is None and not inbox:
            raise InvalidInput(
                f"give side: one of {', '.join(sorted(sides))} (tasks and schedules are never "
                "read across sides), or unclassified=true for the inbox"
            )
        return view_of(sides, side, inbox=inbox)

    def side_to_write(self, side: str | None) -> str | None:
        """The side a new task or schedule made by this caller gets: the one named (required
        with sides configured), or its token's."""
        from ondeck.core.sides import side_to_write

        return side_to_write(self.settings.sides, self.limited(side), required=True)

    def id_view(self) -> SideView:
        """What a step on one item named by id may reach: any side for the owner (the id
        names it), its own side only for a side-limited token."""
        from ondeck.core.sides import EVERY_SIDE, SideView

        if self.side_limit is None or not self.settings.sides:
            return EVERY_SIDE
        return SideView(sides_on=True, side=self.side_limit)

    def side_to_move(self, side: str | None) -> str | None:
        """The side an edit moves an item to: a side-limited token moves nothing out."""
        from ondeck.core.sides import side_to_write

        return side_to_write(self.settings.sides, self.limited(side), required=True)

    def limited(self, side: str | None, *, inbox: bool = False) -> str | None:
        """`side`, or this call's token's side (naming another, or the inbox, is refused)."""
        limit = self.side_limit
        if limit is None:
            return side
        from ondeck.core.errors import Forbidden

        if inbox or (side is not None and side != limit):
            asked = "the inbox" if inbox else f"side {side!r}"
            raise Forbidden(f"this token sees and writes side {limit!r} only, not {asked}")
        return limit

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


def identify_as(request: Request, actor: str, side_limit: str | None = None) -> Call:
    """The request's Call, from now on made by `actor` (who its token proved to be), seeing
    `side_limit` only when its token is limited to a side."""
    call = call_of(request).acting_as(actor, side_limit)
    request.state.ondeck_call = call
    return call
