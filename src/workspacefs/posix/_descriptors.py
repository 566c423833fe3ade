"""Descriptor primitives, reading side: the one way this library opens what lies under
a real directory (the writing side is ``_replace``).

Everything that reads or writes under a host directory (the protocol's
verbs, snapshot capture and restore, archive export and import, hydration,
the shadow provider) goes through these functions. They take an open
directory descriptor and a name (or a relative path) and never follow a
symlink: a component swapped for a link, or for anything else, between two
calls makes the next call fail instead of reaching outside.

* Multi-component paths open with ``openat2(RESOLVE_BENEATH |
  RESOLVE_NO_SYMLINKS)`` where the kernel has it (Linux 5.6+): the kernel
  refuses, atomically, any symlink and any step above the starting
  directory. Elsewhere the same answer comes from a walk of ``openat`` calls
  with ``O_NOFOLLOW``, one component at a time.
* Files are opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked with
  ``fstat`` before a byte moves, so a fifo or device never blocks.
* Walks enter each directory through its parent's descriptor and check it is
  the one that was listed.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import stat as _stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""A directory opened to list, create in, chmod or utime (never through a link)."""
FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""Added to every file open: no link followed, no fifo waited on."""
BLOCK = 1 << 20
"""The size of the blocks files are read and copied in."""
FIRST_BLOCK = 96 << 10
"""A large file's first block in ``regular_blocks``: what a reader looks at before it decides
to go on (GNU grep's first buffer, where it looks for a NUL), so one that stops there (a
binary file) reads no more."""

_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
_OPENAT2_NUMBERS = {"x86_64": 437, "aarch64": 437, "riscv64": 437, "ppc64le": 437, "s390x": 437}


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


class _Openat2:
    """``openat2(2)`` through libc's ``syscall``; ``usable`` once probed."""

    def __init__(self) -> None:
        self.number = _OPENAT2_NUMBERS.get(platform.machine())
        self._syscall: ctypes._NamedFuncPointer | None = None
        self._usable: bool | None = None

    @property
    def usable(self) -> bool:
        if self._usable is None:
            self._usable = self._probe()
        return self._usable

    @usable.setter
    def usable(self, value: bool) -> None:  # tests run the component walk too
        self._usable = value

    def _probe(self) -> bool:
        if self.number is None:
            return False
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            function = libc.syscall
        except (OSError, AttributeError):
            return False
        function.restype = ctypes.c_long
        function.argtypes = (ctypes.c_long, ctypes.c_int, ctypes.c_char_p,
                             ctypes.POINTER(_OpenHow), ctypes.c_size_t)  # fmt: skip
        self._syscall = function
        try:  # seccomp filters (containers) may answer ENOSYS or EPERM
            os.close(self.call(os.open("/", DIRECTORY_FLAGS), ".", DIRECTORY_FLAGS, 0, close=True))
        except OSError:
            return False
        return True

    def call(self, directory: int, path: str, flags: int, mode: int, *, close: bool = False) -> int:
        assert self._syscall is not None
        assert self.number is not None
        how = _OpenHow(flags, mode if flags & os.O_CREAT else 0, _RESOLVE)
        try:
            fd = int(self._syscall(self.number, directory, os.fsencode(path),
                                   ctypes.byref(how), ctypes.sizeof(how)))  # fmt: skip
        finally:
            if close:
                os.close(directory)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), path)
        return fd


_openat2 = _Openat2()


def openat2_available() -> bool:
    """True if paths resolve with ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` here."""
    return _openat2.usable


def split_path(path: str) -> list[str]:
    """The components of a relative path; OSError(EXDEV) for ``..``, absolute or NUL."""
    if path.startswith("/") or "\0" in path:
        raise OSError(errno.EXDEV, "path is not relative to the directory", path)
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise OSError(errno.EXDEV, "path leaves the directory", path)
    return parts


def open_beneath(directory: int, path: str, flags: int, mode: int = 0o600) -> int:
    """Open ``path`` (relative, ``/``-separated) beneath ``directory``, following no link.

    Every component must be a real directory and the last one no symlink
    (``O_NOFOLLOW`` is added): a link anywhere fails with ELOOP (or ENOTDIR),
    ``..`` or an absolute path with EXDEV. ``""`` opens ``directory`` itself.
    """
    parts = split_path(path)
    flags |= os.O_NOFOLLOW | os.O_CLOEXEC
    if not parts:
        return os.open(".", flags, mode, dir_fd=directory)
    if _openat2.usable:
        return _openat2.call(directory, "/".join(parts), flags, mode)
    current = directory
    try:
        for part in parts[:-1]:
            step = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                           dir_fd=current)  # fmt: skip
            if current != directory:
                os.close(current)
            current = step
        return os.open(parts[-1], flags, mode, dir_fd=current)
    finally:
        if current != directory:
            os.close(current)


