"""``Backend`` primitives on a host directory, one descriptor at a time.

Handles are ``O_PATH`` descriptors opened with ``O_NOFOLLOW`` relative to
their parent, so the frontend's walk never hands a path string to the
kernel. Files are opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked with
``fstat`` before a byte moves: a symlink swapped in fails with ELOOP, and a
fifo or device never blocks the caller.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat as _stat
from collections.abc import Iterator
from contextlib import AbstractContextManager

from .._errors import PathEscapeError
from ..fs import Entry, Handle, Kind, WriteMode, strip_mount_point

_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE_FLAGS: dict[WriteMode, int] = {
    "create": os.O_EXCL,
    "overwrite": os.O_TRUNC,
    "append": os.O_APPEND,
}
BLOCK = 1 << 20


def _kind(mode: int) -> Kind:
    if _stat.S_ISREG(mode):
        return Kind.FILE
    if _stat.S_ISDIR(mode):
        return Kind.DIRECTORY
    if _stat.S_ISLNK(mode):
        return Kind.SYMLINK
    return Kind.OTHER


def entry_of(info: os.stat_result) -> Entry:
    """A host ``lstat`` as the frontend's ``Entry``."""
    return Entry(
        _kind(info.st_mode), (info.st_dev, info.st_ino), info.st_size, info.st_mode,
        info.st_mtime_ns, None,
    )  # fmt: skip


class DirectoryBackend:
    """``Backend`` primitives confined to the directory ``root`` (a real path)."""

    def __init__(self, root: str, *, mount_point: str | None = None) -> None:
        self._root = root
        self._mount_point = mount_point

    def root(self) -> Handle:
        return os.open(self._root, _DIR_FLAGS)

    def release(self, handle: Handle) -> None:
        os.close(handle)

    def lookup(self, directory: Handle, name: str) -> Entry | None:
        try:
            return entry_of(os.stat(name, dir_fd=directory, follow_symlinks=False))
        except FileNotFoundError:
            return None

    def enter(self, directory: Handle, name: str, entry: Entry) -> Handle:
        return os.open(name, _DIR_FLAGS, dir_fd=directory)

    def scan(self, directory: Handle) -> list[tuple[str, Kind]]:
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=directory)
        try:
            with os.scandir(fd) as entries:
                return [(entry.name, self._entry_kind(entry)) for entry in entries]
        finally:
            os.close(fd)

    @staticmethod
    def _entry_kind(entry: os.DirEntry[str]) -> Kind:
        if entry.is_symlink():
            return Kind.SYMLINK
        if entry.is_dir(follow_symlinks=False):
            return Kind.DIRECTORY
        if entry.is_file(follow_symlinks=False):
            return Kind.FILE
        return Kind.OTHER

    def readlink(self, directory: Handle, name: str) -> str:
        return os.readlink(name, dir_fd=directory)

    def link_target(self, target: str) -> str:
        """Targets under the mount point or the root's own real path stay inside."""
        if self._mount_point is not None:
            with contextlib.suppress(PathEscapeError):
                return strip_mount_point(target, self._mount_point)
        if target == self._root or target.startswith(self._root.rstrip("/") + "/"):
            return target[len(self._root) :].lstrip("/")
        raise PathEscapeError("symlink points outside the workspace", target)

    def _open_regular(self, directory: Handle, name: str, flags: int, mode: int = 0o644) -> int:
        fd = os.open(name, flags | _FILE_FLAGS, mode, dir_fd=directory)
        info = os.fstat(fd)
        if not _stat.S_ISREG(info.st_mode):
            os.close(fd)
            if _stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            raise OSError(errno.EINVAL, "not a regular file")
        return fd

    def read(self, directory: Handle, name: str, entry: Entry, offset: int, size: int) -> bytes:
        fd = self._open_regular(directory, name, os.O_RDONLY)
        try:
            blocks = []
            while size > 0 and (block := os.pread(fd, min(size, BLOCK), offset)):
                blocks.append(block)
                offset += len(block)
                size -= len(block)
            return b"".join(blocks)
        finally:
            os.close(fd)

    def read_blocks(self, directory: Handle, name: str, entry: Entry) -> Iterator[bytes]:
        return self._blocks(self._open_regular(directory, name, os.O_RDONLY))

    @staticmethod
    def _blocks(fd: int) -> Iterator[bytes]:
        try:
            while block := os.read(fd, BLOCK):
                yield block
        finally:
            os.close(fd)

    def write(
        self, directory: Handle, name: str, entry: Entry | None, data: bytes, mode: WriteMode
    ) -> None:
        flags = os.O_WRONLY | os.O_CREAT | _WRITE_FLAGS[mode]
        fd = self._open_regular(directory, name, flags)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def mkdir(self, directory: Handle, name: str) -> None:
        os.mkdir(name, 0o755, dir_fd=directory)

    def unlink(self, directory: Handle, name: str) -> None:
        os.unlink(name, dir_fd=directory)

    def remove_tree(self, directory: Handle, name: str) -> None:
        parent = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=directory)
        try:  # fd-based: symlinks inside are removed, never followed
            shutil.rmtree(name, dir_fd=parent)
        finally:
            os.close(parent)

    def reading(self) -> AbstractContextManager[object]:
        return contextlib.nullcontext()

    def mutating(self) -> AbstractContextManager[object]:
        return contextlib.nullcontext()
