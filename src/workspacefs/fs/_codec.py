"""One JSON form for the value types: ``to_json`` and ``from_json``, driven by declared types.

A value is written as its declared type says (``typing.get_type_hints``), and
read back into that type, so both ends of a wire, and every ``to_dict``, agree
without a line of code per type:

* a dataclass: an object of its compared fields. A field with ``compare=False``
  is a cache or a view of the others (``ReadResult.lines``, ``SpaceUsage``'s
  share table), not part of the value: it does not travel, and is made again
  (or left at its default) when read. Reading passes the ``init`` fields and
  ignores the derived ones (``SpaceShare.shared``, ``init=False``), which the
  class computes again; a name it does not have is refused. A class marked
  ``as_row`` is an array of its fields instead (listings of thousands);
* ``datetime``: ISO 8601; ``bytes``: base64; ``uuid.UUID``: its string; an
  enum: its value; tuples, lists and sequences: arrays; mappings: objects;
  ``X | None``; a ``NewType``: its base type;
* a ``Literal``: its value as it is (the receiver checks it, so a bad value
  gets the error the receiver raises in-process too); ``Any``: as it is;
* ``Cause``: its own ``to_dict``/``from_dict`` (compact, checked and bounded:
  a cause comes from other processes, and the tree, below this layer, owns it).

Input that does not fit its type is InvalidArgumentError naming the field.
"""

from __future__ import annotations

import base64
import binascii
import collections.abc
import dataclasses
import enum
import functools
import operator
import types
import typing
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar, overload

from .._errors import InvalidArgumentError
from ..tree import Cause

T = TypeVar("T")

Encoder = Callable[[Any], Any]
Decoder = Callable[[Any], Any]

_ROWS: set[type] = set()

_OWN: dict[type, tuple[Encoder, Decoder]] = {Cause: (Cause.to_dict, Cause.from_dict)}
"""Types with a JSON form of their own."""

_SEQUENCES = (list, tuple, collections.abc.Sequence, collections.abc.Iterable)
_MAPPINGS = (dict, collections.abc.Mapping)


def as_row(cls: type[T]) -> type[T]:
    """Class decorator: the dataclass travels as an array of its fields, in order
    (every field: a row has no place for one that does not travel)."""
    if not all(f.init and f.compare for f in dataclasses.fields(cls)):  # type: ignore[arg-type]
        raise TypeError(f"{cls.__name__}: a row holds every field")
    _ROWS.add(cls)
    return cls


def to_json(value: object, kind: Any = None) -> Any:
    """``value`` as JSON-ready data, written as ``kind`` says (default: its own type).

    Raises:
        InvalidArgumentError: ``value`` is not of ``kind``.
    """
    written: Any = type(value) if kind is None else kind
    return _encoder(written)(value)


@overload
def from_json(kind: type[T], data: Any) -> T: ...
@overload
def from_json(kind: Any, data: Any) -> Any: ...
def from_json(kind: Any, data: Any) -> Any:
    """The value of type ``kind`` that ``to_json`` wrote as ``data``.

    Raises:
        InvalidArgumentError: ``data`` does not fit ``kind``.
    """
    return _decoder(kind)(data)


def _base(kind: Any) -> Any:
    """``kind`` without what does not change its JSON form (NewType, Annotated)."""
    while True:
        if kind is None:  # as annotations write NoneType
            return type(None)
        if hasattr(kind, "__supertype__"):
            kind = kind.__supertype__
        elif typing.get_origin(kind) is typing.Annotated:
            kind = typing.get_args(kind)[0]
        else:
            return kind


def _name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind)


def _refuse(kind: Any, value: object) -> InvalidArgumentError:
    return InvalidArgumentError(f"expected {_name(kind)}, got {type(value).__name__}", None)


def _within(where: str, exc: InvalidArgumentError) -> InvalidArgumentError:
    """``exc`` with ``where`` in front of its message (the path to the bad field)."""
    return InvalidArgumentError(f"{where}: {exc.strerror}", exc.filename)


def _check(kind: type) -> Callable[[Any], Any]:
    """A coder for a type JSON holds as it is: it checks the type, and passes the value."""

    def check(value: Any) -> Any:
        if type(value) is kind:  # the common case first: a listing has thousands
            return value
        if isinstance(value, bool) and kind is not bool:
            raise _refuse(kind, value)
        if isinstance(value, kind) or (kind is float and isinstance(value, int)):
            return value
        raise _refuse(kind, value)

    return check


Form = tuple[str, Any]
"""How a type is written: a form's name and what its coders need (``_form``)."""


@functools.cache
def _form(kind: Any) -> Form:
    """How values of ``kind`` are written; TypeError if they have no JSON form."""
    kind = _base(kind)
    origin = typing.get_origin(kind)
    if kind in (Any, object) or origin is typing.Literal:
        return "plain", kind
    if origin is not None:
        return _generic_form(kind, origin)
    return _class_form(kind)


