"""What every command shares: settings (with `--db`), its call on the store, output helpers.

A command is one call (entrypoints/gateway.py): it reads the clock once, at its first need of
"now", and opens its transactions through the same `Call` as the API, the dashboard and the
MCP server. The database is opened only by a command that uses it.

In client mode (`ONDECK_SERVER_URL` or `--server`) there is no database here: a command
asks the server (`Cli.remote`, entrypoints/client/api.py) and renders its JSON; a command that
needs the database itself (`serve`, `jobs`, `backup`, …) is refused by `Cli.call`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

import typer

from ondeck.core import clock
from ondeck.core.errors import InvalidInput
from ondeck.core.sides import OWNER, Access
from ondeck.core.terminal import json_visible, visible
from ondeck.host.settings import Settings, load_settings

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

    from ondeck.core.sides import SideView
    from ondeck.entrypoints.client.api import ApiClient
    from ondeck.entrypoints.gateway import Call

_engines: list[Engine] = []


def dispose_engines() -> None:
    """Close what a command opened (in-process runs, such as tests, leave nothing open)."""
    while _engines:
        _engines.pop().dispose()


@dataclass
class Cli:
    db_url: str | None = None
    server_url: str | None = None
    actor: str = "cli"
    _settings: Settings | None = None
    _instant: datetime | None = None
    _call: Call | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(database_url=self.db_url, server_url=self.server_url)
        return self._settings

    @property
    def access(self) -> Access:
        """A command on this machine's database is its owner's: every side. In client mode
        the server's gate holds the command to what its token reaches."""
        return OWNER

    @property
    def client_mode(self) -> bool:
        """This machine talks to a server (ONDECK_SERVER_URL or --server) and has no database."""
        return self.settings.server_url is not None and self.db_url is None

    @property
    def remote(self) -> ApiClient:
        """The server of client mode."""
        from ondeck.entrypoints.client.api import ApiClient

        url = self.settings.server_url
        assert url is not None, "Cli.remote outside client mode"
        return ApiClient(url, self.settings.token_value)

    @property
    def database_url(self) -> str:
        """The database this command uses; refused in client mode (this machine has none)."""
        self.needs_database()
        return self.settings.url

    def fetch(
        self,
        method: str,
        path: str,
        local: Callable[[], Any],
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
    ) -> Any:
        """The JSON of the API's route `method path`: asked of the server in client mode,
        else made here by `local`, the service call the route makes. A command renders its
        human lines from this JSON alone, so both modes print the same thing."""
        if self.client_mode:
            return self.remote.json(method, path, params=params, body=body)
        return local()

    def needs_database(self) -> None:
        """Refuse a command that works on the database itself in client mode."""
        if self.client_mode:
            raise InvalidInput(
                f"this command needs the database, and this machine is a client of "
                f"{self.settings.server_url} (ONDECK_SERVER_URL): run it on the server, or "
                "give --db to use a database here"
            )

    @property
    def call(self) -> Call:
        """This command's call on the store (opens the database the first time)."""
        url = self.database_url
        if self._call is None:
            from ondeck.db import open_database
            from ondeck.entrypoints.gateway import Store

            engine = open_database(url)
            _engines.append(engine)
            self._call = Store(settings=self.settings, engine=engine).call(self.now())
        return self._call

    @property
    def engine(self) -> Engine:
        return self.call.engine

    def now(self) -> datetime:
        """The command's instant: the clock is read once, at the first need of it (a command
        such as `rule check` needs "today" and no database)."""
        if self._instant is None:
            self._instant = clock.now()
        return self._instant

    def today(self) -> date:
        return clock.today(self.now(), self.settings.zone)

    def id_view(self) -> SideView:
        """What a step on one item named by id may reach: any side (the owner's machine;
        the id names the item), as for an API token limited to no side."""
        from ondeck.core.sides import EVERY_SIDE

        return EVERY_SIDE

    def read(self) -> AbstractContextManager[Connection]:
        return self.call.read()

    def write(self) -> AbstractContextManager[Connection]:
        return self.call.write()

    def local(self, instant: datetime | None) -> str | None:
        if instant is None:
            return None
        return clock.local(instant, self.settings.zone).isoformat(timespec="seconds")


