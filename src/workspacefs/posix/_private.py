"""Files and directories only their owner reaches: 0700 and 0600, whatever the umask.

What workspacefs keeps outside a workspace (persisted repositories, archives,
session dumps) holds every file of the workspace, whatever its mode, so it is
made private rather than left to the umask (0755 directories, 0644 files).
"""

from __future__ import annotations

import os
import stat

from .._errors import NotPermittedError

PRIVATE_DIRECTORY = 0o700
"""The mode of a directory made private."""
PRIVATE_FILE = 0o600
"""The mode of a file made private."""


def make_private_directory(path: str | os.PathLike[str]) -> bool:
    """Make ``path`` a directory only its owner reaches (its missing parents as
    ``os.makedirs`` makes them); True if made now, False if a directory was there
    already, which is left as it is (its owner chose its mode).

    Raises:
        FileExistsError: Something other than a directory is there.
    """
    location = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(location))
    os.makedirs(parent, exist_ok=True)
    try:
        os.mkdir(location, PRIVATE_DIRECTORY)  # the umask can only take bits away
    except FileExistsError:
        if not os.path.isdir(location):
            raise
        return False
    return True


def check_own_directory(path: str | os.PathLike[str]) -> None:
    """Refuse a directory that another user owns or may write: one in a shared place
    such as ``/tmp`` that someone else made first, to read or swap what goes in.

    Raises:
        NotPermittedError: ``path`` is a link, not a directory, someone else's, or
            writable by others.
    """
    info = os.stat(path, follow_symlinks=False)
    if not stat.S_ISDIR(info.st_mode):
        raise NotPermittedError("not a directory (or a symlink)", os.fspath(path))
    if info.st_uid != os.geteuid():
        raise NotPermittedError(f"the directory belongs to uid {info.st_uid}", os.fspath(path))
    if info.st_mode & 0o022:
        raise NotPermittedError(
            f"others may write in the directory (mode {stat.S_IMODE(info.st_mode):o})",
            os.fspath(path),
        )


def open_private_file(path: str | os.PathLike[str]) -> int:
    """Open ``path`` for writing, empty, with mode 0600 (an existing file's mode too),
    never through a symlink; the descriptor."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_private_file(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` as ``open_private_file`` opens it."""
    with os.fdopen(open_private_file(path), "wb") as out:
        out.write(data)
