"""Where a command or an MCP server runs: the side and project of its working directory,
decided by the same rules as the session hooks (sessions/classify.py), and the memory
scope that follows from it.

Why: the agent runs `ondeck recall …` and the MCP server from the session's directory, so
by default both read the memory of the side that directory belongs to, never another's.
A person gives `--side` to read another side, or `--unclassified` for the inbox.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ondeck.core.errors import InvalidInput
from ondeck.core.memory import Scope
from ondeck.core.sides import EVERY_SIDE, configured, view_of

if TYPE_CHECKING:
    from ondeck.host.settings import Settings


@dataclass(frozen=True, kw_only=True, slots=True)
class Here:
    cwd: str | None
    side: str | None
    project: str | None
    unclassified: bool
    reason: str
    git_root: str | None = None
    branch: str | None = None
    head: str | None = None


def here(settings: Settings, cwd: str | None = None) -> Here:
    """The classification of `cwd` (default: the current directory)."""
    from ondeck.host.quick_settings_read import hook_config_of
    from ondeck.sessions.capture.events import observe

    try:
        place = cwd or os.getcwd()
    except OSError:  # the directory was removed under us
        place = None
    facts, found = observe(place, hook_config_of(settings))
    return Here(
        cwd=place,
        side=found.side.value,
        project=found.project.value,
        unclassified=found.unclassified,
        reason=found.reason,
        git_root=facts.get("git_root"),
        branch=facts.get("branch"),
        head=facts.get("head"),
    )


def scope_for(
    settings: Settings,
    *,
    side: str | None = None,
    project: str | None = None,
    inbox: bool = False,
    cwd: str | None = None,
) -> Scope:
    """Whose memory to read: the side given, else the side of the working directory."""
    sides = settings.sides
    if inbox:
        if side:
            raise InvalidInput("give either --side or --unclassified, not both")
        return Scope(view=view_of(sides, None, inbox=True), project=project)
    if not sides:
        if side:
            raise InvalidInput("no sides are configured (one pool): leave --side out")
        return Scope(view=EVERY_SIDE, project=project)
    if not side:
        found = here(settings, cwd)
        if found.unclassified or found.side is None:
            raise InvalidInput(
                f"this directory belongs to no side ({found.reason}): give --side "
                f"({', '.join(sorted(sides))}), or --unclassified to read the inbox"
            )
        side = found.side
    return Scope(view=view_of(sides, configured(sides, side)), project=project)
