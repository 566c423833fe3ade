"""The control protocol's wire format: JSON bodies, result types and errors.

Both ends import this module, so what one side writes the other reads with
the same code. JSON is written with ``ensure_ascii`` so paths holding
surrogate escapes (names that are not UTF-8) survive the trip; bytes travel
as base64.
"""

from __future__ import annotations

import base64
import errno as _errno
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from .._errors import BackendUnavailableError, FsError, InvalidArgumentError
from ..fs import (
    FileEntry,
    FileStat,
    FilesystemDiff,
    FilesystemSnapshot,
    GlobMatch,
    GrepMatch,
    ReadBytesResult,
    ReadResult,
    TreeEntry,
    WriteResult,
)

API_VERSION = 2
"""Bumped on any incompatible change; every path starts with ``/v<API_VERSION>``."""

PREFIX = f"/v{API_VERSION}"
JSON_TYPE = "application/json"

Json = dict[str, Any]
T = TypeVar("T")


def dumps(value: object) -> bytes:
    """``value`` as a JSON body (ASCII, so lone surrogates pass)."""
    return json.dumps(value, separators=(",", ":")).encode("ascii")


def loads(body: bytes) -> Any:
    """A JSON body; a malformed one is InvalidArgumentError."""
    try:
        return json.loads(body) if body else {}
    except ValueError as exc:
        raise InvalidArgumentError(f"malformed JSON body: {exc}", None) from exc


# -- results -------------------------------------------------------------------


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _parse_time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def encode_stat(stat: FileStat) -> Json:
    """A ``FileStat`` as JSON."""
    return {
        "path": stat.path,
        "is_file": stat.is_file,
        "is_directory": stat.is_directory,
        "size_bytes": stat.size_bytes,
        "created_at": _time(stat.created_at),
        "modified_at": _time(stat.modified_at),
        "is_symlink": stat.is_symlink,
        "mode": stat.mode,
    }


def decode_stat(data: Json) -> FileStat:
    """The ``FileStat`` ``encode_stat`` wrote."""
    return FileStat(
        **{
            **data,
            "created_at": _parse_time(data["created_at"]),
            "modified_at": _parse_time(data["modified_at"]),
        }
    )


def encode_read_bytes(result: ReadBytesResult) -> Json:
    """A ``ReadBytesResult`` as JSON, its content in base64."""
    return {
        "content": base64.b64encode(result.content).decode("ascii"),
        "path": result.path,
        "size_bytes": result.size_bytes,
        "offset": result.offset,
        "limit": result.limit,
        "truncated": result.truncated,
    }


def decode_read_bytes(data: Json) -> ReadBytesResult:
    """The ``ReadBytesResult`` ``encode_read_bytes`` wrote."""
    return ReadBytesResult(**{**data, "content": base64.b64decode(data["content"])})


def encode_plain(value: object) -> Json:
    """A flat result dataclass (no dates, no bytes) as JSON."""
    slots: Sequence[str] = type(value).__slots__  # type: ignore[attr-defined]
    return {name: getattr(value, name) for name in slots}


def encode_read(result: ReadResult) -> Json:
    """A ``ReadResult`` as JSON without its ``lines``: the page travels once, and the
    reader splits it again (``ReadResult`` does when ``lines`` is left out)."""
    data = encode_plain(result)
    del data["lines"]
    return data


def decode_plain(cls: type[T]) -> Callable[[Json], T]:
    """A decoder for a flat result dataclass."""
    return lambda data: cls(**data)


decode_entry = decode_plain(FileEntry)
decode_glob = decode_plain(GlobMatch)
decode_grep = decode_plain(GrepMatch)
decode_read = decode_plain(ReadResult)
decode_write = decode_plain(WriteResult)


def encode_diff(diff: FilesystemDiff) -> Json:
    """A ``FilesystemDiff`` as JSON."""
    return {
        "added": list(diff.added),
        "modified": list(diff.modified),
        "deleted": list(diff.deleted),
        "unchanged_count": diff.unchanged_count,
    }


def decode_diff(data: Json) -> FilesystemDiff:
    """The ``FilesystemDiff`` ``encode_diff`` wrote."""
    return FilesystemDiff(
        added=tuple(data["added"]),
        modified=tuple(data["modified"]),
        deleted=tuple(data["deleted"]),
        unchanged_count=data["unchanged_count"],
    )


def encode_entries(entries: Sequence[TreeEntry]) -> list[list[Any]]:
    """A page of ``TreeEntry`` values as JSON, each a short array (a page of a large
    listing holds thousands): ``[path, kind, size, mode, target]``."""
    return [[e.path, e.kind, e.size, e.mode, e.target] for e in entries]


def decode_entries(data: Sequence[Sequence[Any]]) -> list[TreeEntry]:
    """The entries ``encode_entries`` wrote."""
    return [TreeEntry(*item) for item in data]


def decode_snapshot(data: Json) -> FilesystemSnapshot:
    """A snapshot record from its ``to_dict`` form."""
    return FilesystemSnapshot.from_dict(data)


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
