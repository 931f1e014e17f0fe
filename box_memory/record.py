"""Value classes without `@dataclass`: compared, hashed and shown by their fields.

Every command imports the modules that define the package's small value types (a result, a store
entry, a workspace), and `@dataclass` builds each class's methods from source at import: 0.3-0.6
ms per class, paid by every command's start whether or not it uses them. A class here lists its
fields in `_fields` (in order) and writes its own `__init__`; `Record` is compared by value (and
unhashable, as a mutable dataclass is), `Frozen` also refuses assignment and is hashed by value.
Only the standard library here.
"""

from __future__ import annotations

from typing import Any


class Record:
    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, k) for k in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined] # same class

    __hash__ = None  # type: ignore[assignment] # mutable: compared by value, so not hashable

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields)
        return f"{type(self).__qualname__}({inner})"


class Frozen(Record):
    """Read-only once made: `__init__` sets its fields with `object.__setattr__`."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a {type(self).__name__}")

    def __hash__(self) -> int:  # type: ignore[override] # Record's is None
        return hash(self._values())
