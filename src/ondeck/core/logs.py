"""One line per event on stderr, with the time in the configured zone."""

from __future__ import annotations

import logging
import sys
from datetime import datetime, tzinfo
from types import TracebackType

_ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]

# Log records reach stderr only where a process set that up (`ondeck serve`, `ondeck jobs`:
# `setup` below). Without this, Python's last-resort handler would print every warning a
# service logs under a CLI command's own one-line report of it: the same failure twice.
# It is set here, where every module that logs gets its logger (`logger`), and not in the
# `ondeck` package itself: importing `logging` costs a session hook a third of its budget
# on the server path (it imports nothing that logs).
logging.getLogger("ondeck").addHandler(logging.NullHandler())


def logger(name: str) -> logging.Logger:
    """ondeck's logger `name` (`ondeck.…`), quiet unless the process set up its output."""
    return logging.getLogger(name)


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
