"""The exception hierarchy shared by every layer.

Every error is an ``OSError`` with ``errno`` and ``filename`` set, and also an
instance of the builtin a caller would naturally catch (``FileNotFoundError``,
``PermissionError``, ``ValueError`` for limits, ...). The FUSE layer turns any
of them into ``FUSEError(exc.errno)``; tool handlers catch the builtins.

This module imports only the standard library, so the pure tree may use it.
"""

from __future__ import annotations

import errno as _errno


class FsError(OSError):
    """Base class of every workspacefs filesystem error."""

    default_errno = _errno.EIO

    def __init__(self, message: str, path: str | None = None, *, code: int | None = None) -> None:
        super().__init__(code if code is not None else self.default_errno, message, path)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.strerror, self.filename, self.errno))


def _rebuild(cls: type[FsError], message: str, path: str | None, code: int) -> FsError:
    return cls(message, path, code=code)


class NotFoundError(FsError, FileNotFoundError):
    """The path or inode does not exist (ENOENT)."""

    default_errno = _errno.ENOENT


class AlreadyExistsError(FsError, FileExistsError):
    """The target already exists (EEXIST)."""

    default_errno = _errno.EEXIST


class IsADirectoryFsError(FsError, IsADirectoryError):
    """A file operation was applied to a directory (EISDIR)."""

    default_errno = _errno.EISDIR


class NotADirectoryFsError(FsError, NotADirectoryError):
    """A directory operation was applied to something else (ENOTDIR)."""

    default_errno = _errno.ENOTDIR


class DirectoryNotEmptyError(FsError):
    """rmdir or rename onto a non-empty directory (ENOTEMPTY)."""

    default_errno = _errno.ENOTEMPTY


class ReadOnlyError(FsError, PermissionError):
    """A write on a read-only filesystem or snapshot view (EROFS)."""

    default_errno = _errno.EROFS


class PathEscapeError(FsError, PermissionError):
    """A path that would leave the workspace root (EACCES)."""

    default_errno = _errno.EACCES


class NotPermittedError(FsError, PermissionError):
    """The operation is not permitted on this object (EPERM)."""

    default_errno = _errno.EPERM


class InvalidPathError(FsError, ValueError):
    """A malformed path or name: NUL byte, empty or reserved name (EINVAL)."""

    default_errno = _errno.EINVAL


class InvalidArgumentError(FsError, ValueError):
    """An argument the operation cannot accept (EINVAL)."""

    default_errno = _errno.EINVAL


class NameTooLongError(FsError, ValueError):
    """A name or path beyond the POSIX or protocol limit (ENAMETOOLONG)."""

    default_errno = _errno.ENAMETOOLONG


class LimitExceededError(FsError, ValueError):
    """A request beyond a configured limit; the message names the limit (EFBIG)."""

    default_errno = _errno.EFBIG


class InvalidContentError(FsError, ValueError):
    """Content that cannot be encoded or decoded as asked, e.g. invalid UTF-8 (EILSEQ)."""

    default_errno = _errno.EILSEQ


class NoAttributeError(FsError):
    """The extended attribute does not exist (ENODATA)."""

    default_errno = _errno.ENODATA


class CrossDeviceError(FsError):
    """The operation would cross filesystems (EXDEV)."""

    default_errno = _errno.EXDEV


class TooManyLinksError(FsError):
    """Too many symbolic links were followed (ELOOP)."""

    default_errno = _errno.ELOOP


class BusyError(FsError):
    """The object is in use, e.g. removing the root (EBUSY)."""

    default_errno = _errno.EBUSY


class ContentChangedError(FsError):
    """A conditional change found the file changed since the caller read it (ESTALE);
    nothing was changed (see ``if_match`` in the ``Filesystem`` protocol)."""

    default_errno = _errno.ESTALE


class UnresolvedConflictsError(BusyError):
    """A merge held open cannot continue: some of its paths still conflict (EBUSY).

    The message names every such path; nothing was changed.
    """


class MountedInsideError(BusyError):
    """A mount point cannot be unmounted: something else is mounted inside it (EBUSY).

    Detaching it would take the inner mounts along (a lazy unmount detaches
    the whole subtree), and with them another workspace's daemon and data.
    """


class NoSpaceError(FsError):
    """A write that would pass the workspace's memory budget (ENOSPC); nothing was written."""

    default_errno = _errno.ENOSPC


class AccessDeniedError(FsError, PermissionError):
    """A change an access rule refuses (EACCES; EROFS where the rule makes the whole
    tree read-only); the message names the rule, and nothing was changed."""

    default_errno = _errno.EACCES


class QuotaExceededError(FsError):
    """A change that would make the files a quota rule covers hold more than its quota
    (EDQUOT); the message names the rule, and nothing was changed."""

    default_errno = _errno.EDQUOT


class NotSupportedError(FsError):
    """An operation or mode this filesystem does not implement (EOPNOTSUPP)."""

    default_errno = _errno.EOPNOTSUPP


class BackendUnavailableError(FsError, RuntimeError):
    """The backend cannot serve requests, e.g. a closed mount (EIO)."""

    default_errno = _errno.EIO


class MountLostError(BackendUnavailableError):
    """The workspace's mount stopped serving while its owner still held it (ENOTCONN).

    Raised by every call on the workspace until the mount is left (the ``with``
    block ends, or ``Mount.unmount``); the tree is intact and can then be
    persisted or mounted again.
    """

    default_errno = _errno.ENOTCONN


class StoreError(FsError):
    """A workspace's store on disk cannot be used as it is (EIO unless said otherwise)."""


class StoreDamagedError(StoreError):
    """A store's files are not what this version writes: another format, or damage."""


class SnapshotError(FsError, RuntimeError):
    """Base class of snapshot errors; a ``RuntimeError`` too, as the seeds catch them."""


class SnapshotCreationError(SnapshotError):
    """A snapshot could not be taken."""


class SnapshotRestoreError(SnapshotError):
    """A snapshot could not be restored; the live tree is unchanged."""


class ReadOnlyRestoreError(SnapshotRestoreError, ReadOnlyError):
    """A restore refused because the filesystem is read-only (EROFS); nothing changed.

    Both a ``SnapshotRestoreError`` (what the seeds' ``restore`` raises) and a
    ``ReadOnlyError`` (a ``PermissionError``, as every refused write is).
    """

    default_errno = _errno.EROFS


class SnapshotNotFoundError(SnapshotRestoreError, LookupError):
    """No snapshot with this id exists (or it was pruned)."""

    default_errno = _errno.ENOENT


class SnapshotIncompatibleError(SnapshotRestoreError):
    """The snapshot belongs to another workspace or backend."""

    default_errno = _errno.EXDEV


_BY_ERRNO: dict[int, type[FsError]] = {
    cls.default_errno: cls
    for cls in (
        NotFoundError,
        AlreadyExistsError,
        IsADirectoryFsError,
        NotADirectoryFsError,
        DirectoryNotEmptyError,
        ReadOnlyError,
        NotPermittedError,
        InvalidArgumentError,
        NameTooLongError,
        NoAttributeError,
        CrossDeviceError,
        TooManyLinksError,
        BusyError,
        NoSpaceError,
        NotSupportedError,
        QuotaExceededError,
    )
}
_BY_ERRNO[_errno.EACCES] = PathEscapeError


def error_for(code: int, message: str, path: str | None = None) -> FsError:
    """Return the hierarchy's exception for an errno, e.g. from an ``OSError``."""
    return _BY_ERRNO.get(code, FsError)(message, path, code=code)
