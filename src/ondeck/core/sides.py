"""Which side's tasks and schedules a reader sees, and the side a new one is given.

Sides are hard partitions: with sides configured every
task and schedule belongs to one, and a session, a claim of the next task, the context and
every list see one side at a time. A row without a side while sides are configured waits
in the inbox: no session sees it, only a person asking for the inbox, who gives it a side.

Standard library only: the session hook's context reads these words too.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from ondeck.core.errors import InvalidInput

INBOX = "inbox"


@dataclass(frozen=True, kw_only=True, slots=True)
class SideView:
    """`sides_on` False: one pool, every row. Else the rows of `side`, or (`inbox`) the
    rows without a side; with neither, none at all (fail closed: an unplaced reader)."""

    sides_on: bool
    side: str | None = None
    inbox: bool = False

    @property
    def closed(self) -> bool:
        return self.sides_on and not self.inbox and not self.side

    def describe(self) -> str:
        if not self.sides_on:
            return "every side"
        if self.inbox:
            return "the inbox (no side yet)"
        return f"side {self.side}" if self.side else "no side"

    def where(self, column: str) -> str:
        """The predicate in plain SQL; `:side` is bound to `self.side` (`params`)."""
        if not self.sides_on:
            return "1 = 1"
        if self.inbox:
            return f"{column} IS NULL"
        if not self.side:
            return "1 = 0"
        return f"{column} = :side"

    def sees(self, side: str | None) -> bool:
        """Whether an item of `side` is one this reader may see."""
        if not self.sides_on:
            return True
        if self.inbox:
            return side is None
        return bool(self.side) and side == self.side


EVERY_SIDE = SideView(sides_on=False)


def view_of(
    sides: Collection[str], side: str | None, *, inbox: bool = False, origin: str = "side"
) -> SideView:
    """The view of a reader naming `side` (or the inbox) with `sides` configured."""
    if not sides:
        return EVERY_SIDE
    if inbox:
        return SideView(sides_on=True, inbox=True)
    if side is not None and side not in sides:
        raise InvalidInput(
            f"{origin} {side[:64]!r} is not configured: use one of {', '.join(sorted(sides))}"
        )
    return SideView(sides_on=True, side=side)


def side_to_write(
    sides: Collection[str], side: str | None, *, where: str = "", required: bool = False
) -> str | None:
    """The side a new task or schedule is stored with: `side` when sides are configured
    (None: the inbox, unless `required`), refused when they are not and one is named."""
    if not sides:
        if side is not None:
            raise InvalidInput("no sides are configured (one pool): name no side")
        return None
    if side is None:
        if required:
            raise InvalidInput(
                f"give a side{where}: one of {', '.join(sorted(sides))} (every task and "
                "schedule belongs to one)"
            )
        return None
    if side not in sides:
        raise InvalidInput(
            f"side {side[:64]!r} is not configured: use one of {', '.join(sorted(sides))}"
        )
    return side


def check_side(value: str | None) -> str | None:
    """A side's name as stored (None: no side). Whether it is configured is the caller's
    to check (`side_to_write`): the services know no settings."""
    if value is None:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= 64 or value != value.strip():
        raise InvalidInput(f"side {str(value)[:80]!r} is not valid: 1 to 64 characters")
    return value
