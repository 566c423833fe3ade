"""Archive export and import for each backend."""

from __future__ import annotations

import os
from typing import Protocol, runtime_checkable

from .._errors import ReadOnlyError
from ..fs import InMemoryFilesystem, TreeFilesystem
from ._format import DEFAULT_ARCHIVE_LIMITS, ArchiveLimits, export_archive, import_archive
from ._memory import TreeArchiveSource, TreeArchiveTarget


@runtime_checkable
class Archivable(Protocol):
    """A backend that exports and imports workspace archives."""

    def export_archive(self, path: str | os.PathLike[str]) -> int: ...

    def import_archive(self, path: str | os.PathLike[str]) -> int: ...


def export_tree(filesystem: TreeFilesystem, path: str | os.PathLike[str]) -> int:
    """Export an in-memory workspace or snapshot view; return the file count."""
    return export_archive(TreeArchiveSource(filesystem), path)


def import_tree(
    filesystem: InMemoryFilesystem,
    path: str | os.PathLike[str],
    *,
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
) -> int:
    """Replace an in-memory workspace with an archive; return the file count."""
    if filesystem.read_only:
        raise ReadOnlyError("read-only filesystem", os.fspath(path))
    return import_archive(TreeArchiveTarget(filesystem), path, limits=limits)
