"""What every command shares: settings (with `--db`), its call on the store, output helpers.

A command is one call (entrypoints/store.py): it reads the clock once, at its first need of
"now", and opens its transactions through the same `Call` as the API, the dashboard and the
MCP server. The database is opened only by a command that uses it.
"""

from __future__ import annotations

import json
import sys
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import typer
from sqlalchemy import Connection, Engine

from ondeck.core import clock
from ondeck.core.config import Settings, load_settings
from ondeck.entrypoints.store import Call, Store

_engines: list[Engine] = []


def dispose_engines() -> None:
    """Close what a command opened (in-process runs, such as tests, leave nothing open)."""
    while _engines:
        _engines.pop().dispose()


@dataclass
class Cli:
    db_url: str | None = None
    actor: str = "cli"
    _settings: Settings | None = None
    _instant: datetime | None = None
    _call: Call | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(database_url=self.db_url)
        return self._settings

    @property
    def call(self) -> Call:
        """This command's call on the store (opens the database the first time)."""
        if self._call is None:
            from ondeck.db import open_database

            engine = open_database(self.settings.url)
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


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def print_table(columns: list[str], rows: list[list[Any]], *, title: str | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*["" if v is None else str(v) for v in row])
    Console().print(table)
