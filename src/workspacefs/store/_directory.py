"""A workspace's store directory: made private, checked, and locked by one process.

Layout: ``format`` (the store format's name and version), ``lock`` (held with
``flock`` by the process serving the workspace; it holds that process's pid),
``workspace`` (the workspace's id), ``base`` (the git repository it was loaded
from, if it was), ``persist`` (where ``persist`` writes, if set), ``journal/``
(the segment files), ``checkpoints/`` and ``git/`` (the store's repository). The lock dies with its
process, however it dies, so a crashed daemon's store is free again at once.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat

from .._errors import BusyError, NotPermittedError, StoreDamagedError

STORE_FORMAT = "workspacefs-store 1"

SUMMARY = "summary"
"""The setting a workspace writes when it stops or checkpoints: its file count and
bytes, JSON (what ``list --all`` shows of a stopped workspace without opening it)."""


class StoreDirectory:
    """An open, locked store directory; ``close`` releases it.

    Raises:
        BusyError: Another process holds the store (its pid is named).
        NotPermittedError: The directory belongs to another user or others may
            read or write it.
        StoreDamagedError: The directory holds a store of another format.
    """

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        created = _make_private(self.path)
        if created:
            sync_directory(os.path.dirname(self.path))
        self._lock_fd = lock_store(self.path)
        try:
            self._check_format(created)
            self.journal = os.path.join(self.path, "journal")
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.journal, 0o700)
                sync_directory(self.path)
        except BaseException:
            os.close(self._lock_fd)
            raise

    def _check_format(self, created: bool) -> None:
        path = os.path.join(self.path, "format")
        try:
            with open(path, encoding="utf-8") as found:
                written = found.read().strip()
        except FileNotFoundError:
            # A store made by a process killed before its format file was in place holds
            # at most the lock and that file under its temporary name: made anew.
            if not created and not set(os.listdir(self.path)) <= {"lock", "format.new"}:
                raise StoreDamagedError(
                    "not a workspace store (no format file)", self.path
                ) from None
            _write_durably(path, STORE_FORMAT)
            return
        if written != STORE_FORMAT:
            raise StoreDamagedError(
                f"the store was written as {written!r}; this version reads {STORE_FORMAT!r}",
                self.path,
            )

    def workspace_id(self, new: str) -> str:
        """The id of the workspace this store keeps: the one written when the store was
        made, else ``new``, written now."""
        path = os.path.join(self.path, "workspace")
        try:
            with open(path, encoding="utf-8") as found:
                return found.read().strip()
        except FileNotFoundError:
            pass
        _write_durably(path, new)
        return new

    def setting(self, name: str) -> str | None:
        """The value of one of the store's one-line settings (None: not set)."""
        try:
            with open(os.path.join(self.path, name), encoding="utf-8") as found:
                return found.read().strip() or None
        except FileNotFoundError:
            return None

    def set_setting(self, name: str, value: str | None) -> None:
        """Set (None: remove) one of the store's one-line settings, durably."""
        path = os.path.join(self.path, name)
        if value is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            return
        _write_durably(path, value)

    def base(self) -> str | None:
        """The git repository the workspace was loaded from, whose blobs the journal
        names (None: the journal holds every byte)."""
        return self.setting("base")

    def set_base(self, repository: str | None) -> None:
        """Record ``repository`` as the base (None: no base)."""
        self.set_setting("base", None if repository is None else os.path.abspath(repository))

    def close(self) -> None:
        """Release the lock; safe to call twice."""
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1


def _make_private(path: str) -> bool:
    """Make ``path`` a directory only its owner reaches, or check that it is one;
    True if it was made now."""
    try:
        os.mkdir(path, 0o700)
        return True
    except FileExistsError:
        pass
    info = os.stat(path, follow_symlinks=False)
    if not stat.S_ISDIR(info.st_mode):
        raise NotPermittedError("a workspace store must be a directory", path)
    if info.st_uid != os.geteuid():
        raise NotPermittedError(f"the store belongs to uid {info.st_uid}", path)
    if info.st_mode & 0o077:
        raise NotPermittedError(
            f"others may reach the store (mode {stat.S_IMODE(info.st_mode):o}); "
            "chmod 700 it if that is what you meant",
            path,
        )
    return False


def lock_store(path: str) -> int:
    """Hold the store's lock file; its fd. The file says which process holds it.

    Raises:
        BusyError: Another process holds it (named).
    """
    fd = os.open(os.path.join(path, "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = lock_holder(fd) or "?"
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise BusyError(f"the store is in use by process {holder}", path) from None
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def lock_holder(fd: int) -> str:
    """What the lock file open on ``fd`` says of its holder: a pid ("" if nothing)."""
    return os.pread(fd, 32, 0).decode("ascii", "replace").strip()


def _write_durably(path: str, line: str) -> None:
    """Make ``path`` hold ``line``, whole or not at all, on disk when this returns."""
    with open(path + ".new", "w", encoding="utf-8") as written:
        written.write(line + "\n")
        written.flush()
        os.fsync(written.fileno())
    os.replace(path + ".new", path)
    sync_directory(os.path.dirname(path))


def sync_directory(path: str) -> None:
    """fsync a directory: its entries (a file made, renamed or removed) reach the disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
