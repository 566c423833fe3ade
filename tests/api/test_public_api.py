"""The public surface: every name importable from the top level, exported once."""

from __future__ import annotations

import errno

import workspacefs
from workspacefs import _errors

REQUIRED = [
    "Filesystem",
    "SnapshotableFilesystem",
    "InMemoryFilesystem",
    "FilesystemSnapshot",
    "FilesystemDiff",
    "HostMount",
    "SnapshotRetentionPolicy",
    "SnapshotStore",
    "SnapshotError",
    "SnapshotCreationError",
    "SnapshotRestoreError",
    "SnapshotNotFoundError",
    "SnapshotIncompatibleError",
]


def test_required_names_exported() -> None:
    for name in REQUIRED:
        assert hasattr(workspacefs, name), name


def test_every_error_class_exported() -> None:
    errors = {
        name
        for name, value in vars(_errors).items()
        if isinstance(value, type) and issubclass(value, _errors.FsError)
    }
    assert errors <= set(dir(workspacefs))


def test_errors_are_builtins_with_errno() -> None:
    table = {
        workspacefs.NotFoundError: (FileNotFoundError, errno.ENOENT),
        workspacefs.AlreadyExistsError: (FileExistsError, errno.EEXIST),
        workspacefs.IsADirectoryFsError: (IsADirectoryError, errno.EISDIR),
        workspacefs.NotADirectoryFsError: (NotADirectoryError, errno.ENOTDIR),
        workspacefs.ReadOnlyError: (PermissionError, errno.EROFS),
        workspacefs.PathEscapeError: (PermissionError, errno.EACCES),
        workspacefs.LimitExceededError: (ValueError, errno.EFBIG),
        workspacefs.InvalidPathError: (ValueError, errno.EINVAL),
        workspacefs.BackendUnavailableError: (RuntimeError, errno.EIO),
        workspacefs.SnapshotNotFoundError: (LookupError, errno.ENOENT),
    }
    for cls, (builtin, code) in table.items():
        exc = cls("message", "some/path")
        assert isinstance(exc, builtin)
        assert isinstance(exc, OSError)
        assert (exc.errno, exc.filename) == (code, "some/path")


def test_error_for_errno() -> None:
    exc = _errors.error_for(errno.ENOTEMPTY, "not empty", "d")
    assert isinstance(exc, workspacefs.DirectoryNotEmptyError)
    assert exc.errno == errno.ENOTEMPTY


def test_errors_pickle() -> None:
    import pickle

    exc = workspacefs.NotFoundError("gone", "x.txt")
    copy = pickle.loads(pickle.dumps(exc))
    assert type(copy) is workspacefs.NotFoundError
    assert (copy.errno, copy.filename, copy.strerror) == (errno.ENOENT, "x.txt", "gone")
