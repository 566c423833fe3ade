"""The other snapshot strategies of a host directory: copies and archives.

``git`` (``_snapshots``) is the default. ``copy`` keeps a full copy per
snapshot made with ``cp -a --reflink=auto``: on btrfs or XFS that is a
metadata-only copy sharing blocks, elsewhere a plain copy. ``archive``
keeps a workspace archive per snapshot. ``auto`` picks ``copy`` where the
snapshot directory and the root can share blocks (reflinks), else ``git``.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import tempfile
import uuid
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Literal, Protocol

from .._errors import BackendUnavailableError, SnapshotNotFoundError
from ..fs import FilesystemDiff, FilesystemSnapshot, SnapshotRef
from ._archive import export_directory, import_directory

StrategyName = Literal["auto", "git", "copy", "archive"]


class Strategy(Protocol):
    """How a host directory's snapshots are kept."""

    name: str

    def snapshot(self, tag: str | None, parent: uuid.UUID | None) -> FilesystemSnapshot: ...

    def restore(self, snapshot: FilesystemSnapshot) -> None: ...

    def diff(
        self, base: FilesystemSnapshot, target: FilesystemSnapshot | None
    ) -> FilesystemDiff: ...

    def cleanup(self) -> None: ...


def _files(root: str) -> Iterator[str]:
    """Every file and symlink below ``root``, relative, without following links."""
    for top, dirs, files in os.walk(root):
        links = [
            d for d in dirs if os.path.islink(os.path.join(top, d))
        ]  # walk lists, never enters
        for name in files + links:
            yield os.path.relpath(os.path.join(top, name), root)


def _same(a: str, b: str) -> bool:
    if os.path.islink(a) or os.path.islink(b):
        return os.path.islink(a) and os.path.islink(b) and os.readlink(a) == os.readlink(b)
    same_exec = (os.stat(a).st_mode & 0o111 != 0) == (os.stat(b).st_mode & 0o111 != 0)
    return same_exec and filecmp.cmp(a, b, shallow=False)


def compare_directories(before: str, after: str) -> FilesystemDiff:
    """Files added, modified and deleted from one directory to another."""
    old, new = set(_files(before)), set(_files(after))
    modified = sorted(
        p for p in old & new if not _same(os.path.join(before, p), os.path.join(after, p))
    )
    return FilesystemDiff(
        tuple(sorted(new - old)),
        tuple(modified),
        tuple(sorted(old - new)),
        len(new) - len(new - old) - len(modified),
    )


def _clear(root: str) -> None:
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def _copy_contents(source: str, target: str) -> None:
    """``cp -a --reflink=auto``: modes, times and links kept; blocks shared where possible."""
    result = subprocess.run(["cp", "-a", "--reflink=auto", f"{source}/.", target],
                            capture_output=True, text=True, check=False)  # fmt: skip
    if result.returncode != 0:
        raise BackendUnavailableError(f"copy failed: {result.stderr.strip()}", source)


def supports_reflink(root: str, directory: str) -> bool:
    """True if a copy from ``root`` into ``directory`` can share blocks."""
    probe = next((os.path.join(top, f) for top, _, files in os.walk(root) for f in files
                  if not os.path.islink(os.path.join(top, f))), None)  # fmt: skip
    if probe is None:
        return False
    target = os.path.join(directory, f".reflink-probe-{uuid.uuid4().hex}")
    try:
        done = subprocess.run(
            ["cp", "--reflink=always", probe, target], capture_output=True, check=False
        )
        return done.returncode == 0
    finally:
        if os.path.exists(target):
            os.unlink(target)


class _Kept:
    """Shared parts of strategies that keep one item per snapshot in a directory."""

    name = ""

    def __init__(self, root: str, directory: str | None) -> None:
        self._root = root
        self._chosen = directory
        self._made: str | None = None

    @property
    def _directory(self) -> str:
        """Made on the first snapshot: restoring needs none (records hold full paths)."""
        if self._made is None:
            self._made = self._chosen or tempfile.mkdtemp(prefix=f"workspacefs-{self.name}-")
            os.makedirs(self._made, exist_ok=True)
        return self._made

    def _record(
        self, ref: SnapshotRef, tag: str | None, parent: uuid.UUID | None, files: int, size: int
    ) -> FilesystemSnapshot:
        return FilesystemSnapshot(
            snapshot_id=uuid.uuid4(),
            created_at=datetime.now(UTC),
            ref=ref,
            root_path=self._root,
            tag=tag,
            parent_id=parent,
            file_count=files,
            total_bytes=size,
        )

    def _item(self, snapshot: FilesystemSnapshot) -> str:
        location = snapshot.ref.location
        if not os.path.exists(location):
            raise SnapshotNotFoundError("the snapshot's copy is gone", location)
        return location

    def cleanup(self) -> None:
        if self._made is not None:
            shutil.rmtree(self._made, ignore_errors=True)


class CopySnapshots(_Kept):
    """A full (reflinked where possible) copy of the directory per snapshot."""

    name = "copy"

    def snapshot(self, tag: str | None, parent: uuid.UUID | None) -> FilesystemSnapshot:
        target = os.path.join(self._directory, uuid.uuid4().hex)
        os.mkdir(target)
        _copy_contents(self._root, target)
        files = list(_files(target))
        size = sum(os.lstat(os.path.join(target, f)).st_size for f in files)
        return self._record(SnapshotRef("copy", target), tag, parent, len(files), size)

    def restore(self, snapshot: FilesystemSnapshot) -> None:
        source = self._item(snapshot)
        _clear(self._root)
        _copy_contents(source, self._root)

    def diff(self, base: FilesystemSnapshot, target: FilesystemSnapshot | None) -> FilesystemDiff:
        return compare_directories(self._item(base), self._item(target) if target else self._root)


class ArchiveStrategy(_Kept):
    """A workspace archive per snapshot."""

    name = "archive"

    def snapshot(self, tag: str | None, parent: uuid.UUID | None) -> FilesystemSnapshot:
        target = os.path.join(self._directory, f"{uuid.uuid4().hex}.zip")
        files = export_directory(self._root, target)
        with zipfile.ZipFile(target) as archive:
            size = sum(i.file_size for i in archive.infolist() if i.filename.startswith("files/"))
        return self._record(SnapshotRef("archive", target), tag, parent, files, size)

    def restore(self, snapshot: FilesystemSnapshot) -> None:
        import_directory(self._root, self._item(snapshot))

    def diff(self, base: FilesystemSnapshot, target: FilesystemSnapshot | None) -> FilesystemDiff:
        with tempfile.TemporaryDirectory() as before, tempfile.TemporaryDirectory() as after:
            import_directory(before, self._item(base))
            if target is None:
                return compare_directories(before, self._root)
            import_directory(after, self._item(target))
            return compare_directories(before, after)
