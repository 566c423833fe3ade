"""Syscalls Python's os module does not expose: renameat2, utimensat with OMIT/NOW."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
RENAME_WHITEOUT = 4
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2


def renameat2(old: str, new: str, flags: int) -> None:
    """rename(2) with flags; raises OSError with the errno."""
    if _libc.renameat2(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new), flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), old)


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def utimensat(path: str, atime: tuple[int, int], mtime: tuple[int, int]) -> None:
    """utimensat(2) with (sec, nsec) pairs; nsec may be UTIME_NOW or UTIME_OMIT."""
    times = (_Timespec * 2)(_Timespec(*atime), _Timespec(*mtime))
    if _libc.utimensat(AT_FDCWD, os.fsencode(path), times, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)


FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_ZERO_RANGE = 0x10


def fallocate(fd: int, mode: int, offset: int, length: int) -> None:
    """fallocate(2) with a mode (os.posix_fallocate has none); raises OSError."""
    call = _libc.fallocate
    call.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    if call(fd, mode, offset, length) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


_STATX_MODE = 0x2
_AT_SYMLINK_NOFOLLOW = 0x100


def cached_mode(path: str) -> int:
    """The mode as the kernel has it, asking the filesystem only if it knows its copy is stale.

    statx(2) for STATX_MODE alone: unlike stat(2), which wants the times too
    and so refetches after every write, this shows whether the kernel was told
    about a mode the filesystem changed on its own.
    """
    buffer = ctypes.create_string_buffer(256)
    if _libc.statx(AT_FDCWD, os.fsencode(path), _AT_SYMLINK_NOFOLLOW, _STATX_MODE, buffer) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)
    return int.from_bytes(buffer.raw[28:30], "little")  # struct statx: stx_mode at offset 28
