"""``ArchiveSnapshots``: named snapshots of any backend kept as archives in a directory."""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .._errors import AlreadyExistsError, InvalidArgumentError, SnapshotNotFoundError
from ..fs import check_name
from ._backends import ArchiveBackend, export_archive, import_archive
from ._types import MANIFEST


def checked_id(value: str, what: str = "snapshot id") -> str:
    """``value`` if it is a plain name (``fs.check_name``: letters, digits, ``._-``, no
    path); else InvalidArgumentError (a ValueError) saying why.

    Ids name files in a directory: one from outside (a session record, a
    caller's argument) must never be a path.
    """
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be a string, not {type(value).__name__}", None)
    return check_name(value, what)


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    """One archived snapshot."""

    snapshot_id: str
    archive_path: str
    created_at: datetime
    file_count: int
    total_bytes: int


def read_info(snapshot_id: str, archive_path: Path) -> SnapshotInfo:
    """The info an archive's manifest carries."""
    with zipfile.ZipFile(archive_path) as archive:
        manifest = json.loads(archive.read(MANIFEST))
    return SnapshotInfo(
        snapshot_id=snapshot_id,
        archive_path=str(archive_path),
        created_at=datetime.fromisoformat(manifest["created_at"]),
        file_count=manifest["file_count"],
        total_bytes=manifest["total_bytes"],
    )


class ArchiveSnapshots:
    """Snapshots of one filesystem as ``<snapshot_dir>/<id>.zip`` archives.

    Works with any backend that exports and imports archives; the directory
    outlives the process, so a new manager on the same directory sees them.

    Args:
        filesystem: The backend to snapshot and roll back.
        snapshot_dir: Where archives go (default: a ``workspacefs-snapshots``
            directory under the system temp dir).
    """

    def __init__(
        self, filesystem: ArchiveBackend, snapshot_dir: str | os.PathLike[str] | None = None
    ) -> None:
        self._fs = filesystem
        default = Path(tempfile.gettempdir()) / "workspacefs-snapshots"
        self._dir = Path(snapshot_dir) if snapshot_dir is not None else default
        self._dir.mkdir(parents=True, exist_ok=True)

    @property
    def snapshot_dir(self) -> Path:
        """The directory holding the archives."""
        return self._dir

    def _path(self, snapshot_id: str) -> Path:
        return self._dir / f"{checked_id(snapshot_id)}.zip"

    def snapshot(self, snapshot_id: str) -> SnapshotInfo:
        """Archive the filesystem now under ``snapshot_id`` (which must be new)."""
        path = self._path(snapshot_id)
        if path.exists():
            raise AlreadyExistsError("snapshot id already used", snapshot_id)
        export_archive(self._fs, path)
        return read_info(snapshot_id, path)

    def rollback(self, snapshot_id: str) -> int:
        """Return the filesystem to snapshot ``snapshot_id``; the file count."""
        return import_archive(self._fs, self.get(snapshot_id).archive_path)

    def restore(self, archive_path: str | os.PathLike[str]) -> int:
        """Return the filesystem to any archive; the file count."""
        return import_archive(self._fs, archive_path)

    def get(self, snapshot_id: str) -> SnapshotInfo:
        """The info of one snapshot; SnapshotNotFoundError if unknown."""
        path = self._path(snapshot_id)
        if not path.exists():
            raise SnapshotNotFoundError("no such snapshot", snapshot_id)
        return read_info(snapshot_id, path)

    def list_snapshots(self) -> list[SnapshotInfo]:
        """Every snapshot, in creation order."""
        infos = [read_info(p.stem, p) for p in self._dir.glob("*.zip")]
        return sorted(infos, key=lambda info: info.created_at)

    def delete(self, snapshot_id: str) -> None:
        """Remove one snapshot's archive."""
        path = self._path(snapshot_id)
        if not path.exists():
            raise SnapshotNotFoundError("no such snapshot", snapshot_id)
        path.unlink()
