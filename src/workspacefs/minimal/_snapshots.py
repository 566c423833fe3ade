"""Seed 003's ``FilesystemSnapshot``: named snapshots of a filesystem as ZIP archives.

A thin layer over ``archive.ArchiveSnapshots`` (which writes, reads and
names the archives) with seed 003's shapes: archives are
``<snapshot_dir>/<id>.fs.zip``; a repeated id replaces its snapshot; the
manager knows the snapshots it took (``get`` is None and ``delete`` False for
any other id, ``rollback`` raises ``KeyError``); ``SnapshotInfo.total_bytes``
is the archive's size.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import cast

from .._errors import SnapshotNotFoundError
from ..archive import ArchiveBackend, ArchiveSnapshots
from ._types import Filesystem

DEFAULT_DIR = Path(tempfile.gettempdir()) / "workspacefs-fs-snapshots"
"""Where snapshots go when no directory is given (the seed's ``wink-fs-snapshots``)."""


@dataclass(slots=True, frozen=True)
class SnapshotInfo:
    """Metadata about a filesystem snapshot."""

    snapshot_id: str
    archive_path: Path
    file_count: int
    total_bytes: int
    created_at: datetime


class FilesystemSnapshot:
    """Manages filesystem snapshots; the counterpart of a session's snapshots.

    Args:
        filesystem: A seed 003 filesystem (a view of this package, or any object
            with ``export_archive``/``import_archive``).
        snapshot_dir: Where the archives go (default ``DEFAULT_DIR``).
    """

    def __init__(self, filesystem: Filesystem, snapshot_dir: Path | None = None) -> None:
        self._filesystem = filesystem
        self._snapshot_dir = Path(snapshot_dir) if snapshot_dir is not None else DEFAULT_DIR
        self._snapshots: dict[str, SnapshotInfo] = {}
        # A view archives its backend directly; anything else through its own methods.
        backend = getattr(filesystem, "backend", filesystem)
        self._archives = ArchiveSnapshots(
            cast(ArchiveBackend, backend), self._snapshot_dir, suffix=".fs.zip"
        )

    @property
    def filesystem(self) -> Filesystem:
        """The managed filesystem."""
        return self._filesystem

    def snapshot(self, snapshot_id: str) -> SnapshotInfo:
        """Archive the filesystem now as ``<snapshot_dir>/<snapshot_id>.fs.zip`` (an
        earlier snapshot with this id is replaced).

        Raises:
            ValueError: ``snapshot_id`` is not a plain name (letters, digits, ``._-``).
        """
        made = self._archives.snapshot(snapshot_id, replace=True)
        path = Path(made.archive_path)
        info = SnapshotInfo(
            snapshot_id=snapshot_id,
            archive_path=path,
            file_count=made.file_count,
            total_bytes=path.stat().st_size,
            created_at=made.created_at,
        )
        self._snapshots[snapshot_id] = info
        return info

    def rollback(self, snapshot_id: str) -> int:
        """Restore the filesystem to a snapshot taken here; the number of files.

        Raises:
            KeyError: No snapshot with this id was taken here.
        """
        if snapshot_id not in self._snapshots:
            raise KeyError(f"Snapshot not found: {snapshot_id}")
        return self._archives.rollback(snapshot_id)  # its own archive: exactly

    def restore(self, archive_path: str | os.PathLike[str]) -> int:
        """Restore the filesystem from any archive (e.g. a saved session's); the number
        of files."""
        return self._archives.restore(archive_path)

    def get(self, snapshot_id: str) -> SnapshotInfo | None:
        """A snapshot's metadata, or None."""
        return self._snapshots.get(snapshot_id)

    def list_snapshots(self) -> tuple[SnapshotInfo, ...]:
        """Every snapshot taken here, oldest first."""
        return tuple(sorted(self._snapshots.values(), key=lambda info: info.created_at))

    def delete(self, snapshot_id: str) -> bool:
        """Delete a snapshot and its archive; False if there was none."""
        info = self._snapshots.pop(snapshot_id, None)
        if info is None:
            return False
        with contextlib.suppress(SnapshotNotFoundError):  # its archive was removed already
            self._archives.delete(snapshot_id)
        return True
