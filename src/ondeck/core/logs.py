"""One line per event on stderr, with the time in the configured zone."""

from __future__ import annotations

import logging
import sys
from datetime import datetime, tzinfo
from types import TracebackType

_ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]


class _ZoneFormatter(logging.Formatter):
    def __init__(self, zone: tzinfo) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self.zone = zone

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return datetime.fromtimestamp(record.created, self.zone).isoformat(timespec="seconds")

    def formatException(self, ei: _ExcInfo) -> str:
        # Keep the traceback (a failing step must be debuggable) but as one record.
        return super().formatException(ei).replace("\n", "\n    ")


def setup(zone: tzinfo, level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_ZoneFormatter(zone))
    root = logging.getLogger("ondeck")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
