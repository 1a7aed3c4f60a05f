"""core/frozen.Frozen: what the hooks' records used of `@dataclass(frozen=True, kw_only=True)`."""

from __future__ import annotations

import pytest

from ondeck.core.frozen import Frozen


class Place(Frozen):
    root: str
    branch: str | None = None
    remotes: dict[str, str] = {}  # noqa: RUF012 - Frozen copies it for each record


class Pair(Frozen, kw_only=False):
    left: int
    right: int = 0


def test_it_takes_keywords_with_defaults_and_a_fresh_mutable_default_each_time() -> None:
    a, b = Place(root="/r"), Place(root="/r")
    assert (a.root, a.branch, a.remotes) == ("/r", None, {})
    assert a.remotes is not b.remotes
    with pytest.raises(TypeError, match="missing field 'root'"):
        Place()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected"):
        Place(root="/r", other=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional"):
        Place("/r")  # type: ignore[misc]


def test_it_is_frozen_equal_and_hashed_by_its_fields() -> None:
    a = Pair(1, 2)
    with pytest.raises(AttributeError, match="frozen"):
        a.left = 3  # type: ignore[misc]
    assert a == Pair(left=1, right=2) and a != Pair(1) and hash(a) == hash(Pair(1, 2))
    assert a != ("left", 1)
    assert repr(a) == "Pair(left=1, right=2)" and Pair._fields == ("left", "right")
    assert a.replace(right=5) == Pair(1, 5)
