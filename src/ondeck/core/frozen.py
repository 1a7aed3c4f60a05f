"""Frozen, keyword-only records for the modules a session hook imports, without `dataclasses`.

A hook in client mode makes its whole record itself (git, the marker file, the classification,
the scrubber) and its whole process is measured against `python -c pass`. Importing
`dataclasses` costs about a `python -c pass` on its own (it imports `inspect`, and with it
`ast`, `dis` and `tokenize`), and each `@dataclass` writes and compiles its methods at import.
`Frozen` gives what those modules used of `@dataclass(frozen=True, kw_only=True)`: keyword
construction with defaults, equality and hashing by fields, a repr, no assignment, and
`replace`. mypy reads it as a dataclass (`dataclass_transform`).

    class Repo(Frozen):
        root: str | None = None
        remotes: dict[str, str] = {}   # a fresh copy for each record, as default_factory

Fields are the class's annotations (its bases' first), in order. `class X(Frozen,
kw_only=False)` takes them positionally too.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from typing import Any, ClassVar, Self, dataclass_transform
else:

    def dataclass_transform(**_: object) -> object:
        return lambda cls: cls


_MISSING = object()


@dataclass_transform(kw_only_default=True, frozen_default=True)
class Frozen:
    _fields: ClassVar[tuple[str, ...]] = ()
    _defaults: ClassVar[dict[str, Any]] = {}

    _positional: ClassVar[bool] = False

    def __init_subclass__(cls, *, kw_only: bool = True, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._positional = not kw_only
        fields = list(cls._fields)
        defaults = dict(cls._defaults)
        # Not inspect.get_annotations: `inspect` is what this module spares a hook.
        for name, kind in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
            if name.startswith("_") or name in fields or str(kind).startswith("ClassVar"):
                continue
            fields.append(name)
            value = cls.__dict__.get(name, _MISSING)
            if value is not _MISSING:
                defaults[name] = value
                delattr(cls, name)  # the instance holds it (a class value would shadow nothing)
        cls._fields = tuple(fields)
        cls._defaults = defaults

    def __init__(self, *args: Any, **values: Any) -> None:
        if args:  # `class X(Frozen, kw_only=False)`: the fields in order, as a dataclass's
            if not self._positional or len(args) > len(self._fields):
                raise TypeError(f"{type(self).__name__}: too many positional arguments")
            given = dict(zip(self._fields, args, strict=False))
            if set(given) & set(values):
                raise TypeError(f"{type(self).__name__}: a field given twice")
            values = {**given, **values}
        unknown = set(values) - set(self._fields)
        if unknown:
            fields = "field" if len(unknown) == 1 else "fields"
            raise TypeError(f"{type(self).__name__}: unexpected {fields} {sorted(unknown)}")
        for name in self._fields:
            if name in values:
                value = values[name]
            elif name in self._defaults:
                value = self._defaults[name]
                if isinstance(value, (dict, list)):  # a fresh one each time: default_factory
                    value = type(value)(value)
            else:
                raise TypeError(f"{type(self).__name__}: missing field {name!r}")
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {name!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({shown})"

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (as `dataclasses.replace`)."""
        values = {name: getattr(self, name) for name in self._fields}
        return type(self)(**{**values, **changes})
