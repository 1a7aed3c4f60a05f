"""The side a dashboard page shows: one at a time, chosen in the page (the first configured
by default), or the inbox of items given no side yet, which no session sees. A new task or
schedule's side is a required choice on its form."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from ondeck.core.errors import InvalidInput
from ondeck.core.sides import EVERY_SIDE, SideView
from ondeck.entrypoints.web.render import store_of

INBOX = "(inbox)"


def chosen(request: Request, side: str) -> tuple[SideView, str]:
    """(the view, the selector's value): the side asked for, the inbox, else the first."""
    sides = sorted(store_of(request).settings.sides)
    if not sides:
        return EVERY_SIDE, ""
    if side == INBOX:
        return SideView(sides_on=True, inbox=True), INBOX
    name = side if side in sides else sides[0]
    return SideView(sides_on=True, side=name), name


def values(request: Request, selected: str) -> dict[str, Any]:
    """What the templates' side selector and forms need."""
    return {"sides": sorted(store_of(request).settings.sides), "side": selected, "inbox": INBOX}


def to_write(request: Request, side: str) -> str | None:
    """A form's side: required (a choice of the configured ones) when sides are configured."""
    from ondeck.core.sides import side_to_write

    sides = store_of(request).settings.sides
    named = side.strip() or None
    if named == INBOX:
        raise InvalidInput("choose a side: the inbox holds items that have none yet")
    return side_to_write(sides, named if sides else None, where=" (the form's side)", required=True)