def _generic_form(kind: Any, origin: Any) -> Form:
    """The form of a parametrised type (``list[int]``, ``X | None``): by its origin."""
    if origin is typing.Union or origin is types.UnionType:
        return "union", typing.get_args(kind)
    args = typing.get_args(kind)
    if origin in _MAPPINGS:
        return "mapping", (kind, args[1] if args else Any)
    if origin is tuple and args and (len(args) != 2 or args[1] is not Ellipsis):
        return "fixed", (kind, args)
    if origin in _SEQUENCES:
        return "sequence", (kind, args[0] if args else Any, tuple if origin is tuple else list)
    return _form(origin)


def _class_form(kind: Any) -> Form:
    """The form of a plain class: a JSON scalar, one of ours, or a class with a known form."""
    if kind is type(None) or kind in (str, int, float, bool):
        return "plain-checked", kind
    if kind in _OWN:
        return "own", kind
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return "dataclass", kind
    for base, form in ((enum.Enum, "enum"), (bytes, "bytes"), (datetime, "datetime")):
        if isinstance(kind, type) and issubclass(kind, base):
            return form, kind
    if kind is uuid.UUID:
        return "uuid", kind
    raise TypeError(f"no JSON form for {kind!r}")


@functools.cache
def _encoder(kind: Any) -> Encoder:
    form, detail = _form(kind)
    return _ENCODERS[form](detail)


@functools.cache
def _decoder(kind: Any) -> Decoder:
    form, detail = _form(kind)
    return _DECODERS[form](detail)


def _plain(value: Any) -> Any:
    return value


def _written(members: tuple[Any, ...]) -> tuple[Any, ...]:
    """The members of a union that have a JSON form (``str | os.PathLike[str]``: a path
    travels as a string, so ``str``)."""
    written = []
    for member in members:
        try:
            _form(member)
        except TypeError:
            continue
        written.append(member)
    if not written:
        raise TypeError(f"no JSON form for any of {members!r}")
    return tuple(written)


def _optional(
    members: tuple[Any, ...], coders: Callable[[Any], Callable[[Any], Any]]
) -> Callable[[Any], Any] | None:
    """The coder of ``X | None``, the common union, kept quick; None for another union."""
    others = [m for m in members if m is not type(None)]
    if len(others) != 1 or len(members) != 2:
        return None
    inner = coders(others[0])
    return lambda value: None if value is None else inner(value)


# -- writing -------------------------------------------------------------------------


def _runtime(members: tuple[Any, ...], value: object) -> Any:
    """The member of a union that ``value`` is an instance of."""
    for member in members:
        base = _base(member)
        cls = typing.get_origin(base) or base
        if cls is type(None) and value is None:
            return member
        if isinstance(cls, type) and isinstance(value, cls):
            return member
        if cls in (Any, object) or cls is typing.Literal:
            return member
    raise InvalidArgumentError(
        f"expected {' | '.join(_name(m) for m in members)}, got {type(value).__name__}", None
    )


def _union_encoder(members: tuple[Any, ...]) -> Encoder:
    members = _written(members)
    quick = _optional(members, _encoder)
    return quick or (lambda value: _encoder(_runtime(members, value))(value))


def _mapping_encoder(detail: tuple[Any, Any]) -> Encoder:
    value_coder = _encoder(detail[1])
    return lambda value: {str(k): value_coder(v) for k, v in value.items()}


def _fixed_encoder(detail: tuple[Any, tuple[Any, ...]]) -> Encoder:
    coders = [_encoder(arg) for arg in detail[1]]
    return lambda value: [coder(item) for coder, item in zip(coders, value, strict=True)]


def _sequence_encoder(detail: tuple[Any, Any, type]) -> Encoder:
    kind, item, _ = detail
    item_coder = _encoder(item)

    def sequence(value: Any) -> Any:
        if isinstance(value, str | bytes) or not isinstance(value, collections.abc.Iterable):
            raise _refuse(kind, value)
        return [item_coder(item) for item in value]

    return sequence


def _fields(cls: type) -> list[tuple[dataclasses.Field[Any], Any]]:
    """The fields ``to_json`` writes (the compared ones) and their types."""
    hints = typing.get_type_hints(cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls) if f.compare]


def _dataclass_encoder(cls: type) -> Encoder:
    compared = [(f.name, _encoder(kind)) for f, kind in _fields(cls)]
    names = [name for name, _ in compared]
    coders = [coder for _, coder in compared]
    values = operator.attrgetter(*names) if len(names) > 1 else lambda v: (getattr(v, names[0]),)

    if cls in _ROWS:

        def row(value: Any) -> Any:
            if not isinstance(value, cls):
                raise _refuse(cls, value)
            return [coder(item) for coder, item in zip(coders, values(value), strict=True)]

        return row

    def record(value: Any) -> Any:
        if not isinstance(value, cls):
            raise _refuse(cls, value)
        try:
            return {
                name: coder(item)
                for name, coder, item in zip(names, coders, values(value), strict=True)
            }
        except InvalidArgumentError as exc:
            raise _within(cls.__name__, exc) from None

    return record


def _bytes_encoder(value: Any) -> str:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise _refuse(bytes, value)
    return base64.b64encode(value).decode("ascii")


