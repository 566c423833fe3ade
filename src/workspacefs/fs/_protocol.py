"""The ``Filesystem`` protocol every backend implements, and its snapshot extension.

Paths are relative to the workspace root; an absolute path is accepted when
it lies under ``mount_point`` (``/workspace/x.txt`` means ``x.txt``). Errors
are the builtins of the exception table (see ``workspacefs._errors``):
FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError
(read-only, escapes), FileExistsError, ValueError (limits, bad input) and
RuntimeError (backend unavailable).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ._results import (
    FileEntry,
    FileStat,
    GlobMatch,
    GrepMatch,
    ReadBytesResult,
    ReadResult,
    WriteMode,
    WriteResult,
)
from ._snapshots import FilesystemDiff, FilesystemSnapshot


@runtime_checkable
class Filesystem(Protocol):
    """Unified filesystem protocol for workspace operations."""

    def read(
        self, path: str, *, offset: int = 0, limit: int | None = None, encoding: str = "utf-8"
    ) -> ReadResult:
        """Read a page of lines of a text file.

        Args:
            path: File to read.
            offset: First line to return (0-based).
            limit: Most lines to return; None means the backend default (2,000).
            encoding: Text encoding; content that does not decode is a ValueError.

        Raises:
            FileNotFoundError: The path does not exist.
            IsADirectoryError: The path is a directory.
            ValueError: The content does not decode, or a limit is exceeded.
        """
        ...

    def read_bytes(
        self, path: str, *, offset: int = 0, limit: int | None = None
    ) -> ReadBytesResult:
        """Read a byte range of a file.

        Args:
            path: File to read.
            offset: First byte to return (0-based).
            limit: Most bytes to return (at most ``Limits.max_read_bytes``); None reads
                the rest of the file, however large, if this process can hold it
                (else ValueError: read it in pieces).
        """
        ...

    def exists(self, path: str) -> bool:
        """True if the path names anything (a dangling symlink counts)."""
        ...

    def stat(self, path: str) -> FileStat:
        """Metadata of a path, not following a final symlink.

        Raises:
            FileNotFoundError: The path does not exist.
        """
        ...

    def readlink(self, path: str) -> str:
        """The target of the symlink at ``path`` as written, never followed.

        Raises:
            FileNotFoundError: The path does not exist.
            ValueError: The path is no symlink (EINVAL, as readlink(2)).
        """
        ...

    def list(self, path: str = ".") -> Sequence[FileEntry]:
        """The entries of a directory, sorted by name.

        Raises:
            FileNotFoundError: The path does not exist.
            NotADirectoryError: The path is not a directory.
        """
        ...

    def glob(self, pattern: str, *, path: str = ".") -> Sequence[GlobMatch]:
        """Paths matching a glob pattern (``**`` recursive) below ``path``, sorted."""
        ...

    def grep(
        self,
        pattern: str,
        *,
        path: str = ".",
        glob: str | None = None,
        max_matches: int | None = None,
    ) -> Sequence[GrepMatch]:
        """Lines matching an RE2 regex, sorted by (path, line_number).

        Matched per line as ``grep -RnE`` does; the dialect differences of
        RE2 are listed in docs/search.md.

        Args:
            pattern: Regular expression (RE2 syntax, linear time).
            path: File or directory to search.
            glob: Only files whose name (or relative path, if it has ``/``) matches.
            max_matches: Stop after this many matches (default 1,000, and more is
                capped to that: ``Limits.max_grep_matches``).
        """
        ...

    def write(
        self,
        path: str,
        content: str,
        *,
        mode: WriteMode = "overwrite",
        create_parents: bool = True,
        if_match: str | None = None,
    ) -> WriteResult:
        """Write UTF-8 text to a file.

        Args:
            path: File to write.
            content: The text.
            mode: "create" (only a new file), "overwrite" or "append".
            create_parents: Make missing parent directories.
            if_match: Write only if the file's current content has this
                ``content_digest`` (the token of what the caller read; opaque),
                checked atomically with the write: a compare-and-swap, so a change
                made by another writer since that read is never overwritten
                unseen. A file of another size than the token's is not read.

        Raises:
            ContentChangedError: ``if_match`` given, and the file's content is not
                that (or it is gone, or no longer a regular file); nothing written.
            FileExistsError: mode="create" and the file exists.
            FileNotFoundError: A parent is missing and create_parents is False.
            PermissionError: The filesystem is read-only.
            ValueError: Content over the limit or not encodable as UTF-8, or
                ``if_match`` is no token ``content_digest`` makes.
        """
        ...

    def write_bytes(
        self,
        path: str,
        content: bytes,
        *,
        mode: WriteMode = "overwrite",
        create_parents: bool = True,
        if_match: str | None = None,
    ) -> WriteResult:
        """Write bytes to a file; same rules as ``write``."""
        ...

    def delete(self, path: str, *, recursive: bool = False, if_match: str | None = None) -> None:
        """Delete a file, symlink or (with ``recursive``) a directory tree.

        ``if_match`` deletes a regular file only if its content still has this
        ``content_digest``, as for ``write``.

        Raises:
            ContentChangedError: ``if_match`` given and not matched; nothing deleted.
            FileNotFoundError: The path does not exist.
            IsADirectoryError: The path is a directory and recursive is False.
            PermissionError: Read-only, or the path is the root.
            ValueError: ``if_match`` is no token ``content_digest`` makes.
        """
        ...

    def rename(self, path: str, target: str, *, replace: bool = False) -> None:
        """Move or rename a file, symlink or directory within the workspace, atomically.

        A symlink is moved itself, never followed, at either end; the
        directories on both paths are followed as any path's are.

        Args:
            path: What to move.
            target: Its new path; its parent directory must exist.
            replace: Replace what is at ``target`` as rename(2) does (a file or
                link; a directory only by a directory, and only if empty). If
                False, an existing ``target`` is refused, checked atomically with
                the move (on a host directory, where the kernel can:
                ``renameat2(RENAME_NOREPLACE)``).

        Raises:
            FileNotFoundError: ``path``, or ``target``'s parent, does not exist.
            FileExistsError: ``target`` exists and ``replace`` is False.
            IsADirectoryError: A non-directory would replace a directory.
            NotADirectoryError: A directory would replace a non-directory.
            OSError: ENOTEMPTY: the directory it would replace is not empty.
            PermissionError: Read-only, or either path is the root.
            ValueError: A directory would move into itself.
        """
        ...

    def mkdir(self, path: str, *, parents: bool = True, exist_ok: bool = True) -> None:
        """Create a directory.

        Raises:
            FileExistsError: The path exists (as a directory only if not exist_ok).
            FileNotFoundError: A parent is missing and parents is False.
        """
        ...

    @property
    def root(self) -> str:
        """The workspace root ("/" for virtual filesystems)."""
        ...

    @property
    def read_only(self) -> bool:
        """True if write operations are refused."""
        ...

    @property
    def mount_point(self) -> str | None:
        """Absolute prefix that maps to the root, e.g. "/workspace", or None."""
        ...


@runtime_checkable
class SnapshotableFilesystem(Filesystem, Protocol):
    """A filesystem that can snapshot, restore and diff its state."""

    def snapshot(self, *, tag: str | None = None) -> FilesystemSnapshot:
        """Capture the current state.

        Raises:
            SnapshotCreationError: The state could not be captured.
        """
        ...

    def restore(
        self, snapshot: FilesystemSnapshot, *, if_unchanged_since: FilesystemSnapshot | None = None
    ) -> None:
        """Return to a snapshot's state exactly.

        Args:
            snapshot: The state to return to.
            if_unchanged_since: Restore only if the live state is still what this
                snapshot holds, checked atomically with the restore (under the
                tree lock in memory and in a daemon; against this process's own
                writes on a host directory): a compare-and-swap for the whole
                workspace, so a change another writer made since is never
                discarded unseen.

        Raises:
            ContentChangedError: ``if_unchanged_since`` given, and the workspace
                changed since; nothing was restored.
            SnapshotNotFoundError: The snapshot is unknown or was pruned.
            SnapshotIncompatibleError: It belongs to another workspace.
            SnapshotRestoreError: Restore failed; nothing changed.
        """
        ...

    def diff(
        self, base: FilesystemSnapshot, target: FilesystemSnapshot | None = None
    ) -> FilesystemDiff:
        """What changed from ``base`` to ``target`` (None: the live state)."""
        ...

    @property
    def current_snapshot_id(self) -> uuid.UUID | None:
        """The snapshot the live state was last taken as or restored from."""
        ...