def same_object(first: os.stat_result, second: os.stat_result) -> bool:
    """True if two stats describe the same inode."""
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def open_directory(directory: int, name: str, expected: os.stat_result | None = None) -> int:
    """The subdirectory ``name`` of ``directory``, opened without following a link.

    With ``expected`` (an earlier ``lstat``), ENOENT unless it is still that directory.
    """
    fd = os.open(name, DIRECTORY_FLAGS, dir_fd=directory)
    if expected is not None and not same_object(os.fstat(fd), expected):
        os.close(fd)
        raise OSError(errno.ENOENT, "directory replaced during the call", name)
    return fd


def open_regular(directory: int, name: str, flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
    """Open the regular file ``name`` of ``directory``; refuse anything else before any I/O.

    Raises:
        OSError: ELOOP for a symlink, EISDIR for a directory, EINVAL
            ("not a regular file") for a fifo, socket or device.
    """
    fd, _ = _open_regular(directory, name, flags, mode)
    with contextlib.suppress(OSError):  # reads should block like any file's from now on
        os.set_blocking(fd, True)
    return fd


def _open_regular(directory: int, name: str, flags: int, mode: int) -> tuple[int, os.stat_result]:
    fd = os.open(name, flags | FILE_FLAGS, mode, dir_fd=directory)
    info = os.fstat(fd)
    if not _stat.S_ISREG(info.st_mode):
        os.close(fd)
        if _stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", name)
        raise OSError(errno.EINVAL, "not a regular file", name)
    return fd, info


def read_blocks(fd: int, size: int = BLOCK) -> Iterator[bytes]:
    """The content of an open file from its current offset, in blocks; closes ``fd``."""
    try:
        while block := os.read(fd, size):
            yield block
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes | bytearray | memoryview, offset: int | None = None) -> None:
    """Write all of ``data`` to ``fd`` (a write may take less than it is given): at
    ``offset`` with ``pwrite`` if given, else at the file's position."""
    view = memoryview(data)
    while view:
        if offset is None:
            view = view[os.write(fd, view) :]
        else:
            written = os.pwrite(fd, view, offset)
            view, offset = view[written:], offset + written


def write_parts(fd: int, parts: Sequence[bytes | bytearray | memoryview], offset: int) -> None:
    """Write ``parts`` one after the other at ``offset`` (``pwritev``, so nothing is
    joined in memory first), however many there are and however little each call takes."""
    views = [memoryview(part) for part in parts if len(part)]
    limit = os.sysconf("SC_IOV_MAX")
    first = 0
    while first < len(views):
        written = os.pwritev(fd, views[first : first + limit], offset)
        offset += written
        while first < len(views) and written >= len(views[first]):
            written -= len(views[first])
            first += 1
        if written:
            views[first] = views[first][written:]


def _read(fd: int, size: int) -> bytes:
    """``os.read``, on a descriptor that may still be non-blocking (see ``regular_blocks``)."""
    try:
        return os.read(fd, size)
    except BlockingIOError:
        os.set_blocking(fd, True)
        return os.read(fd, size)


def _rest(fd: int, first: bytes) -> Iterator[bytes]:
    try:
        yield first
        while block := _read(fd, BLOCK):
            yield block
    finally:
        os.close(fd)


def regular_blocks(directory: int, name: str) -> Iterable[bytes]:
    """The content of the regular file ``name`` of ``directory`` in blocks, refusing anything
    else as ``open_regular`` does.

    Made for walks that read every file they list (grep): a file smaller
    than ``FIRST_BLOCK`` is read with one ``read`` of its size plus one byte,
    and an answer of exactly its size is taken as the end, so a small file
    costs open, fstat, read and close. A larger one comes as ``FIRST_BLOCK``
    bytes, then blocks of ``BLOCK``. A file that grew meanwhile, or one whose
    size says nothing (procfs), is read on to the end. The descriptor stays
    ``O_NONBLOCK`` (a regular file ignores it on Linux's filesystems) unless
    a read says otherwise.
    """
    fd, info = _open_regular(directory, name, os.O_RDONLY, 0)
    size = info.st_size
    try:
        first = _read(fd, size + 1 if size < FIRST_BLOCK else FIRST_BLOCK)
    except BaseException:
        os.close(fd)
        raise
    if len(first) == size or not first:  # all fstat promised and no byte beyond, or nothing
        os.close(fd)
        return (first,) if first else ()
    return _rest(fd, first)


