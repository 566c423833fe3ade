"""Descriptor primitives: the one way this library touches a real directory.

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
* Writes replace atomically: a new file or link is made under a temporary
  name in the same directory, then renamed over the old name. ``rename``
  replaces a planted symlink itself, never what it points to.
* Removal is descriptor-based and iterative (no recursion limit), and never
  descends into a link.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import platform
import secrets
import stat as _stat
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""A directory opened to list, create in, chmod or utime (never through a link)."""
FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""Added to every file open: no link followed, no fifo waited on."""
BLOCK = 1 << 20
RETRIES = 64
"""How often a step that lost a race with another process is tried again."""
TEMPORARY_PREFIX = ".wsfs-"
"""Names of the temporary files made while replacing an entry."""

_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
_OPENAT2_NUMBERS = {"x86_64": 437, "aarch64": 437, "riscv64": 437, "ppc64le": 437, "s390x": 437}
_FICLONE = 0x40049409


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
    fd = os.open(name, flags | FILE_FLAGS, mode, dir_fd=directory)
    info = os.fstat(fd)
    if not _stat.S_ISREG(info.st_mode):
        os.close(fd)
        if _stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", name)
        raise OSError(errno.EINVAL, "not a regular file", name)
    with contextlib.suppress(OSError):  # reads should block like any file's from now on
        os.set_blocking(fd, True)
    return fd


def read_blocks(fd: int, size: int = BLOCK) -> Iterator[bytes]:
    """The content of an open file from its current offset, in blocks; closes ``fd``."""
    try:
        while block := os.read(fd, size):
            yield block
    finally:
        os.close(fd)


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


def make_directories(directory: int, path: str, *, mode: int = 0o755, replace: bool = False) -> int:
    """Open the directory ``path`` beneath ``directory``, creating what is missing.

    With ``replace``, a file or symlink standing where a directory is needed
    is removed first (restore puts back what a snapshot holds, and never
    follows what was planted). Returns a ``DIRECTORY_FLAGS`` descriptor.
    """
    parts = split_path(path)
    if _openat2.usable and parts:
        try:
            return open_beneath(directory, path, DIRECTORY_FLAGS)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.EXDEV):
                raise
    current = os.open(".", DIRECTORY_FLAGS, dir_fd=directory)
    try:
        for part in parts:
            step = _enter_or_make(current, part, mode, replace)
            os.close(current)
            current = step
    except BaseException:
        os.close(current)
        raise
    return current


def _enter_or_make(directory: int, name: str, mode: int, replace: bool) -> int:
    for _ in range(RETRIES):
        try:
            return os.open(name, DIRECTORY_FLAGS, dir_fd=directory)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, mode, dir_fd=directory)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR) or not replace:
                raise
            remove_entry(directory, name)
    raise OSError(errno.EAGAIN, "directory kept changing during the call", name)


def remove_entry(directory: int, name: str) -> bool:
    """Remove ``name`` from ``directory`` (a whole tree if it is a directory); False if absent.

    A symlink is removed, never followed; a directory is emptied through
    descriptors first.
    """
    for _ in range(RETRIES):
        try:
            os.unlink(name, dir_fd=directory)
            return True
        except FileNotFoundError:
            return False
        except IsADirectoryError:
            pass
        except PermissionError:  # Linux answers EPERM, not EISDIR, for unlink of a directory
            if not _is_directory(directory, name):
                raise
        try:
            child = open_directory(directory, name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a link now: unlink it next round
                continue
            raise
        try:
            clear_directory(child)
        finally:
            os.close(child)
        try:
            os.rmdir(name, dir_fd=directory)
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.ENOTDIR):
                raise
    raise OSError(errno.EAGAIN, "entry kept changing during removal", name)


def _is_directory(directory: int, name: str) -> bool:
    try:
        return _stat.S_ISDIR(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def clear_directory(directory: int, *, keep: Container[str] = ()) -> None:
    """Remove everything inside the open directory ``directory``; its own names in
    ``keep`` stay. Iterative: depth costs descriptors, not Python stack."""
    frames: list[tuple[int, list[tuple[str, int]], str | None]] = []
    top = os.open(".", DIRECTORY_FLAGS, dir_fd=directory)
    attempts = 0
    try:
        frames.append((top, [e for e in scan_directory(top)[::-1] if e[0] not in keep], None))
        while frames:
            fd, entries, name = frames[-1]
            if not entries:
                frames.pop()
                os.close(fd)
                if frames and name is not None:
                    parent = frames[-1][0]
                    try:
                        os.rmdir(name, dir_fd=parent)
                    except FileNotFoundError:
                        pass
                    except OSError as exc:  # refilled or replaced meanwhile: once more
                        attempts += 1
                        if exc.errno not in (errno.ENOTEMPTY, errno.ENOTDIR) or attempts > RETRIES:
                            raise
                        remove_entry(parent, name)
                continue
            entry, kind = entries.pop()
            if kind != _stat.S_IFDIR:
                try:
                    os.unlink(entry, dir_fd=fd)
                    continue
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    if exc.errno not in (errno.EISDIR, errno.EPERM):
                        raise
            try:
                child = open_directory(fd, entry)
            except FileNotFoundError:
                continue
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                remove_entry(fd, entry)  # no longer a directory
                continue
            try:
                listing = scan_directory(child)[::-1]
            except BaseException:
                os.close(child)
                raise
            frames.append((child, listing, entry))
    finally:
        for fd, _, _ in frames:
            os.close(fd)


def _temporary_name() -> str:
    return f"{TEMPORARY_PREFIX}{secrets.token_hex(8)}.tmp"


def _rename_over(directory: int, temporary: str, name: str) -> None:
    try:
        for _ in range(RETRIES):
            try:
                os.rename(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
                return
            except OSError as exc:  # a directory stands there: it goes first
                if exc.errno not in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
                    raise
                remove_entry(directory, name)
        raise OSError(errno.EAGAIN, "entry kept changing during the call", name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise


Content = bytes | Iterable[bytes] | int
"""What ``replace_file`` writes: bytes, blocks, or an open file descriptor to copy."""


def copy_content(source: int, target: int) -> None:
    """Copy an open regular file into another: reflinked where the filesystem shares
    blocks (``FICLONE``), else in the kernel (``copy_file_range``), else by blocks."""
    try:
        fcntl.ioctl(target, _FICLONE, source)
        return
    except OSError:
        pass
    try:
        while os.copy_file_range(source, target, BLOCK * 16):
            pass
        return
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise
    os.lseek(source, 0, os.SEEK_SET)
    os.lseek(target, 0, os.SEEK_SET)
    os.ftruncate(target, 0)
    _write_all(target, read_blocks(os.dup(source)))


def _write_all(fd: int, blocks: Iterable[bytes]) -> None:
    for block in blocks:
        view = memoryview(block)
        while view:
            view = view[os.write(fd, view) :]


def replace_file(
    directory: int,
    name: str,
    content: Content,
    *,
    mode: int = 0o644,
    mtime_ns: int | None = None,
    owner: tuple[int, int] | None = None,
) -> os.stat_result:
    """Make ``name`` in ``directory`` a regular file holding ``content``, atomically.

    Whatever stood there (a file, a planted symlink, a directory tree) is
    replaced, never written through. Returns the new file's ``lstat``.
    """
    temporary = _temporary_name()
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | FILE_FLAGS, 0o600,
                 dir_fd=directory)  # fmt: skip
    try:
        if isinstance(content, int):
            copy_content(content, fd)
        elif isinstance(content, bytes):
            _write_all(fd, (content,))
        else:
            _write_all(fd, content)
        if owner is not None:
            os.fchown(fd, *owner)  # before chmod: chown clears setuid bits
        os.fchmod(fd, _stat.S_IMODE(mode))
        if mtime_ns is not None:
            os.utime(fd, ns=(mtime_ns, mtime_ns))
        made = os.fstat(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise
    os.close(fd)
    _rename_over(directory, temporary, name)
    return _settled(directory, name, made)


def replace_symlink(
    directory: int, name: str, target: str, *, mtime_ns: int | None = None
) -> os.stat_result:
    """Make ``name`` in ``directory`` a symlink to ``target``, atomically (as ``replace_file``)."""
    temporary = _temporary_name()
    os.symlink(target, temporary, dir_fd=directory)
    try:
        if mtime_ns is not None:
            os.utime(temporary, ns=(mtime_ns, mtime_ns), dir_fd=directory, follow_symlinks=False)
        made = os.stat(temporary, dir_fd=directory, follow_symlinks=False)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise
    _rename_over(directory, temporary, name)
    return _settled(directory, name, made)


def _settled(directory: int, name: str, made: os.stat_result) -> os.stat_result:
    """The ``lstat`` after the rename (its ctime changed), if the name is still ours."""
    try:
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return made
    return info if same_object(info, made) else made


def replace_directory(directory: int, name: str, *, mode: int = 0o755) -> int:
    """Make ``name`` a directory (an empty new one if anything else stood there); open it.

    An existing directory is kept as it is: restore updates its content.
    """
    return _enter_or_make(directory, name, mode, replace=True)


def set_attributes(fd: int, *, mode: int | None = None, mtime_ns: int | None = None) -> None:
    """chmod and utime an open file or directory (never a path)."""
    if mode is not None:
        os.fchmod(fd, _stat.S_IMODE(mode))
    if mtime_ns is not None:
        os.utime(fd, ns=(mtime_ns, mtime_ns))


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
