"""The seeds' spellings of constructor arguments.

The specifications construct backends from their dataclass fields
(``InMemoryFilesystem(_read_only=True)``, ``HostFilesystem(_root=...,
_mount_point="/workspace")``). The constructors take those keywords as well
as their own; ``either`` settles which one the caller gave.
"""

from __future__ import annotations

from typing import TypeVar

from .._errors import InvalidArgumentError

T = TypeVar("T")


def either(name: str, value: T, default: T, seed_value: T | None) -> T:
    """``value``, or ``seed_value`` if the caller gave the argument as ``_<name>``.

    Raises:
        InvalidArgumentError: Both were given, with different values.
    """
    if seed_value is None:
        return value
    if value != default and value != seed_value:
        raise InvalidArgumentError(f"{name} and _{name} given with different values", None)
    return seed_value
