"""Conditional changes: compare-and-swap on a file or on the whole workspace.

``content_digest`` is the token of a conditional file change (``if_match``).

A caller that read a file passes the digest of what it read to ``write``,
``write_bytes`` or ``delete``; the frontend, holding the backend's write
lock, digests what the file holds now and changes nothing unless the two
agree. A digest of the content (not a modification time or a counter) means
the same on every backend, needs nothing from the read that the caller does
not already have, and cannot be fooled by a clock: ``touch -d`` or a rewrite
within one timestamp tick changes no content it misses.

``restore(snapshot, if_unchanged_since=earlier)`` does the same for the whole
workspace: it restores only if nothing changed since ``earlier`` (a snapshot
the caller took), else raises what ``changed_since`` makes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from .._errors import ContentChangedError
from ._snapshots import FilesystemDiff

MAX_NAMED = 10
"""Paths an error names before it counts the rest."""


def content_digest(content: bytes | Iterable[bytes]) -> str:
    """The SHA-256 of a file's content (whole, or as the blocks it was read in), in hex."""
    digest = hashlib.sha256()
    if isinstance(content, bytes | bytearray | memoryview):
        digest.update(content)
    else:
        for block in content:
            digest.update(block)
    return digest.hexdigest()


def changed_paths(changes: FilesystemDiff) -> str:
    """The paths ``changes`` touched, the first few named: ``a.txt, b.txt and 3 more``."""
    paths = [*changes.added, *changes.modified, *changes.deleted]
    named = ", ".join(paths[:MAX_NAMED])
    return named + (f" and {len(paths) - MAX_NAMED:,} more" if len(paths) > MAX_NAMED else "")


def changed_since(changes: FilesystemDiff) -> ContentChangedError:
    """The error of a conditional restore that found ``changes`` since its snapshot
    (``if_unchanged_since``)."""
    return ContentChangedError(
        f"the workspace changed since the snapshot ({changed_paths(changes)})", None
    )
