"""Who makes a call, as the call modules (`work/task_calls.py`, …) need it: the settings,
the actor its changes are recorded as, and its one instant.

The API's `Call`, the MCP server's call and the CLI's command each have these, so one
function per operation serves all three: the route's JSON is made in one place, and the
CLI's local answer (a machine with no server) is the same JSON the server would send.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ondeck.core.sides import Access
    from ondeck.host.settings import Settings


class Caller(Protocol):
    @property
    def settings(self) -> Settings: ...

    @property
    def actor(self) -> str: ...

    @property
    def access(self) -> Access:
        """What the caller may see and write (core/sides.py): every door's one gate."""
        ...

    def now(self) -> datetime:
        """The call's instant: the same however often it is asked."""
        ...

    def today(self) -> date:
        """The day of `now` in the configured zone."""
        ...
