"""``Backend`` primitives on a host directory, one descriptor at a time.

Handles are directory descriptors opened with ``O_NOFOLLOW`` relative to
their parent (``O_PATH``, or readable ones from ``scan_child``, which a walk
keeps to list and read from), so the frontend's walk never hands a path
string to the kernel. The root itself is opened once, when the backend is
made: renaming or replacing the root's path later cannot redirect it. Files
are opened through ``workspacefs.posix`` (``O_NOFOLLOW | O_NONBLOCK``, checked
with ``fstat`` before a byte moves): a symlink swapped in fails with ELOOP,
and a fifo or device never blocks the caller. Listings take each entry's
type from the kernel's ``d_type``, so listing a directory stats nothing.

It lives in ``fs`` (not ``host``) because hydration walks host directories
with the same rules as ``HostFilesystem``: one implementation of confinement.
"""

from __future__ import annotations

import contextlib
import operator
import os
import stat as _stat
import threading
import weakref
from collections.abc import Iterable
from contextlib import AbstractContextManager

from .._errors import PathEscapeError
from ..posix import (
    BLOCK,
    DIRECTORY_FLAGS,
    open_beneath,
    open_regular,
    openat2_available,
    regular_blocks,
    remove_entry,
    rename_beneath,
)
from ._backend import Entry, Handle, Kind
from ._paths import strip_mount_point
from ._results import WriteMode

_PATH_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_kind_field = operator.itemgetter(1)
_NO_LOCK = contextlib.nullcontext()  # the kernel orders a host's reads; reusable, reentrant
_WRITE_FLAGS: dict[WriteMode, int] = {
    "create": os.O_EXCL,
    "overwrite": os.O_TRUNC,
    "append": os.O_APPEND,
}


_KINDS = {_stat.S_IFREG: Kind.FILE, _stat.S_IFDIR: Kind.DIRECTORY, _stat.S_IFLNK: Kind.SYMLINK}
_FORMAT = 0o170000  # the file-type bits of a mode (``S_IFMT``)


def _other_kind(entry: os.DirEntry[str]) -> Kind | None:
    """A fifo, socket or device (``OTHER``), or None for an entry gone since it was listed."""
    try:
        entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        return None
    return Kind.OTHER


def list_directory(fd: int) -> list[tuple[str, Kind]]:
    """(name, kind) of each entry of a directory opened for reading, in the kernel's order.

    The kinds come from the listing itself (``d_type``), so a directory of
    files costs no ``stat``; a filesystem that gives no type is asked by
    ``lstat``, inside ``DirEntry``.
    """
    file, directory, symlink = Kind.FILE, Kind.DIRECTORY, Kind.SYMLINK
    with os.scandir(fd) as entries:
        # Kept by hand (fmt: skip): ruff would put each operand of the chain on a line of its own.
        listed = [
            (entry.name,
             file if entry.is_file(follow_symlinks=False)
             else directory if entry.is_dir(follow_symlinks=False)
             else symlink if entry.is_symlink()
             else _other_kind(entry))
            for entry in entries
        ]  # fmt: skip
    if None in map(_kind_field, listed):  # C-level scan: rare, and cheap when absent
        return [(name, kind) for name, kind in listed if kind is not None]
    return listed  # type: ignore[return-value]  # None ruled out just above


def entry_of(info: os.stat_result) -> Entry:
    """A host ``lstat`` as the frontend's ``Entry`` (its kind one lookup: a listing
    makes one for every name)."""
    mode = info.st_mode
    kind = _KINDS.get(mode & _FORMAT, Kind.OTHER)
    return Entry(kind, (info.st_dev, info.st_ino), info.st_size, mode, info.st_mtime_ns, None)


