"""The MCP server (`ondeck mcp`, stdio): the same services, as tools an agent can call.

Each tool parses its arguments, calls one service in one transaction and returns a typed
result (pydantic models, so clients get structured content). A refused input or a lost lease
becomes a tool error with the service's one-line message, never a crash of the server.

A tool call is one `Call` on the store (entrypoints/gateway.py): one instant, and a read
transaction for the tools that change nothing (on SQLite they never wait for a writer).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import BaseModel, Field
from sqlalchemy import Engine

from ondeck import __version__
from ondeck.context.render import Format, render, to_json
from ondeck.core.errors import InvalidInput
from ondeck.core.models import ScheduleKind, TaskStatus
from ondeck.core.sides import EVERY_SIDE, SideView, side_to_write
from ondeck.core.validation import parse_date
from ondeck.entrypoints.api.models import DoneAndNext, ScheduleOut, SideRule, TaskOut
from ondeck.entrypoints.gateway import Call, Store
from ondeck.entrypoints.mcp.asker import READ_ONLY, Asker
from ondeck.entrypoints.mcp.toolbox import (
    Serving,
    Toolbox,
    asker,
    call,
    serving_as,
    settings,
)
from ondeck.host.settings import Settings
from ondeck.work import schedule_calls, task_calls

T = TypeVar("T")


SideArg = Annotated[
    str | None,
    Field(description="This session's side (the default); another side is refused."),
]


class TaskList(BaseModel):
    tasks: list[TaskOut]


class ScheduleList(BaseModel):
    schedules: list[ScheduleOut]


class PulledNow(BaseModel):
    schedule: ScheduleOut
    note: str = Field(description="What happens next.")


class ContextOut(BaseModel):
    markdown: str = Field(description="The context as compact Markdown for an agent.")
    data: dict[str, Any] = Field(description="The same context as structured JSON.")


INSTRUCTIONS = (
    "ondeck keeps the backlog and recurring schedules of a one-person operation. Call "
    "get_context at the start of work to see today's reminders, due and running tasks and "
    "warnings. Claim a task before working on it and complete it with the lease token the "
    "claim returned; renew long work before the lease ends."
)


class ToolServer(MCPServer):
    """An MCP server of ondeck's tools (made once a process, `every_tool`) serving `store`
    to `asker`; over HTTP, `asker_for` says who asks each call, or refuses it."""

    def __init__(self, store: Store, asker: Asker | None = None, **options: Any) -> None:
        super().__init__(
            "ondeck",
            instructions=instructions(),
            version=__version__,
            tools=list(every_tool()),
            **options,
        )
        self.ondeck_store = store
        self._asker = asker

    async def asker_for(self, name: str, context: Context[Any, Any] | None) -> Asker:
        if self._asker is None:
            raise ToolError("no asker: this server's calls each say who asks")
        return self._asker

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        asker = await self.asker_for(name, context)
        with serving_as(Serving(store=self.ondeck_store, asker=asker)):
            return await super().call_tool(name, arguments, context)


def build_server(settings: Settings, engine: Engine, *, cwd: str | None = None) -> MCPServer:
    """The stdio server, its memory scoped to the side of `cwd` (default: where it runs)."""
    from ondeck.entrypoints.place import here

    return ToolServer(Store(settings=settings, engine=engine), Asker(place=here(settings, cwd)))


def instructions() -> str:
    from ondeck.entrypoints.mcp.memory_tools import INSTRUCTIONS as MEMORY

    return INSTRUCTIONS + MEMORY


@cache
def every_tool() -> tuple[Tool, ...]:
    """Every tool, made once a process (entrypoints/mcp/toolbox.py says why)."""
    from ondeck.entrypoints.mcp.memory_tools import add_memory_tools

    box = Toolbox()
    add_tools(box)
    add_memory_tools(box)
    return tuple(box.tools)


def add_tools(server: Toolbox) -> None:
    """The backlog's and the schedules' tools; each call serves `serving()`."""

    def actor(ctx: Context | None) -> str:
        return asker().actor or f"mcp:{_client_name(ctx)}"

    def call_by(ctx: Context | None, fn: Callable[[Call], T]) -> T:
        """`call`, its changes recorded as made by this tool's caller."""
        return call(lambda at: fn(at.acting_as(actor(ctx), asker().access)))

    def view() -> SideView:
        """The side the caller's place is in: its tasks and schedules only; none at all
        for a place of no side (sides are hard partitions, core/sides.py)."""
        if not settings().sides:
            return EVERY_SIDE
        place = asker().place
        if place.unclassified or not place.side:
            return SideView(sides_on=True)
        return SideView(sides_on=True, side=place.side)

    def side_of_new(named: str | None) -> str | None:
        """A new task's or schedule's side: the place's. Naming another is refused (a
        session writes to its own side only); a place of no side puts it in the inbox."""
        sides = settings().sides
        if not sides:
            return side_to_write(sides, named)
        place = asker().place
        own = None if place.unclassified else place.side
        if named is not None and named != own:
            where = f"side {own}" if own else "no side (its items wait in the inbox)"
            raise InvalidInput(
                f"side {named[:64]!r} is not this session's: it is in {where}; a person "
                "makes items of another side (ondeck task add --side, or the dashboard)"
            )
        return own

    @server.tool(annotations=READ_ONLY, sides=SideRule.ONE_SIDE)
    def get_context(
        project: Annotated[
            str | None, Field(description="Only this project (and unscoped).")
        ] = None,
        budget: Annotated[int, Field(ge=1, le=500)] = 20,
    ) -> ContextOut:
        """What is on deck today: reminders, running and due tasks, backlog top, warnings."""

        def run(at: Call) -> ContextOut:
            from ondeck.core.validation import check_project
            from ondeck.memory.brief import BriefRequest

            # The brief of this directory's side and (unless another is named) project.
            place = asker().place
            zone = settings().zone
            brief = BriefRequest(
                sides_on=bool(settings().sides),
                side=place.side,
                project=check_project(project) or place.project,
                unclassified=place.unclassified,
                cwd=place.cwd,
            )
            ctx = at.context(check_project(project), budget, brief=brief, view=view())
            return ContextOut(markdown=render(ctx, zone, Format.markdown), data=to_json(ctx, zone))

        return call(run)

    @server.tool(annotations=READ_ONLY, sides=SideRule.ONE_SIDE)
    def list_tasks(
        status: Annotated[
            str | None, Field(description=f"{', '.join(TaskStatus)}; comma-separated")
        ] = None,
        project: str | None = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 100,
    ) -> TaskList:
        """Tasks ordered by due date, priority and id."""

        def run(at: Call) -> TaskList:
            with at.read() as conn:
                # Every status unless some are named (the API lists the open ones).
                found = task_calls.list_tasks(
                    conn, at, view=view(), status=status or "all", project=project, limit=limit
                )
            return TaskList(tasks=[TaskOut(**t) for t in found])

        return call(run)

    @server.tool(sides=SideRule.NEW)
    def add_task(
        title: str,
        body: str = "",
        due_on: Annotated[str | None, Field(description="YYYY-MM-DD")] = None,
        priority: Annotated[int, Field(ge=0, le=9, description="0 most urgent")] = 2,
        project: str | None = None,
        side: SideArg = None,
        ctx: Context | None = None,
    ) -> TaskOut:
        """Add a task to the backlog, in this session's side."""

        def run(at: Call) -> TaskOut:
            due = parse_date(due_on, "due_on") if due_on else None
            own = side_of_new(side)
            with at.write() as conn:
                task = task_calls.create_task(
                    conn,
                    at,
                    title=title,
                    body=body,
                    priority=priority,
                    due_on=due,
                    project=project,
                    side=own,
                )
            return TaskOut(**task)

        return call_by(ctx, run)

    @server.tool(sides=SideRule.ONE_SIDE)
    def claim_task(
        task_id: Annotated[
            int | None, Field(description="Omit to take the next READY task.")
        ] = None,
        owner: Annotated[str | None, Field(description="Default mcp:<client name>.")] = None,
        duration: Annotated[
            str, Field(description="Lease length: 15m, 1h, 2d (at most 7d).")
        ] = "1h",
        project: Annotated[
            str | None, Field(description="With no task_id: only this project.")
        ] = None,
        ctx: Context | None = None,
    ) -> TaskOut:
        """Claim a task: RUNNING, held by you, with a lease token to present later."""

        def run(at: Call) -> TaskOut:
            with at.write() as conn:
                task = task_calls.claim(
                    conn,
                    at,
                    task_id,
                    owner=owner or at.actor,
                    duration=duration,
                    project=project,
                    view=view(),
                )
            return TaskOut(**task)

        return call_by(ctx, run)

    @server.tool(sides=SideRule.BY_ID)
    def renew_lease(
        task_id: int,
        token: int,
        duration: Annotated[
            str, Field(description="Lease length from now: 15m, 1h, 2d (at most 7d).")
        ] = "1h",
        ctx: Context | None = None,
    ) -> TaskOut:
        """Extend the lease you hold (present the token the claim returned)."""

        def run(at: Call) -> TaskOut:
            with at.write() as conn:
                task = task_calls.renew_lease(
                    conn, at, task_id, token=token, duration=duration, view=view()
                )
            return TaskOut(**task)

        return call_by(ctx, run)

    @server.tool(sides=SideRule.BY_ID)
    def complete_task(
        task_id: int,
        token: Annotated[
            int | None, Field(description="Required when the task is RUNNING.")
        ] = None,
        note: str | None = None,
        ctx: Context | None = None,
    ) -> TaskOut:
        """Mark a task done."""

        def run(at: Call) -> TaskOut:
            with at.write() as conn:
                task = task_calls.complete_task(
                    conn, at, task_id, token=token, note=note, view=view()
                )
            return TaskOut(**task)

        return call_by(ctx, run)

    @server.tool(sides=SideRule.BY_ID)
    def complete_and_claim_next(
        task_id: int,
        token: int,
        note: str | None = None,
        owner: Annotated[str | None, Field(description="Default mcp:<client name>.")] = None,
        duration: Annotated[
            str, Field(description="Lease length: 15m, 1h, 2d (at most 7d).")
        ] = "1h",
        project: Annotated[str | None, Field(description="Only this project.")] = None,
        ctx: Context | None = None,
    ) -> DoneAndNext:
        """Mark the task you hold done and claim the next READY one (next is null if none)."""

        def run(at: Call) -> DoneAndNext:
            with at.write() as conn:
                both = task_calls.complete_and_claim_next(
                    conn,
                    at,
                    task_id,
                    token=token,
                    note=note,
                    owner=owner or at.actor,
                    duration=duration,
                    project=project,
                    view=view(),
                )
            return DoneAndNext(**both)

        return call_by(ctx, run)

    @server.tool(sides=SideRule.BY_ID)
    def release_task(task_id: int, token: int, ctx: Context | None = None) -> TaskOut:
        """Give a claimed task back (READY) without finishing it."""

        def run(at: Call) -> TaskOut:
            with at.write() as conn:
                task = task_calls.release_task(conn, at, task_id, token=token, view=view())
            return TaskOut(**task)

        return call_by(ctx, run)

    @server.tool(annotations=READ_ONLY, sides=SideRule.ONE_SIDE)
    def list_schedules() -> ScheduleList:
        """The recurring schedules, with their rules in words and next due dates."""

        def run(at: Call) -> ScheduleList:
            with at.read() as conn:
                found = schedule_calls.list_schedules(conn, at, view=view())
            return ScheduleList(schedules=[ScheduleOut(**s) for s in found])

        return call(run)

    @server.tool(sides=SideRule.NEW)
    def add_schedule(
        title: str,
        rule: Annotated[
            str, Field(description="daily | weekly:MON,THU | monthly:1,15,last | every:3")
        ],
        kind: ScheduleKind = ScheduleKind.TASK,
        body: str = "",
        start_on: Annotated[str | None, Field(description="YYYY-MM-DD (default today)")] = None,
        project: str | None = None,
        priority: Annotated[int, Field(ge=0, le=9)] = 2,
        side: SideArg = None,
        ctx: Context | None = None,
    ) -> ScheduleOut:
        """Add a recurring schedule in this session's side; an invalid rule is refused with
        the reason."""

        def run(at: Call) -> ScheduleOut:
            start = parse_date(start_on, "start_on") if start_on else None
            own = side_of_new(side)
            with at.write() as conn:
                schedule = schedule_calls.create_schedule(
                    conn,
                    at,
                    title=title,
                    rule=rule,
                    kind=kind,
                    body=body,
                    start_on=start,
                    project=project,
                    priority=priority,
                    side=own,
                )
            return ScheduleOut(**schedule)

        return call_by(ctx, run)

    @server.tool(sides=SideRule.BY_ID)
    def pull_schedule_now(schedule_id: int, ctx: Context | None = None) -> PulledNow:
        """Make a schedule due today at the latest; the jobs loop fires it at its next tick.
        The note says what will come of it (nothing, if today already fired; nothing yet,
        if the jobs loop is not running)."""

        def run(at: Call) -> PulledNow:
            with at.write() as conn:
                pulled = schedule_calls.pull_now(conn, at, schedule_id, view=view())
            note = pulled.pop("note")
            return PulledNow(schedule=ScheduleOut(**pulled), note=note)

        return call_by(ctx, run)


def _client_name(ctx: Context | None) -> str:
    try:
        params = ctx.session.client_params if ctx is not None else None
        name = params.client_info.name if params is not None else None
    except Exception:  # in-process and stateless connections may carry no client info
        name = None
    return (name or "client")[:100]


def serve_stdio(settings: Settings) -> None:
    from ondeck.db import open_database

    build_server(settings, open_database(settings.url)).run("stdio")
