"""The archive verbs, for every backend.

An in-memory workspace and its snapshot views go through the tree adapter
here. Every other backend brings its own ``export_archive``/``import_archive``
methods (the ``Archivable`` protocol): a host directory, whose package sits
above this one, or a remote workspace, which forwards the call.
"""

from __future__ import annotations

import os
from typing import Protocol, TypeAlias, cast, runtime_checkable

from .._errors import InvalidArgumentError, ReadOnlyError
from ..fs import InMemoryFilesystem, TreeFilesystem, register_archive_verbs
from ._format import read_archive, write_archive
from ._memory import TreeArchiveSource, TreeArchiveTarget
from ._types import DEFAULT_ARCHIVE_LIMITS, ArchiveLimits


@runtime_checkable
class Archivable(Protocol):
    """A backend that exports and imports workspace archives itself."""

    def export_archive(self, path: str | os.PathLike[str]) -> int:
        """Write the workspace as an archive at ``path``; the file count."""
        ...

    def import_archive(
        self, path: str | os.PathLike[str], *, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS
    ) -> int:
        """Replace the workspace with the archive at ``path``; the file count."""
        ...


ArchiveBackend: TypeAlias = TreeFilesystem | Archivable
"""What ``export_archive`` and ``import_archive`` take: an in-memory workspace,
a snapshot view of one, or an ``Archivable`` backend."""


def _archivable(filesystem: object) -> Archivable:
    if not isinstance(filesystem, Archivable):
        raise InvalidArgumentError(f"{type(filesystem).__name__} has no archive support", None)
    return filesystem


def export_archive(filesystem: ArchiveBackend, path: str | os.PathLike[str]) -> int:
    """Write ``filesystem`` as a workspace archive at ``path``; return the file count.

    A live in-memory workspace is exported as one consistent state, frozen
    when the call starts; writers are not held up meanwhile.
    """
    if isinstance(filesystem, TreeFilesystem):
        return write_archive(TreeArchiveSource(filesystem), path)
    return _archivable(filesystem).export_archive(path)


def import_archive(
    filesystem: ArchiveBackend,
    path: str | os.PathLike[str],
    *,
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
    special_modes: bool = False,
) -> int:
    """Replace the content of ``filesystem`` with the archive at ``path``; the file count.

    Every entry is checked before anything changes; a hostile or damaged
    archive raises (``ArchiveError``, ``PathEscapeError``, ``LimitExceededError``)
    and leaves the workspace exactly as it was. An archive holds no devices,
    fifos or sockets (refused); setuid and setgid bits and a file's sticky bit
    are dropped unless ``special_modes`` (``fs.sanitised_mode``): an archive
    from elsewhere brings no privileges in.

    Args:
        filesystem: The workspace to replace.
        path: The archive.
        limits: What the archive may hold.
        special_modes: Keep every mode bit as recorded, for an archive this
            program wrote of the same workspace (``ArchiveSnapshots.rollback``,
            session checkpoints and dumps pass it, so those restore exactly).
            Only where this layer imports (an in-memory workspace); a backend
            that imports archives itself has its own rule and argument
            (``HostFilesystem.import_archive(special_modes=)``, never as root).

    Raises:
        ReadOnlyError: ``filesystem`` is read-only (or a snapshot view).
        InvalidArgumentError: ``special_modes`` for a backend that imports itself.
    """
    if isinstance(filesystem, TreeFilesystem):
        if filesystem.read_only or not isinstance(filesystem, InMemoryFilesystem):
            raise ReadOnlyError("read-only filesystem", os.fspath(path))
        target = TreeArchiveTarget(filesystem, special_modes=special_modes)
        return read_archive(target, path, limits=limits)
    backend = _archivable(filesystem)
    if special_modes:
        raise InvalidArgumentError(
            f"{type(filesystem).__name__} imports archives itself: keeping special modes is "
            "its own argument, if it has one",
            None,
        )
    if limits is DEFAULT_ARCHIVE_LIMITS:  # so a backend written to seed 003 (no limits) serves
        return backend.import_archive(path)
    return backend.import_archive(path, limits=limits)


def restore_own_archive(filesystem: ArchiveBackend, path: str | os.PathLike[str]) -> int:
    """Put back an archive this program wrote of ``filesystem`` (a snapshot, a checkpoint,
    a session dump) exactly, special modes included, where this layer imports (an
    in-memory workspace); a backend that imports itself applies its own rule. The file
    count."""
    keep = isinstance(filesystem, TreeFilesystem)
    return import_archive(filesystem, path, special_modes=keep)


class _Verbs:
    """What ``InMemoryFilesystem.export_archive`` and its siblings call (``fs._archiving``)."""

    def export_archive(self, filesystem: object, path: str | os.PathLike[str]) -> int:
        return export_archive(cast(ArchiveBackend, filesystem), path)

    def import_archive(
        self, filesystem: object, path: str | os.PathLike[str], *, limits: object
    ) -> int:
        if limits is None:
            limits = DEFAULT_ARCHIVE_LIMITS
        if not isinstance(limits, ArchiveLimits):
            raise InvalidArgumentError("limits must be an ArchiveLimits", None)
        return import_archive(cast(ArchiveBackend, filesystem), path, limits=limits)


register_archive_verbs(_Verbs())
