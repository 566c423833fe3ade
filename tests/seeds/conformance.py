"""Checks that an object has the shape a specification's ``Protocol`` gives it.

The seeds define their protocols as ``typing.Protocol`` classes (not runtime
checkable). ``missing`` compares one with an object: every property must be
there, every method must accept each parameter the seed gives it the way
the seed passes it (positionally or by keyword) with the seed's default.
"""

from __future__ import annotations

import inspect
from typing import Any

_OWN = {"__init__", "__subclasshook__", "__class_getitem__", "__init_subclass__"}


def _members(protocol: type[Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for klass in reversed(protocol.__mro__):
        if klass in (object,) or klass.__name__ in ("Protocol", "Generic"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in _OWN:
                continue
            found[name] = value
    return found


def _signature_gaps(name: str, seed: Any, actual: Any) -> list[str]:
    try:
        have = inspect.signature(actual).parameters
    except (TypeError, ValueError):
        return [f"{name}: no signature"]
    gaps = []
    for parameter in list(inspect.signature(seed).parameters.values())[1:]:  # not self
        got = have.get(parameter.name)
        if got is None:
            if not any(p.kind is p.VAR_KEYWORD for p in have.values()):
                gaps.append(f"{name}({parameter.name}=...): no such parameter")
            continue
        positional = parameter.kind is parameter.POSITIONAL_OR_KEYWORD
        if positional and got.kind is not got.POSITIONAL_OR_KEYWORD:
            gaps.append(f"{name}({parameter.name}): the seed passes it positionally")
        if parameter.default is not parameter.empty and got.default != parameter.default:
            gaps.append(
                f"{name}({parameter.name}): default {got.default!r}, seed {parameter.default!r}"
            )
    return gaps


def missing(obj: object, protocol: type[Any]) -> list[str]:
    """What ``obj`` lacks of ``protocol``: an empty list if it conforms."""
    gaps = []
    for name, member in _members(protocol).items():
        if not hasattr(obj, name):
            gaps.append(f"{name}: missing")
            continue
        if inspect.isfunction(member):
            gaps += _signature_gaps(name, member, getattr(obj, name))
    return gaps
