"""The control protocol's wire format: JSON bodies and errors.

Both ends import this module (and ``_verbs``, whose table says how each verb's
arguments and result are written: ``fs.to_json``), so what one side writes
the other reads with the same code. JSON is written with ``ensure_ascii`` so
paths holding surrogate escapes (names that are not UTF-8) survive the trip;
bytes travel as base64.
"""

from __future__ import annotations

import errno as _errno
import json
from collections.abc import Iterator, Mapping
from typing import Any

from .._errors import BackendUnavailableError, FsError, InvalidArgumentError

API_VERSION = 3
"""Bumped on any incompatible change; every path starts with ``/v<API_VERSION>``."""

PREFIX = f"/v{API_VERSION}"
JSON_TYPE = "application/json"

Json = dict[str, Any]


def dumps(value: object) -> bytes:
    """``value`` as a JSON body (ASCII, so lone surrogates pass)."""
    return json.dumps(value, separators=(",", ":")).encode("ascii")


def loads(body: bytes) -> Any:
    """A JSON body; a malformed one is InvalidArgumentError."""
    try:
        return json.loads(body) if body else {}
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
        raise InvalidArgumentError(f"malformed JSON body: {exc}", None) from None


# -- errors --------------------------------------------------------------------


def _subclasses(cls: type[FsError]) -> Iterator[type[FsError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def encode_error(exc: BaseException) -> tuple[int, Json]:
    """The HTTP status and body for an exception raised by a verb.

    ``kind`` says how to rebuild it: ``fs`` (a class of the hierarchy, by
    name), ``os`` (a builtin ``OSError``, by errno), ``value`` (bad input)
    or ``internal`` (a bug in the daemon: logged there, EIO here).
    """
    if isinstance(exc, FsError):
        kind, status, code = "fs", 400, exc.errno
    elif isinstance(exc, OSError):
        kind, status, code = "os", 400, exc.errno or _errno.EIO
    elif isinstance(exc, (ValueError, TypeError, KeyError)):
        kind, status, code = "value", 400, _errno.EINVAL
    else:
        kind, status, code = "internal", 500, _errno.EIO
    message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    filename = exc.filename if isinstance(exc, OSError) else None
    return status, {
        "error": {
            "kind": kind,
            "type": type(exc).__name__,
            "errno": code,
            "message": message,
            "filename": None if filename is None else str(filename),
        }
    }


def error_classes() -> Mapping[str, type[FsError]]:
    """Every class of the hierarchy by name, the archive layer's included."""
    found = {cls.__name__: cls for cls in _subclasses(FsError)}
    found[FsError.__name__] = FsError
    return found


def decode_error(body: Json) -> OSError:
    """The exception ``encode_error`` described: same class, errno, message and path."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return BackendUnavailableError(f"unexpected answer from the daemon: {body!r}", None)
    kind, name = error.get("kind"), error.get("type")
    code, message, filename = error.get("errno"), str(error.get("message")), error.get("filename")
    if kind == "fs":
        cls = error_classes().get(str(name))
        if cls is not None:
            return cls(message, filename, code=code)
        return FsError(message, filename, code=code)
    if kind == "os":
        return OSError(code, message, filename)  # OSError picks the builtin for the errno
    if kind == "value":
        return InvalidArgumentError(f"{name}: {message}", filename)
    return BackendUnavailableError(f"the daemon failed: {name}: {message}", filename)
