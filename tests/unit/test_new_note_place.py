"""Where a new note goes (memory/notes_calls.py `new_note_place`), the one rule the CLI's
`note add` and the MCP tool `remember` both use."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ondeck.core.errors import InvalidInput
from ondeck.memory.notes_calls import new_note_place

SIDES = {"work": ["~/work"], "home": ["~/home"]}


@dataclass
class Dir:
    side: str | None = "work"
    project: str | None = "api"
    unclassified: bool = False
    reason: str = "matched ~/work"


@dataclass
class Writer:
    project: str | None


def test_it_takes_the_directory_side_and_project_when_none_are_named() -> None:
    assert new_note_place(SIDES, side=None, project=None, whole_side=False, here=Dir) == (
        "work",
        "api",
    )


def test_a_named_project_or_the_whole_side_wins_over_the_directory() -> None:
    assert new_note_place(SIDES, side=None, project="web", whole_side=False, here=Dir) == (
        "work",
        "web",
    )
    assert new_note_place(SIDES, side=None, project=None, whole_side=True, here=Dir) == (
        "work",
        None,
    )


def test_the_directory_project_is_not_carried_to_another_side() -> None:
    assert new_note_place(SIDES, side="home", project=None, whole_side=False, here=Dir) == (
        "home",
        None,
    )


def test_the_writing_session_project_comes_before_the_directory() -> None:
    def unread() -> Dir:
        raise AssertionError("the directory is not read when a session writes")

    place = new_note_place(
        SIDES, side="work", project=None, whole_side=False, writer=Writer("cli"), here=unread
    )
    assert place == ("work", "cli")


def test_without_sides_the_directory_project_is_taken() -> None:
    assert new_note_place({}, side=None, project=None, whole_side=False, here=Dir) == (
        None,
        "api",
    )


def test_an_unclassified_directory_is_refused_when_no_side_is_named() -> None:
    with pytest.raises(InvalidInput, match="belongs to no side"):
        new_note_place(
            SIDES,
            side=None,
            project=None,
            whole_side=False,
            here=lambda: Dir(side=None, unclassified=True, reason="no rule"),
        )
