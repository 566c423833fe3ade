"""Conditional changes: compare-and-swap on a file or on the whole workspace.

``content_digest`` is the token of a conditional file change (``if_match``).

A caller that read a file passes the token of what it read to ``write``,
``write_bytes`` or ``delete``; the frontend, holding the backend's write
lock, checks what the file holds now and changes nothing unless the two
agree (``unchanged``). A token of the content (not a modification time or a
counter) means the same on every backend, needs nothing from the read that
the caller does not already have, and cannot be fooled by a clock: ``touch
-d`` or a rewrite within one timestamp tick changes no content it misses.

The token is opaque to callers: today ``<size>:<sha256 hex>``. The size comes
first so that a file of another size -- one another writer grew to gigabytes,
or a lazy file from git -- is known changed without being read under the lock.

``restore(snapshot, if_unchanged_since=earlier)`` does the same for the whole
workspace: it restores only if nothing changed since ``earlier`` (a snapshot
the caller took), else raises what ``changed_since`` makes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable

from .._errors import ContentChangedError, InvalidArgumentError
from ._snapshots import FilesystemDiff

MAX_NAMED = 10
"""Paths an error names before it counts the rest."""

_TOKEN = re.compile(r"(0|[1-9][0-9]*):([0-9a-f]{64})")


def content_digest(content: bytes | Iterable[bytes]) -> str:
    """The token of a file's content (whole, or as the blocks it was read in) that
    ``if_match`` takes: opaque, equal for equal content, different for different.
    """
    digest = hashlib.sha256()
    if isinstance(content, bytes | bytearray | memoryview):
        digest.update(content)
        size = memoryview(content).nbytes
    else:
        size = 0
        for block in content:
            digest.update(block)
            size += len(block)
    return f"{size}:{digest.hexdigest()}"


def token_size(if_match: str, path: str | None) -> int:
    """The content size an ``if_match`` token names.

    Raises:
        InvalidArgumentError: ``if_match`` is no token ``content_digest`` makes.
    """
    match = _TOKEN.fullmatch(if_match)
    if match is None:
        raise InvalidArgumentError(
            f"if_match {if_match[:80]!r} is not a content_digest token", path
        )
    return int(match[1])


def unchanged(if_match: str, size: int, read: Callable[[], Iterable[bytes]]) -> bool:
    """True if a file of ``size`` bytes, whose content ``read()`` gives in blocks,
    has the token ``if_match``.

    The file is read only if the sizes agree, and no further than the size the
    token names (a file growing meanwhile is not read to its end).
    """
    expected = token_size(if_match, None)
    if size != expected:
        return False
    digest, seen = hashlib.sha256(), 0
    for block in read():
        seen += len(block)
        if seen > expected:
            return False
        digest.update(block)
    return f"{seen}:{digest.hexdigest()}" == if_match


def changed_paths(changes: FilesystemDiff) -> str:
    """The paths ``changes`` touched, the first few named: ``a.txt, b.txt and 3 more``
    (none to name: the changes were to paths the access rules hide from the caller)."""
    paths = [*changes.added, *changes.modified, *changes.deleted]
    if not paths:
        return "paths hidden by the access rules"
    named = ", ".join(paths[:MAX_NAMED])
    return named + (f" and {len(paths) - MAX_NAMED:,} more" if len(paths) > MAX_NAMED else "")


def changed_since(changes: FilesystemDiff) -> ContentChangedError:
    """The error of a conditional restore that found ``changes`` since its snapshot
    (``if_unchanged_since``)."""
    return ContentChangedError(
        f"the workspace changed since the snapshot ({changed_paths(changes)})", None
    )
