"""The archive adapter of ``HostFilesystem``.

Import extracts into a staging directory inside the root (same filesystem,
so moves are renames), then swaps: the old entries move aside, the staged
ones move in, the old ones are deleted. Any failure before the swap leaves
the root as it was.
"""

from __future__ import annotations

import io
import os
import shutil
import stat as _stat
import tempfile
from collections.abc import Iterator

from ..archive import (
    DEFAULT_ARCHIVE_LIMITS,
    ArchiveLimits,
    Entry,
    Reader,
    file_content,
    read_archive,
    symlink_target,
    write_archive,
)

STAGING_PREFIX = ".workspacefs-import-"


class HostArchiveSource:
    """Export side: walks the directory without following symlinks."""

    def __init__(self, root: str) -> None:
        self._root = root

    def entries(self) -> Iterator[Entry]:
        for top, dirs, files in os.walk(self._root):
            dirs.sort()
            dirs[:] = [d for d in dirs if not d.startswith(STAGING_PREFIX)]
            base = os.path.relpath(top, self._root)
            for name in sorted(dirs + files):
                path = name if base == "." else f"{base}/{name}"
                info = os.lstat(os.path.join(top, name))
                if _stat.S_ISLNK(info.st_mode):
                    target = os.readlink(os.path.join(top, name))
                    yield Entry(path, info.st_mode, info.st_mtime_ns, target=target)
                elif _stat.S_ISDIR(info.st_mode) or _stat.S_ISREG(info.st_mode):
                    yield Entry(path, info.st_mode, info.st_mtime_ns, info.st_size)
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]

    def open(self, path: str) -> io.FileIO:
        fd = os.open(os.path.join(self._root, path), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        return io.FileIO(fd, "rb")


class HostArchiveTarget:
    """Import side: stage, then swap."""

    def __init__(self, root: str) -> None:
        self._root = root
        self._staging = ""
        self._times: list[tuple[str, int]] = []

    def begin(self) -> None:
        self._staging = tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=self._root)

    def add(self, entry: Entry, content: Reader | None) -> None:
        target = os.path.join(self._staging, entry.path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        kind = _stat.S_IFMT(entry.mode)
        if kind == _stat.S_IFDIR:
            os.makedirs(target, exist_ok=True)
            os.chmod(target, _stat.S_IMODE(entry.mode))
        elif kind == _stat.S_IFLNK:
            os.symlink(symlink_target(entry), target)
        else:
            data = file_content(entry, content)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out:
                while block := data.read(1 << 20):
                    out.write(block)
            os.chmod(target, _stat.S_IMODE(entry.mode))
        self._times.append((target, entry.mtime_ns))

    def commit(self) -> None:
        for path, mtime in reversed(self._times):  # children before their directories
            os.utime(path, ns=(mtime, mtime), follow_symlinks=False)
        aside = tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=self._root)
        staged = os.path.basename(self._staging)
        for name in os.listdir(self._root):
            if name not in (staged, os.path.basename(aside)):
                os.rename(os.path.join(self._root, name), os.path.join(aside, name))
        for name in os.listdir(self._staging):
            os.rename(os.path.join(self._staging, name), os.path.join(self._root, name))
        os.rmdir(self._staging)
        shutil.rmtree(aside)

    def abort(self) -> None:
        if self._staging:
            shutil.rmtree(self._staging, ignore_errors=True)


def export_directory(root: str, path: str | os.PathLike[str]) -> int:
    """Export a host directory as a workspace archive; the file count."""
    return write_archive(HostArchiveSource(root), path)


def import_directory(
    root: str, path: str | os.PathLike[str], *, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS
) -> int:
    """Replace a host directory's content with an archive; the file count."""
    return read_archive(HostArchiveTarget(root), path, limits=limits)
