"""What every command shares: settings (with `--db`), the engine, output helpers."""

from __future__ import annotations

import json
import sys
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import typer
from sqlalchemy import Connection, Engine

from ondeck.core import clock
from ondeck.core.config import Settings, load_settings
from ondeck.db.engine import reading, writing

_engines: list[Engine] = []


def dispose_engines() -> None:
    """Close what a command opened (in-process runs, such as tests, leave nothing open)."""
    while _engines:
        _engines.pop().dispose()


@dataclass
class Cli:
    db_url: str | None = None
    _settings: Settings | None = None
    _engine: Engine | None = None
    actor: str = "cli"
    _now: datetime | None = field(default=None)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(database_url=self.db_url)
        return self._settings

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            from ondeck.db import open_database

            self._engine = open_database(self.settings.url)
            _engines.append(self._engine)
        return self._engine

    def now(self) -> datetime:
        return clock.now()

    def today(self) -> date:
        return clock.today(self.now(), self.settings.zone)

    def read(self) -> AbstractContextManager[Connection]:
        return reading(self.engine)

    def write(self) -> AbstractContextManager[Connection]:
        return writing(self.engine)

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
