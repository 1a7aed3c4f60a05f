"""The side a command's tasks and schedules are read in and written to: `--side`, else the
side of the directory it runs in (entrypoints/place.py, the session hooks' rules), so an
agent running `ondeck task …` in a work repository sees and makes work items only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from ondeck.core.sides import SideView
    from ondeck.host.settings import Settings

SideOpt = Annotated[
    str | None,
    typer.Option("--side", help="This side (default: the side of this directory)."),
]
InboxOpt = Annotated[
    bool,
    typer.Option("--unclassified", help="The inbox: items given no side yet (seen by no side)."),
]


def read_view(settings: Settings, side: str | None, inbox: bool = False) -> SideView:
    """Whose items to read: `--side`, the inbox, else this directory's side (refused with
    the reason when it has none)."""
    from ondeck.core.sides import SideView
    from ondeck.entrypoints.place import scope_for

    scope = scope_for(settings, side=side, inbox=inbox)
    return SideView(sides_on=scope.sides_on, side=scope.side, inbox=scope.inbox)


def view_params(view: SideView) -> dict[str, Any]:
    """The view as the API's query (client mode)."""
    if not view.sides_on:
        return {}
    return {"unclassified": True} if view.inbox else {"side": view.side}


def write_side(settings: Settings, side: str | None) -> str | None:
    """A new item's side: `--side`, else this directory's; in a directory of no side it is
    refused with the reason (as `note add` is): a person names the side."""
    from ondeck.core.errors import InvalidInput
    from ondeck.core.sides import side_to_write

    if side is not None or not settings.sides:
        return side_to_write(settings.sides, side)
    from ondeck.entrypoints.place import here

    found = here(settings)
    if found.unclassified or found.side is None:
        raise InvalidInput(
            f"this directory belongs to no side ({found.reason}): give --side "
            f"({', '.join(sorted(settings.sides))})"
        )
    return found.side
