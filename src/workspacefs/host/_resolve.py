"""Race-free path resolution under a host directory.

Every step opens the next directory relative to the previous one's file
descriptor with ``O_NOFOLLOW``; symlinks are read and followed by hand,
inside the root only. A component swapped for a symlink between the check
and the use makes the open fail instead of escaping, so there is no
check-then-use window on path strings.
"""

from __future__ import annotations

import errno
import os
import stat as _stat
from dataclasses import dataclass

from .._errors import (
    NotADirectoryFsError,
    NotFoundError,
    PathEscapeError,
    TooManyLinksError,
    error_for,
)
from ..fs._paths import display, strip_mount_point

MAX_SYMLINK_HOPS = 40
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def translate(exc: OSError, path: str) -> OSError:
    """An OSError from the host as the hierarchy's class, with the workspace path."""
    if exc.errno == errno.ELOOP:
        return PathEscapeError("a symlink was swapped in during the call", path)
    return error_for(exc.errno or errno.EIO, os.strerror(exc.errno or errno.EIO), path)


@dataclass
class Located:
    """Where a path lands: an open parent directory, the final name, and its lstat."""

    parent: int  # O_PATH descriptor, owned by the caller
    name: str  # "." when the path is a directory reached as a whole (the root)
    info: os.stat_result | None

    def close(self) -> None:
        os.close(self.parent)

    def __enter__(self) -> Located:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_root(root: str) -> int:
    """An O_PATH descriptor of the workspace root."""
    return os.open(root, _DIR_FLAGS)


def locate(
    root_fd: int,
    path: str,
    *,
    follow: bool = True,
    mount_point: str | None = None,
    make_dirs: bool = False,
) -> Located:
    """Walk a normalised path below ``root_fd``; symlinks followed inside the root.

    With ``make_dirs``, missing intermediate directories are created.

    Raises:
        PathEscapeError: A ``..`` or symlink would leave the root.
        NotFoundError / NotADirectoryFsError: As a kernel walk would.
    """
    stack = [os.dup(root_fd)]
    pending = path.split("/")[::-1] if path else []
    hops = 0
    try:
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if len(stack) == 1:
                    raise PathEscapeError("path escapes the workspace root", display(path))
                os.close(stack.pop())
                continue
            current = stack[-1]
            more = any(p not in ("", ".") for p in pending)
            try:
                info = os.stat(part, dir_fd=current, follow_symlinks=False)
            except FileNotFoundError:
                if make_dirs and more:
                    os.mkdir(part, 0o755, dir_fd=current)
                    info = os.stat(part, dir_fd=current, follow_symlinks=False)
                elif more:
                    raise NotFoundError("no such file or directory", display(path)) from None
                else:
                    return Located(stack.pop(), part, None)
            if _stat.S_ISLNK(info.st_mode) and (follow or more):
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise TooManyLinksError("too many levels of symbolic links", display(path))
                target = os.readlink(part, dir_fd=current)
                if target.startswith("/"):
                    if mount_point is None:  # host-absolute: outside by definition
                        raise PathEscapeError("symlink points outside the workspace", display(path))
                    target = strip_mount_point(target, mount_point)
                    for fd in stack[1:]:
                        os.close(fd)
                    del stack[1:]
                pending.extend(reversed(target.split("/")))
                continue
            if more:
                if not _stat.S_ISDIR(info.st_mode):
                    raise NotADirectoryFsError("not a directory", display(path))
                stack.append(os.open(part, _DIR_FLAGS, dir_fd=current))
                continue
            return Located(stack.pop(), part, info)
        # The path ends at a directory itself (the root, or reached through a
        # symlink's ".."): name it "." relative to its own descriptor.
        directory = stack.pop()
        return Located(directory, ".", os.fstat(directory))
    except OSError as exc:
        if isinstance(
            exc, (PathEscapeError, NotFoundError, NotADirectoryFsError, TooManyLinksError)
        ):
            raise
        raise translate(exc, display(path)) from None
    finally:
        for fd in stack:
            os.close(fd)
