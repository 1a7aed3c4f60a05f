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

from ondeck.core.errors import Forbidden, InvalidInput, NotFound

INBOX = "inbox"


def unconfigured(sides: Collection[str], side: str, *, origin: str = "side") -> InvalidInput:
    """The one refusal of a side the settings do not give (every door says it alike)."""
    if not sides:
        return InvalidInput(
            f"no sides are configured (one pool): name no {origin}, not {side[:64]!r}"
        )
    return InvalidInput(
        f"{origin} {side[:64]!r} is not configured: use one of {', '.join(sorted(sides))}"
    )


def configured(sides: Collection[str], side: str, *, origin: str = "side") -> str:
    """`side` when the settings give it; else the one refusal."""
    if side not in sides:
        raise unconfigured(sides, side, origin=origin)
    return side


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
    if side is not None:
        configured(sides, side, origin=origin)
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
    return configured(sides, side)


def check_side(value: str | None) -> str | None:
    """A side's name as stored (None: no side). Whether it is configured is the caller's
    to check (`side_to_write`): the services know no settings."""
    if value is None:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= 64 or value != value.strip():
        raise InvalidInput(f"side {str(value)[:80]!r} is not valid: 1 to 64 characters")
    return value


@dataclass(frozen=True, kw_only=True, slots=True)
class Access:
    """What a caller may see and write, made once where the caller came from (a device
    token, the owner's command, an MCP client, a dashboard login) and carried by its call.

    Every door reads and writes through it (entrypoints/gateway.py `Call`): lists through
    `reader`, an item named by id through `reach`, a new or moved item's side through
    `to_write`. The owner (`side` None) reaches every side and the inbox; a caller held to
    one side reaches that side only: the other side's items are "not found", naming the
    other side or the inbox is refused, and nothing it writes lands elsewhere.
    """

    # The one side this caller sees and writes; None: every side and the inbox (the owner).
    side: str | None = None
    # False: it may only read (a `read` token).
    write: bool = True
    # Who it is, for refusals: "token 'laptop'", "this session".
    who: str = "the owner"

    def own(self, side: str | None, *, inbox: bool = False) -> str | None:
        """`side` (or, held to one, its own side); naming another side or the inbox is
        refused."""
        if self.side is None:
            return side
        if inbox or (side is not None and side != self.side):
            asked = "the inbox" if inbox else f"side {side!r}"
            raise Forbidden(f"{self.who} sees and writes side {self.side!r} only, not {asked}")
        return self.side

    def reader(
        self,
        sides: Collection[str],
        side: str | None,
        *,
        inbox: bool = False,
        required: bool = True,
        asked: str = "side",
    ) -> SideView:
        """The view of a list this caller asks for: the side it names (or its own). With
        sides configured and `required`, naming none is refused (sides are read one at a
        time); not `required` (the owner's lists of sessions), none is every side."""
        side = self.own(side, inbox=inbox)
        if side is not None:
            configured(sides, side, origin=asked)
        if sides and side is None and not inbox:
            if required:
                raise InvalidInput(
                    f"give {asked}: one of {', '.join(sorted(sides))} (items are never read "
                    "across sides), or unclassified=true for the inbox"
                )
            return EVERY_SIDE
        return view_of(sides, side, inbox=inbox, origin=asked)

    def reach(self, sides: Collection[str]) -> SideView:
        """What a step on one item named by id may reach: every side for the owner (the id
        names it), its own side only for a caller held to one."""
        if self.side is None or not sides:
            return EVERY_SIDE
        return SideView(sides_on=True, side=self.side)

    def check_reaches(self, sides: Collection[str], side: str | None, what: str) -> None:
        """Refuse (not found) an item of another side: its existence is not told."""
        if not self.reach(sides).sees(side):
            raise NotFound(f"no {what}")

    def to_write(
        self, sides: Collection[str], side: str | None, *, required: bool = True
    ) -> str | None:
        """The side a new (or moved) item gets: the one named, or this caller's."""
        self.may_write()
        return side_to_write(sides, self.own(side), required=required)

    def owner_only(self, what: str, why: str) -> None:
        """Refuse `what` to a caller held to one side: `why` it would reach past it."""
        if self.side is not None:
            raise Forbidden(f"{self.who} sees and writes side {self.side!r} only: {what} {why}")

    def may_write(self) -> None:
        if not self.write:
            raise Forbidden(f"{self.who} may only read")


OWNER = Access()
