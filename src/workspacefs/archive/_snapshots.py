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
from ..posix import check_own_directory, make_private_directory
from ._backends import ArchiveBackend, export_archive, import_archive, restore_own_archive
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
    """Snapshots of one filesystem as ``<snapshot_dir>/<id><suffix>`` archives.

    Works with any backend that exports and imports archives; the directory
    outlives the process, so a new manager on the same directory sees them.

    Args:
        filesystem: The backend to snapshot and roll back.
        snapshot_dir: Where archives go (0600 each; made 0700 if missing).
            Default: ``workspacefs-snapshots-<uid>`` under the system temp dir,
            refused (``NotPermittedError``) if another user owns it or may write in it.
        suffix: The archives' file name ending (seed 003 names them ``.fs.zip``).
    """

    def __init__(
        self,
        filesystem: ArchiveBackend,
        snapshot_dir: str | os.PathLike[str] | None = None,
        *,
        suffix: str = ".zip",
    ) -> None:
        self._fs = filesystem
        if snapshot_dir is None:
            # The temp dir is everyone's: a directory of this user's own, refused if
            # someone else made it first (to read or swap the archives).
            self._dir = Path(tempfile.gettempdir()) / f"workspacefs-snapshots-{os.geteuid()}"
            make_private_directory(self._dir)
            check_own_directory(self._dir)
        else:
            self._dir = Path(snapshot_dir)
            make_private_directory(self._dir)
        if not suffix.endswith(".zip") or "/" in suffix:
            raise InvalidArgumentError("an archive suffix ends in .zip", suffix)
        self._suffix = suffix

    @property
    def snapshot_dir(self) -> Path:
        """The directory holding the archives."""
        return self._dir

    def _path(self, snapshot_id: str) -> Path:
        return self._dir / f"{checked_id(snapshot_id)}{self._suffix}"

    def snapshot(self, snapshot_id: str, *, replace: bool = False) -> SnapshotInfo:
        """Archive the filesystem now under ``snapshot_id``, which must be new unless
        ``replace`` (then an archive under that id is replaced, atomically)."""
        path = self._path(snapshot_id)
        if path.exists() and not replace:
            raise AlreadyExistsError("snapshot id already used", snapshot_id)
        export_archive(self._fs, path)
        return read_info(snapshot_id, path)

    def rollback(self, snapshot_id: str) -> int:
        """Return the filesystem to snapshot ``snapshot_id`` exactly, setuid and setgid
        bits included (``restore_own_archive``); the file count."""
        return restore_own_archive(self._fs, self.get(snapshot_id).archive_path)

    def restore(self, archive_path: str | os.PathLike[str]) -> int:
        """Return the filesystem to any archive, as from elsewhere (special modes
        dropped, ``import_archive``); the file count."""
        return import_archive(self._fs, archive_path)

    def get(self, snapshot_id: str) -> SnapshotInfo:
        """The info of one snapshot; SnapshotNotFoundError if unknown."""
        path = self._path(snapshot_id)
        if not path.exists():
            raise SnapshotNotFoundError("no such snapshot", snapshot_id)
        return read_info(snapshot_id, path)

    def list_snapshots(self) -> list[SnapshotInfo]:
        """Every snapshot, in creation order."""
        found = self._dir.glob(f"*{self._suffix}")
        infos = [read_info(p.name[: -len(self._suffix)], p) for p in found]
        return sorted(infos, key=lambda info: info.created_at)

    def delete(self, snapshot_id: str) -> None:
        """Remove one snapshot's archive."""
        path = self._path(snapshot_id)
        if not path.exists():
            raise SnapshotNotFoundError("no such snapshot", snapshot_id)
        path.unlink()