def cli_of(ctx: typer.Context) -> Cli:
    root = ctx.find_root()
    if not isinstance(root.obj, Cli):
        root.obj = Cli()
    return root.obj


def written(cli: Cli, change: Callable[[Connection], Any]) -> Callable[[], Any]:
    """The `local` of a command that changes something: `change`, a call module's function
    (`work/task_calls.py`, …) returning the route's JSON, in one write transaction here."""

    def local() -> Any:
        with cli.write() as conn:
            return change(conn)

    return local


def segment(value: str | int) -> str:
    """One path segment of a route, as typed (an id or a session's reference)."""
    from urllib.parse import quote

    return quote(str(value), safe="")


def parse_instant(text: str) -> datetime:
    """An instant of the API's JSON (ISO-8601 with the zone's offset)."""
    return datetime.fromisoformat(text)


# Every line a command prints goes through these: what was stored came from outside, and a
# terminal must show it, never obey it (core/terminal.py). tests/cli/test_terminal_text.py
# holds the commands to them.


def echo(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """One human line (or lines) on stdout (stderr with `err`), control characters shown."""
    typer.echo(visible(text), err=err, nl=nl)


def write_json_lines(line: str) -> None:
    """JSON as it is (a JSONL export's line), with no control character left raw."""
    sys.stdout.write(json_visible(line))


def print_json(data: Any) -> None:
    write_json_lines(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def print_table(
    columns: list[str],
    rows: list[list[Any]],
    *,
    title: str | None = None,
    cut: tuple[str, ...] = (),
    fold: tuple[str, ...] = (),
) -> None:
    """A table of one line a row: no cell is folded onto a second line, so a date or an id
    is never broken. The columns named in `cut` (titles, texts) share the terminal's width
    that the others leave and are cut with an ellipsis where they do not fit; then a long
    cell of another column (a holder) is cut down to KEEP cells; past that the row is as
    wide as it must be. A column named in `fold` (an event's details, whole or not at all)
    shares the width as a cut one does, and folds its text onto more lines instead."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    # Cells are Text, not str: rich reads a str as markup, and a stored "[link=…]" or
    # "[/]" would be obeyed or refused as markup instead of shown.
    cells = [[Text("" if v is None else visible(str(v))) for v in row] for row in rows]
    natural = [
        max([Text(name).cell_len, *(row[i].cell_len for row in cells)])
        for i, name in enumerate(columns)
    ]
    cuttable = [name in cut or name in fold for name in columns]
    widths = _widths(natural, cuttable, console.width - _RULES * (len(columns) - 1))
    table = Table(
        title=None if title is None else Text(visible(title)),
        show_edge=False,
        pad_edge=False,
        header_style="bold",
    )
    for name, width in zip(columns, widths, strict=True):
        folds = name in fold
        table.add_column(
            name,
            no_wrap=not folds,
            overflow="fold" if folds else "ellipsis",
            min_width=width,
            max_width=width,
        )
    for row in cells:
        table.add_row(*row)
    # Never narrower than the widths chosen: rich would fold the cells to fit.
    console.width = max(console.width, sum(widths) + _RULES * (len(columns) - 1))
    console.print(table)


# Between two columns: a space, the rule, a space.
_RULES = 3
# The least a cut column is given, so that a title still says something ("Write…").
CUT_MIN = 6
# What a long cell of a column not cut keeps: a date and time, an id, a holder's name.
KEEP = 25


def _widths(natural: list[int], cuttable: list[bool], room: int) -> list[int]:
    """Each column's width within `room` cells: the cut columns give first (the widest
    first, down to CUT_MIN), then the other columns wider than KEEP (down to KEEP)."""
    widths = list(natural)
    for floor, which in ((CUT_MIN, cuttable), (KEEP, [not c for c in cuttable])):
        while sum(widths) > room:
            candidates = [i for i, w in enumerate(widths) if which[i] and w > floor]
            if not candidates:
                break
            widest = max(candidates, key=widths.__getitem__)
            widths[widest] -= 1
    return widths
