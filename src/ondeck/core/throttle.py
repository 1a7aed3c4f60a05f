"""Refusing a burst of wrong tokens from one caller: a sliding window per caller, named by
a string (web/auth.throttle_key: a remote address, or a user of this machine), called the
address below.

After `limit` failures within `window` seconds from one address, that address is refused
(HTTP 429 with `Retry-After`) until the oldest of those failures leaves the window, even
with the right token, so guessing learns nothing while refused. Other addresses are not
affected. In-process and bounded: at most `max_addresses` addresses are remembered; when
full, forgotten first are those whose failures have all left the window, then the oldest.

Time is an argument (seconds, any monotonic origin: the request's instant as a timestamp).
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass, field

LIMIT = 10
WINDOW_SECONDS = 60.0
MAX_ADDRESSES = 4096


@dataclass(eq=False)
class FailureWindow:
    limit: int = LIMIT
    window: float = WINDOW_SECONDS
    max_addresses: int = MAX_ADDRESSES
    _failures: dict[str, deque[float]] = field(default_factory=dict)
    # The dashboard's login runs in a worker thread, the API's check on the event loop.
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def counting(self, now: float) -> bool:
        """Whether any failure is still within the window, from anyone: when none is, the
        caller need not find out who asks (a look-up that costs more than this)."""
        with self._lock:
            if self._failures:
                for address in [a for a in self._failures if not self._recent(a, now)]:
                    del self._failures[address]
            return bool(self._failures)

    def retry_after(self, address: str, now: float) -> int | None:
        """Seconds until `address` may try again, or None when it is not refused."""
        with self._lock:
            times = self._recent(address, now)
            if times is None or len(times) < self.limit:
                return None
            return max(1, math.ceil(times[0] + self.window - now))

    def fail(self, address: str, now: float) -> bool:
        """Count a wrong token from `address`; True when this failure starts a refusal."""
        with self._lock:
            times = self._recent(address, now)
            if times is None:
                self._make_room(now)
                times = self._failures[address] = deque(maxlen=self.limit)
            times.append(now)
            return len(times) >= self.limit

    def _recent(self, address: str, now: float) -> deque[float] | None:
        times = self._failures.get(address)
        if times is None:
            return None
        while times and times[0] <= now - self.window:
            times.popleft()
        return times

    def _make_room(self, now: float) -> None:
        if len(self._failures) < self.max_addresses:
            return
        for address in [
            a for a, t in self._failures.items() if not t or t[-1] <= now - self.window
        ]:
            del self._failures[address]
        while len(self._failures) >= self.max_addresses:
            del self._failures[next(iter(self._failures))]  # the address seen first