def _sorted_entries(directory: int) -> list[os.DirEntry[str]]:
    """``scandir`` of a ``DIRECTORY_FLAGS`` descriptor; their ``stat`` needs it open."""
    with os.scandir(directory) as entries:
        return sorted(entries, key=lambda entry: entry.name)


def _type_of(entry: os.DirEntry[str]) -> int:
    if entry.is_symlink():
        return _stat.S_IFLNK
    if entry.is_dir(follow_symlinks=False):
        return _stat.S_IFDIR
    if entry.is_file(follow_symlinks=False):
        return _stat.S_IFREG
    try:
        return _stat.S_IFMT(entry.stat(follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return 0


def scan_directory(directory: int) -> list[tuple[str, int]]:
    """(name, file type as ``stat.S_IFMT`` gives it) of each entry of an open directory
    (any descriptor of it, ``O_PATH`` too), sorted by name; 0 for one gone meanwhile."""
    fd = os.open(".", DIRECTORY_FLAGS, dir_fd=directory)
    try:
        return [(entry.name, _type_of(entry)) for entry in _sorted_entries(fd)]
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class Walked:
    """One entry met by ``walk_directory``.

    ``parent`` is the open descriptor of its directory, valid until the walk
    moves on: open the entry relative to it, never by ``path``.
    """

    path: str
    name: str
    info: os.stat_result
    parent: int

    @property
    def is_dir(self) -> bool:
        """True for a real directory (never a link to one)."""
        return _stat.S_ISDIR(self.info.st_mode)


def walk_directory(
    directory: int, *, enter: Callable[[Walked], bool] | None = None
) -> Iterator[Walked]:
    """Every entry below ``directory``, depth first, names sorted, links never followed.

    Directories are yielded before their content and entered through their
    parent's descriptor, checked to be the directory that was listed; one
    swapped meanwhile is not entered, nor one for which ``enter`` says False.
    Holds one descriptor per level, no Python recursion.
    """
    stack: list[tuple[int, str, Iterator[os.DirEntry[str]]]] = []
    top = os.open(".", DIRECTORY_FLAGS, dir_fd=directory)
    try:
        stack.append((top, "", iter(_sorted_entries(top))))
        while stack:
            fd, prefix, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                os.close(fd)
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            path = prefix + entry.name
            walked = Walked(path, entry.name, info, fd)
            yield walked
            if _stat.S_ISDIR(info.st_mode) and (enter is None or enter(walked)):
                try:
                    child = open_directory(fd, entry.name, info)
                except OSError:
                    continue  # gone or swapped since listed: not entered
                try:
                    listing = iter(_sorted_entries(child))
                except OSError:
                    os.close(child)
                    raise
                stack.append((child, path + "/", listing))
    finally:
        for fd, _, _ in stack:
            os.close(fd)


class OpenDirectories:
    """Descriptors of directories beneath one root, opened on demand and kept for reuse.

    For walks driven by a list of paths (a git index) rather than by the
    directories themselves: each directory is opened once with
    ``open_beneath``, so a path through a symlink is simply not found. The
    most recently used ``keep`` descriptors stay open.
    """

    def __init__(self, root: int, keep: int = 64) -> None:
        self._root = root
        self._keep = keep
        self._open: dict[str, int] = {}

    def get(self, path: str) -> int | None:
        """The directory at ``path`` ("" is the root); None unless it is a real directory."""
        if not path:
            return self._root
        fd = self._open.pop(path, None)
        if fd is None:
            try:
                fd = open_beneath(self._root, path, DIRECTORY_FLAGS)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.EXDEV):
                    return None
                raise
            if len(self._open) >= self._keep:
                oldest = next(iter(self._open))
                os.close(self._open.pop(oldest))
        self._open[path] = fd  # (re)inserted last: the most recently used
        return fd

    def lstat(self, path: str) -> os.stat_result | None:
        """``lstat`` of ``path`` beneath the root; None if it or a directory above is missing,
        or a directory above is not a real directory."""
        parent, _, name = path.rpartition("/")
        directory = self.get(parent)
        if directory is None:
            return None
        try:
            return os.stat(name, dir_fd=directory, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def close(self) -> None:
        """Close every descriptor kept."""
        while self._open:
            os.close(self._open.popitem()[1])

    def __enter__(self) -> OpenDirectories:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
