"""What every route needs: the settings, the engine, the time."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import Connection, Engine

from ondeck.core import clock
from ondeck.core.config import Settings
from ondeck.db.engine import reading, writing


@dataclass
class Store:
    settings: Settings
    engine: Engine

    def read(self) -> AbstractContextManager[Connection]:
        return reading(self.engine)

    def write(self) -> AbstractContextManager[Connection]:
        return writing(self.engine)

    def now(self) -> datetime:
        return clock.now()


def _store(request: Request) -> Store:
    return request.app.state.store


StoreDep = Annotated[Store, Depends(_store)]