class DirectoryBackend:
    """``Backend`` primitives confined to the directory ``root`` (a real path, or an
    open directory descriptor, which is duplicated)."""

    def __init__(self, root: str | int, *, mount_point: str | None = None) -> None:
        if isinstance(root, int):
            self._fd = os.open(".", _PATH_FLAGS, dir_fd=root)
            self._root = os.readlink(f"/proc/self/fd/{self._fd}")
        else:
            self._fd = os.open(root, _PATH_FLAGS)
            self._root = root
        self._mount_point = mount_point
        # A conditional write (``if_match``) is a check, then a write: the protocol's
        # writes through this backend take turns, so none comes between the two. A
        # host directory has no compare-and-swap, so writers outside this process
        # (an editor, a shell) are not held off.
        self._writing = threading.RLock()
        self._closer = weakref.finalize(self, os.close, self._fd)

    @property
    def descriptor(self) -> int:
        """The root's descriptor, owned by the backend (valid while it lives)."""
        return self._fd

    def close(self) -> None:
        """Release the root's descriptor now rather than when collected."""
        self._closer()

    def root(self) -> Handle:
        return os.open(".", _PATH_FLAGS, dir_fd=self._fd)

    def release(self, handle: Handle) -> None:
        os.close(handle)

    def lookup(self, directory: Handle, name: str) -> Entry | None:
        try:
            return entry_of(os.stat(name, dir_fd=directory, follow_symlinks=False))
        except FileNotFoundError:
            return None

    def lookup_all(self, directory: Handle, names: Iterable[str]) -> list[Entry | None]:
        # One call for a listing's names: around each ``lstat``, ``lookup``'s own call
        # and its exception frame took as long as the ``lstat`` itself.
        found: list[Entry | None] = []
        lstat, add = os.stat, found.append
        for name in names:
            try:
                add(entry_of(lstat(name, dir_fd=directory, follow_symlinks=False)))
            except FileNotFoundError:
                add(None)
        return found

    def enter_path(self, path: str) -> Handle | None:
        # One openat2 (RESOLVE_BENEATH, no link followed) for the whole path: 4 us where
        # the walk's lookup and open of each directory took 25 us for three of them.
        if not path or not openat2_available():
            return None
        try:
            return open_beneath(self._fd, path, os.O_PATH | os.O_DIRECTORY)
        except OSError:
            return None

    def enter(self, directory: Handle, name: str, entry: Entry) -> Handle:
        fd = os.open(name, _PATH_FLAGS, dir_fd=directory)
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != entry.key:
            os.close(fd)
            raise FileNotFoundError(2, "directory replaced during the call", name)
        return fd

    def scan(self, directory: Handle) -> list[tuple[str, Kind]]:
        fd = os.open(".", DIRECTORY_FLAGS, dir_fd=directory)  # handles are O_PATH: not listable
        try:
            return list_directory(fd)
        finally:
            os.close(fd)

    def scan_child(
        self, directory: Handle, name: str
    ) -> tuple[Handle, tuple[int, int], list[tuple[str, Kind]]]:
        # Opened to list (not O_PATH), and kept as the handle: one open per directory walked.
        fd = os.open(name, DIRECTORY_FLAGS, dir_fd=directory)
        try:
            info = os.fstat(fd)
            return fd, (info.st_dev, info.st_ino), list_directory(fd)
        except BaseException:
            os.close(fd)
            raise

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

    def read(self, directory: Handle, name: str, entry: Entry, offset: int, size: int) -> bytes:
        fd = open_regular(directory, name)
        try:
            blocks = []
            while size > 0 and (block := os.pread(fd, min(size, BLOCK), offset)):
                blocks.append(block)
                offset += len(block)
                size -= len(block)
            return b"".join(blocks)
        finally:
            os.close(fd)

    def read_blocks(self, directory: Handle, name: str, entry: Entry | None) -> Iterable[bytes]:
        return regular_blocks(directory, name)  # refuses a link or special file itself

    def write(
        self, directory: Handle, name: str, entry: Entry | None, data: bytes, mode: WriteMode
    ) -> None:
        flags = os.O_WRONLY | os.O_CREAT | _WRITE_FLAGS[mode]
        fd = open_regular(directory, name, flags, 0o644)
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

    def rename(
        self, directory: Handle, name: str, into: Handle, target_name: str, replace: bool
    ) -> None:
        rename_beneath(directory, name, into, target_name, replace=replace)

    def remove_tree(self, directory: Handle, name: str) -> None:
        remove_entry(directory, name)  # descriptor-based: links inside removed, never followed

    def reading(self) -> AbstractContextManager[object]:
        return _NO_LOCK

    def mutating(self) -> AbstractContextManager[object]:
        return self._writing
