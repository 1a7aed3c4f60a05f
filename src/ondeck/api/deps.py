"""What every route needs: the settings, the engine, the time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import Connection, Engine

from ondeck import clock
from ondeck.config import Settings
from ondeck.db.engine import translate_errors


@dataclass
class Store:
    settings: Settings
    engine: Engine

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with translate_errors(), self.engine.connect() as conn:
            conn = conn.execution_options(readonly=True)
            with conn.begin():
                yield conn

    @contextmanager
    def write(self) -> Iterator[Connection]:
        with translate_errors(), self.engine.begin() as conn:
            yield conn

    def now(self) -> datetime:
        return clock.now()


def _store(request: Request) -> Store:
    return request.app.state.store


StoreDep = Annotated[Store, Depends(_store)]
