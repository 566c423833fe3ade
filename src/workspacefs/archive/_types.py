"""The archive format's value types, limits and the protocols backends implement."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from .._errors import InvalidContentError

FORMAT = "workspacefs-archive"
VERSIONS = (1, 2)
"""Manifest versions this release reads (see ``_format``); it writes the lowest that fits."""
SEED_VERSION = "1"
"""The version of seed 003's archives (a string, no ``format``): read as version 1."""
MANIFEST = "manifest.json"
PREFIX = "files/"
BLOCK = 1 << 20


class ArchiveError(InvalidContentError):
    """A malformed or hostile archive; nothing was changed."""


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    """What an imported archive may claim or contain."""

    max_total_bytes: int = 16 << 30
    """Sum of the declared sizes of all entries."""
    max_ratio: int = 1000
    """Largest compression ratio of one entry over 1 MiB whose size the manifest does
    not declare (zip bombs; declared sizes bound the expansion themselves)."""
    max_entries: int = 1_000_000
    max_manifest_bytes: int = 256 << 20


DEFAULT_ARCHIVE_LIMITS = ArchiveLimits()


@dataclass(frozen=True, slots=True)
class Entry:
    """One thing an archive holds, as backends see it."""

    path: str
    mode: int  # full st_mode: type and permission bits
    mtime_ns: int
    size: int = 0
    target: str | None = None  # symlinks


class Reader(Protocol):
    """A stream of bytes read block by block."""

    def read(self, size: int = -1, /) -> bytes: ...


def symlink_target(entry: Entry) -> str:
    """The target of a symlink entry; ArchiveError if it has none."""
    if entry.target is None:
        raise ArchiveError("symlink entry without a target", entry.path)
    return entry.target


def file_content(entry: Entry, content: Reader | None) -> Reader:
    """The content stream of a file entry; ArchiveError if it has none."""
    if content is None:
        raise ArchiveError("file entry without content", entry.path)
    return content


class ArchiveSource(Protocol):
    """What a backend offers to export: entries (parents first) and their bytes."""

    def entries(self) -> Iterator[Entry]: ...

    def open(self, path: str) -> contextlib.AbstractContextManager[Reader]: ...


class ArchiveTarget(Protocol):
    """What a backend offers to import into: applied only after validation."""

    def reserve(self, nbytes: int) -> None:
        """Raise ``NoSpaceError`` unless ``nbytes`` of file content (what the archive
        declares, all checked) fit where the import goes; called before ``begin``."""
        ...

    def begin(self) -> None:
        """Empty the workspace (the backend can undo until ``commit``)."""
        ...

    def add(self, entry: Entry, content: Reader | None) -> None: ...

    def commit(self) -> None: ...

    def abort(self) -> None:
        """Return the workspace to what it was before ``begin``."""
        ...
