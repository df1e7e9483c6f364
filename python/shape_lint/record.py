"""Small value classes for the CLI's start-up path, without :mod:`dataclasses`.

``import dataclasses`` imports :mod:`inspect` (and with it ``ast``, ``dis`` and ``tokenize``'s
users), and each ``@dataclass`` compiles its methods with ``exec``: together about a quarter of
the instructions of ``shape-lint check`` on an empty file, paid by every run of the CLI, the
pre-commit hook and each flake8 process. :class:`Record` gives what the CLI used of them:
keyword (or positional) construction with defaults and default factories, equality, ``repr``,
``replace``, and immutability with hashing for the frozen ones.

A record class declares its fields as a dataclass does, once, in order: ``name: type`` for a
required one, ``name: type = default``, or ``name: type = factory(f)`` for a fresh ``f()`` per
instance. Names that start with ``_`` are the class's own settings (``_frozen``, ``_hidden``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def factory(make: Callable[[], Any]) -> Any:
    """A default made afresh for each instance (``factory(list)``)."""
    return _Factory(make)


class Record:
    #: (name, default) of each field, in order: made from the class's annotations
    _fields: tuple[tuple[str, Any], ...] = ()
    _names: frozenset[str] = frozenset()
    #: no assignment after construction; equal records hash equal
    _frozen = False
    #: fields left out of ``==`` and ``repr``
    _hidden: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__annotations__")
        if own is None:
            own = getattr(cls, "__annotations__", {})
        cls._fields = tuple((n, cls.__dict__.get(n, REQUIRED)) for n in own if not n.startswith("_"))
        cls._names = frozenset(n for n, _ in cls._fields)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}() takes {len(fields)} positional arguments")
        set_ = object.__setattr__
        for i, (name, default) in enumerate(fields):
            if i < len(args):
                if name in kwargs:
                    raise TypeError(f"{type(self).__name__}() got multiple values for {name!r}")
                value = args[i]
            elif name in kwargs:
                value = kwargs.pop(name)
            elif default is REQUIRED:
                raise TypeError(f"{type(self).__name__}() missing argument {name!r}")
            elif isinstance(default, _Factory):
                value = default.make()
            else:
                value = default
            set_(self, name, value)
        if kwargs:
            raise TypeError(f"{type(self).__name__}() got unexpected arguments {sorted(kwargs)}")

    def __setattr__(self, name: str, value: Any) -> None:
        if self._frozen:
            raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")
        if name not in self._names:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        object.__setattr__(self, name, value)

    def _key(self) -> tuple[Any, ...]:
        hidden = self._hidden
        return tuple(getattr(self, n) for n, _ in self._fields if n not in hidden)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        if not self._frozen:
            raise TypeError(f"unhashable type: {type(self).__name__!r}")
        return hash(self._key())

    def __repr__(self) -> str:
        hidden = self._hidden
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n, _ in self._fields if n not in hidden)
        return f"{type(self).__name__}({inner})"

    def replace(self, **changes: Any) -> Any:
        """A copy with ``changes`` (``dataclasses.replace``)."""
        new = object.__new__(type(self))
        set_ = object.__setattr__
        for name, _ in self._fields:
            set_(new, name, changes.pop(name) if name in changes else getattr(self, name))
        if changes:
            raise TypeError(f"{type(self).__name__} has no fields {sorted(changes)}")
        return new
