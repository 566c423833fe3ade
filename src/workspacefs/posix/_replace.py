"""Descriptor primitives, writing side: create, replace and remove under a real directory.

Every function takes an open directory descriptor and a name (or a relative
path) and never follows a symlink (see ``_descriptors``). Writes replace
atomically: a new file or link is made under a temporary name in the same
directory, then renamed over the old name, so a planted symlink is replaced
itself, never written through. Removal is descriptor-based and iterative (no
recursion limit), and never descends into a link.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat as _stat
from collections.abc import Container, Iterable

from ._descriptors import (
    BLOCK,
    DIRECTORY_FLAGS,
    FILE_FLAGS,
    open_beneath,
    open_directory,
    openat2_available,
    read_blocks,
    same_object,
    scan_directory,
    split_path,
    write_all,
)

RETRIES = 64
"""How often a step that lost a race with another process is tried again."""
TEMPORARY_PREFIX = ".wsfs-"
"""Names of the temporary files made while replacing an entry."""
_FICLONE = 0x40049409


def make_directories(directory: int, path: str, *, mode: int = 0o755, replace: bool = False) -> int:
    """Open the directory ``path`` beneath ``directory``, creating what is missing.

    With ``replace``, a file or symlink standing where a directory is needed
    is removed first (restore puts back what a snapshot holds, and never
    follows what was planted). Returns a ``DIRECTORY_FLAGS`` descriptor.
    """
    parts = split_path(path)
    if openat2_available() and parts:
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
                    attempts = _remove_emptied(frames[-1][0], name, attempts)
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
            child = _open_to_clear(fd, entry)
            if child is not None:
                frames.append(child)
    finally:
        for fd, _, _ in frames:
            os.close(fd)


def _open_to_clear(directory: int, name: str) -> tuple[int, list[tuple[str, int]], str] | None:
    """The frame of ``clear_directory`` for the directory ``name``: its descriptor, its
    entries (reversed) and its name; None if it is gone, or removed as what it is now."""
    try:
        child = open_directory(directory, name)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        remove_entry(directory, name)  # no longer a directory
        return None
    try:
        return child, scan_directory(child)[::-1], name
    except BaseException:
        os.close(child)
        raise


def _remove_emptied(directory: int, name: str, attempts: int) -> int:
    """Remove the directory ``name`` that ``clear_directory`` emptied; one refilled or
    replaced meanwhile is removed whole, up to ``RETRIES`` times a call. Returns the
    attempts made so far."""
    try:
        os.rmdir(name, dir_fd=directory)
    except FileNotFoundError:
        pass
    except OSError as exc:
        attempts += 1
        if exc.errno not in (errno.ENOTEMPTY, errno.ENOTDIR) or attempts > RETRIES:
            raise
        remove_entry(directory, name)
    return attempts


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
        write_all(fd, block)


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