_ENCODERS: dict[str, Callable[[Any], Encoder]] = {
    "plain": lambda kind: _plain,
    "plain-checked": _check,
    "union": _union_encoder,
    "mapping": _mapping_encoder,
    "fixed": _fixed_encoder,
    "sequence": _sequence_encoder,
    "own": lambda kind: _OWN[kind][0],
    "dataclass": _dataclass_encoder,
    "enum": lambda kind: lambda value: value.value,
    "bytes": lambda kind: _bytes_encoder,
    "datetime": lambda kind: lambda value: _check(datetime)(value).isoformat(),
    "uuid": lambda kind: lambda value: str(_check(uuid.UUID)(value)),
}


# -- reading -------------------------------------------------------------------------


def _converted(kind: Any, convert: Callable[[Any], Any], written: Any = str) -> Decoder:
    """A decoder: ``convert(data)`` of ``data`` written as ``written`` (a string,
    unless said), its failures as InvalidArgumentError naming ``kind``."""

    def converted(data: Any) -> Any:
        if not isinstance(data, written) or isinstance(data, bool):
            raise _refuse(kind, data)
        try:
            return convert(data)
        except (ValueError, TypeError, binascii.Error) as exc:
            raise InvalidArgumentError(f"not a valid {_name(kind)}: {exc}", None) from None

    return converted


def _unbase64(data: str) -> bytes:
    return base64.b64decode(data, validate=True)


def _union_decoder(members: tuple[Any, ...]) -> Decoder:
    members = _written(members)
    quick = _optional(members, _decoder)
    if quick is not None:
        return quick
    optional = type(None) in members
    others = [_decoder(m) for m in members if m is not type(None)]

    def union(data: Any) -> Any:
        if data is None and optional:
            return None
        failure: InvalidArgumentError | None = None
        for coder in others:
            try:
                return coder(data)
            except InvalidArgumentError as exc:
                failure = failure or exc
        raise failure or _refuse(members, data)

    return union


def _mapping_decoder(detail: tuple[Any, Any]) -> Decoder:
    kind, value = detail
    value_coder = _decoder(value)

    def mapping(data: Any) -> Any:
        if not isinstance(data, dict):
            raise _refuse(kind, data)
        return {str(k): value_coder(v) for k, v in data.items()}

    return mapping


def _fixed_decoder(detail: tuple[Any, tuple[Any, ...]]) -> Decoder:
    kind, args = detail
    coders = [_decoder(arg) for arg in args]

    def fixed(data: Any) -> Any:
        if not isinstance(data, list):
            raise _refuse(kind, data)
        if len(data) != len(coders):
            raise InvalidArgumentError(f"expected {len(coders)} items", None)
        return tuple(coder(item) for coder, item in zip(coders, data, strict=True))

    return fixed


def _sequence_decoder(detail: tuple[Any, Any, type]) -> Decoder:
    kind, item, make = detail
    item_coder = _decoder(item)

    def sequence(data: Any) -> Any:
        if not isinstance(data, list):
            raise _refuse(kind, data)
        return make([item_coder(item) for item in data])

    return sequence


def _dataclass_decoder(cls: type) -> Decoder:
    fields = _fields(cls)
    known = frozenset(f.name for f, _ in fields)
    given = [(f.name, _decoder(kind)) for f, kind in fields if f.init]  # the rest: derived
    coders = [coder for _, coder in given]
    required = [
        f.name
        for f, _ in fields
        if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]

    def row(data: list[Any]) -> Any:
        if not len(required) <= len(data) <= len(coders):
            raise InvalidArgumentError(f"{cls.__name__}: {len(data)} items", None)
        try:
            return cls(*[coder(item) for coder, item in zip(coders, data, strict=False)])
        except InvalidArgumentError as exc:
            raise _within(cls.__name__, exc) from None

    def record(data: Any) -> Any:
        if isinstance(data, list) and cls in _ROWS:
            return row(data)
        if not isinstance(data, dict):
            raise _refuse(cls, data)
        if not known.issuperset(data):
            unknown = sorted(set(data) - known)
            raise InvalidArgumentError(f"{cls.__name__}: unknown fields {unknown}", None)
        missing = [name for name in required if name not in data]
        if missing:
            raise InvalidArgumentError(f"{cls.__name__}: missing fields {missing}", None)
        values = {}
        for name, coder in given:
            if name in data:
                try:
                    values[name] = coder(data[name])
                except InvalidArgumentError as exc:
                    raise _within(f"{cls.__name__}.{name}", exc) from None
        return cls(**values)

    return record


_DECODERS: dict[str, Callable[[Any], Decoder]] = {
    "plain": lambda kind: _plain,
    "plain-checked": _check,
    "union": _union_decoder,
    "mapping": _mapping_decoder,
    "fixed": _fixed_decoder,
    "sequence": _sequence_decoder,
    "own": lambda kind: _OWN[kind][1],
    "dataclass": _dataclass_decoder,
    "enum": lambda kind: _converted(kind, kind, str | int | float),
    "bytes": lambda kind: _converted(kind, _unbase64),
    "datetime": lambda kind: _converted(kind, datetime.fromisoformat),
    "uuid": lambda kind: _converted(kind, uuid.UUID),
}
