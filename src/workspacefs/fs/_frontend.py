"""The ``Filesystem`` protocol, implemented once over any ``Backend``.

Every verb normalises its path (``_paths``), checks its arguments
(``_requests``), resolves the path with ``_resolve.locate`` and asks the
backend for one primitive; so the in-memory tree and a host directory mean
the same by every verb, symlinks included:

* A symlink is followed when its target stays inside the workspace.
  ``list``, ``stat``, ``glob`` and ``grep`` report one that dangles, loops
  or leaves as what it is, a link to nothing (neither file nor directory);
  ``exists`` is True for it, since ``list`` shows it. Reading or writing
  through it raises (FileNotFoundError, ELOOP, or PermissionError for an
  escape).
* Errors are the hierarchy's, naming the workspace path.
* A change with ``if_match`` (``write``, ``write_bytes``, ``delete``) is a
  compare-and-swap: under the backend's write lock, the file's content must
  still have that token (``_unchanged``: its size first, then its digest),
  else ContentChangedError and nothing changes. On the in-memory tree that
  lock is the tree's, which the mount and every client of a daemon take too,
  so no writer comes between.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import operator
import os
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from .._errors import (
    AlreadyExistsError,
    ContentChangedError,
    FsError,
    InvalidArgumentError,
    IsADirectoryFsError,
    NotADirectoryFsError,
    NotFoundError,
    PathEscapeError,
    ReadOnlyError,
    error_for,
)
from ._backend import Backend, Entry, Kind
from ._conditional import token_size, unchanged
from ._entries import MAX_ENTRIES, TreeEntry, depth_first, tree_key
from ._limits import DEFAULT_LIMITS, Limits
from ._paths import display, join, normalize, normalize_mount_point
from ._recorded import recorded_time
from ._requests import (
    byte_window,
    bytes_payload,
    check_write_mode,
    glob_pattern,
    grep_cap,
    line_window,
    read_page,
    text_payload,
    whole_rest,
)
from ._resolve import Location, locate
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
from ._search import glob_paths, grep_below
from ._walk import Walk


def translate(exc: OSError, path: str) -> FsError:
    """An ``OSError`` from a backend as the hierarchy's class, naming ``path``."""
    if isinstance(exc, FsError):
        return exc
    if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link that was not there a moment ago
        return PathEscapeError("a symlink was swapped in during the call", path)
    code = exc.errno or errno.EIO
    return error_for(code, exc.strerror or os.strerror(code), path)


@contextlib.contextmanager
def _errors_for(path: str) -> Iterator[None]:
    try:
        yield
    except FsError as exc:
        if exc.filename is None:  # raised below the paths (a lazy load past the budget)
            exc.filename = display(path)
        raise
    except OSError as exc:
        raise translate(exc, display(path)) from None


@contextlib.contextmanager
def _gone_is_changed(path: str, if_match: str | None) -> Iterator[None]:
    """For a conditional change, a file (or directory on its path) gone since the
    caller read it is a change like any other."""
    try:
        yield
    except FileNotFoundError:
        if if_match is None:
            raise
        raise ContentChangedError("removed since it was read", display(path)) from None


_name = operator.itemgetter(0)
_TARGET_ERRORS = frozenset({errno.EEXIST, errno.EISDIR, errno.ENOTDIR, errno.ENOTEMPTY})


def _timestamp(ns: int | None) -> datetime | None:
    # The mount takes any time the kernel does (touch -d 20000-01-01); datetime shows years
    # 1 to 9999, so a time past them shows as the nearest end, as recorded ones load.
    return None if ns is None else datetime.fromtimestamp(recorded_time(ns, "time") / 1e9, UTC)


def _is_file(entry: Entry | None) -> bool:
    return entry is not None and entry.kind is Kind.FILE


def _is_dir(entry: Entry | None) -> bool:
    return entry is not None and entry.kind is Kind.DIRECTORY


def resolved(backend: Backend, norm: str) -> Entry | None:
    """What ``norm`` leads to in ``backend`` (links followed), None if nothing inside does."""
    try:
        with locate(backend, norm) as at:
            return at.entry
    except (OSError, ValueError):
        return None


class BackendFilesystem:
    """The protocol's verbs over one backend; subclasses add snapshots and the like."""

    def __init__(
        self,
        backend: Backend,
        *,
        read_only: bool = False,
        mount_point: str | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self._backend = backend
        self._read_only = read_only
        self._mount_point = normalize_mount_point(mount_point)
        self._limits = limits

    @property
    def read_only(self) -> bool:
        """True if writes are refused."""
        return self._read_only

    @property
    def mount_point(self) -> str | None:
        """The absolute prefix that maps to the root, or None."""
        return self._mount_point

    @property
    def limits(self) -> Limits:
        """The per-call limits in force."""
        return self._limits

    # -- resolution --------------------------------------------------------------

    def _normalize(self, path: str) -> str:
        return normalize(path, self._mount_point, self._limits)

    def _resolved(self, norm: str) -> Entry | None:
        """What ``norm`` leads to (links followed), None if nothing inside does."""
        return resolved(self._backend, norm)

    def _walk(self) -> Walk:
        """A walk (a listing, a glob, a grep) over the backend."""
        return Walk(self._backend, self._resolved)

    def _existing(self, at: Location, norm: str) -> Entry:
        if at.entry is None:
            raise NotFoundError("no such file or directory", display(norm))
        return at.entry

    def _regular(self, at: Location, norm: str) -> Entry:
        entry = self._existing(at, norm)
        if entry.kind is Kind.DIRECTORY:
            raise IsADirectoryFsError("is a directory", display(norm))
        if entry.kind is not Kind.FILE:
            raise InvalidArgumentError("not a regular file", display(norm))
        return entry

    # -- reading -----------------------------------------------------------------

    def read(
        self, path: str, *, offset: int = 0, limit: int | None = None, encoding: str = "utf-8"
    ) -> ReadResult:
        """Read a page of lines of a text file (see ``Filesystem.read``)."""
        norm = self._normalize(path)
        limit = line_window(offset, limit, norm, self._limits)
        cap = self._limits.max_read_bytes
        with _errors_for(norm), self._backend.reading(), locate(self._backend, norm) as at:
            entry = self._regular(at, norm)
            size = entry.size
            data = self._backend.read(at.parent, at.name, entry, 0, min(size, cap))
        return read_page(data, size, norm, offset, limit, encoding, self._limits)

    def read_bytes(
        self, path: str, *, offset: int = 0, limit: int | None = None
    ) -> ReadBytesResult:
        """Read a byte range of a file (see ``Filesystem.read_bytes``)."""
        norm = self._normalize(path)
        asked = byte_window(offset, limit, norm, self._limits)
        with _errors_for(norm), self._backend.reading(), locate(self._backend, norm) as at:
            entry = self._regular(at, norm)
            size = entry.size
            wanted = whole_rest(size, offset, norm, self._limits) if asked is None else asked
            read = self._backend.read
            content = read(at.parent, at.name, entry, offset, wanted) if wanted else b""
        return ReadBytesResult(content, norm, size, offset, wanted, offset + len(content) < size)

    def exists(self, path: str) -> bool:
        """True if the path names anything, as ``list`` would show it (a dangling link too)."""
        norm = self._normalize(path)
        with self._backend.reading():
            try:
                with locate(self._backend, norm, follow=False) as at:
                    return at.entry is not None
            except (OSError, ValueError):
                return False

    def stat(self, path: str) -> FileStat:
        """Metadata of a path: of what a symlink leads to inside the workspace, else of the
        link itself; ``is_symlink`` tells of the path itself."""
        norm = self._normalize(path)
        with _errors_for(norm), self._backend.reading():
            with locate(self._backend, norm, follow=False) as at:
                own = self._existing(at, norm)
            entry = (self._resolved(norm) or own) if own.kind is Kind.SYMLINK else own
        return FileStat(
            path=display(norm),
            is_file=entry.kind is Kind.FILE,
            is_directory=entry.kind is Kind.DIRECTORY,
            size_bytes=entry.size,
            created_at=_timestamp(entry.crtime_ns),
            modified_at=_timestamp(entry.mtime_ns),
            is_symlink=own.kind is Kind.SYMLINK,
            mode=entry.mode,
        )

    def readlink(self, path: str) -> str:
        """The target of the symlink at ``path`` as written; the link is never followed,
        wherever it leads (outside the workspace, to a directory, nowhere)."""
        norm = self._normalize(path)
        with (
            _errors_for(norm),
            self._backend.reading(),
            locate(self._backend, norm, follow=False) as at,
        ):
            if self._existing(at, norm).kind is not Kind.SYMLINK:
                raise InvalidArgumentError("not a symlink", display(norm))
            return self._backend.readlink(at.parent, at.name)

    def entries(
        self, path: str = ".", *, after: str = "", limit: int = MAX_ENTRIES, recursive: bool = True
    ) -> list[TreeEntry]:
        """A page of the listing below the directory ``path``: at most ``limit`` entries
        with their sizes and modes, links not followed, depth first in git's order from
        after the key ``after`` (pass the last entry's ``tree_key`` for the next page);
        with ``recursive`` False, its own entries only. A listing tool's sizes without a
        ``stat`` per entry.

        Raises:
            FileNotFoundError: Nothing is at ``path``.
            NotADirectoryError: ``path`` is no directory.
            ValueError: ``limit`` is below 1 or over ``MAX_ENTRIES``.
        """
        norm = self._normalize(path)
        if limit < 1:
            raise InvalidArgumentError("limit must be at least 1", display(norm))
        self._limits.check("entries limit", limit, MAX_ENTRIES)
        with self._walk() as walk:
            top = walk.entries(norm)
            if top is None:
                self.list(norm)  # raises what is wrong with the path
                raise NotADirectoryFsError("not a directory", display(norm))

            if not recursive:  # one directory: its page in git's order, no walk
                top.sort(key=tree_key)
                if after:
                    top = [entry for entry in top if tree_key(entry) > after]
                return top[:limit]

            def children(entry: TreeEntry | None) -> list[TreeEntry]:
                return top if entry is None else walk.entries(entry.path) or []

            return list(itertools.islice(depth_first(children, after=after), limit))

    def list(self, path: str = ".") -> Sequence[FileEntry]:
        """The entries of a directory, sorted by name."""
        norm = self._normalize(path)
        with _errors_for(norm), self._backend.reading(), locate(self._backend, norm) as at:
            if not _is_dir(self._existing(at, norm)):
                raise NotADirectoryFsError("not a directory", display(norm))
        with self._walk() as walk:
            listing = walk.scan(norm)
        entries = []
        for name, kind in sorted(listing.entries, key=_name):
            is_link = kind is Kind.SYMLINK
            target = listing.links[name] if is_link else kind
            entries.append(
                FileEntry(
                    name, join(norm, name), target is Kind.FILE, target is Kind.DIRECTORY, is_link
                )
            )
        return entries

    def glob(self, pattern: str, *, path: str = ".") -> Sequence[GlobMatch]:
        """Paths matching ``pattern`` below ``path``, sorted (see ``_patterns``)."""
        pattern = glob_pattern(pattern, self._mount_point, self._limits)
        norm = self._normalize(path)
        with self._walk() as walk:
            return glob_paths(walk.scan, norm, pattern, limits=self._limits)

    def grep(
        self,
        pattern: str,
        *,
        path: str = ".",
        glob: str | None = None,
        max_matches: int | None = None,
    ) -> Sequence[GrepMatch]:
        """Lines matching an RE2 regex (see ``Filesystem.grep``)."""
        wanted = grep_cap(pattern, max_matches, self._limits)
        norm = self._normalize(path)
        with _errors_for(norm), self._backend.reading(), locate(self._backend, norm) as at:
            entry = self._existing(at, norm)
            if entry.kind is not Kind.DIRECTORY:
                self._regular(at, norm)  # a fifo or device is refused, never opened
        with self._walk() as walk:
            return grep_below(
                pattern,
                norm,
                is_directory=entry.kind is Kind.DIRECTORY,
                scan=walk.scan,
                read_blocks=walk.read_blocks,
                file_glob=glob,
                max_matches=wanted,
                limits=self._limits,
            )

    # -- writing -----------------------------------------------------------------

    def _writable(self, path: str) -> None:
        if self._read_only:
            raise ReadOnlyError("read-only filesystem", path)

    def _may_create(self, norm: str, action: str, size: int) -> None:
        """Raise what would refuse making ``norm`` (``size`` bytes) once its missing
        parents are made, before any is: a call that makes directories is refused
        whole. Called under the write lock; by default nothing refuses."""

    def write(
        self,
        path: str,
        content: str,
        *,
        mode: WriteMode = "overwrite",
        create_parents: bool = True,
        if_match: str | None = None,
    ) -> WriteResult:
        """Write UTF-8 text (see ``Filesystem.write``)."""
        self._writable(path)
        data = text_payload(content, path, self._limits)
        return self._write(path, data, mode, create_parents, if_match)

    def write_bytes(
        self,
        path: str,
        content: bytes,
        *,
        mode: WriteMode = "overwrite",
        create_parents: bool = True,
        if_match: str | None = None,
    ) -> WriteResult:
        """Write bytes (see ``Filesystem.write_bytes``)."""
        self._writable(path)
        data = bytes_payload(content, path, self._limits)
        return self._write(path, data, mode, create_parents, if_match)

    def _unchanged(self, at: Location, norm: str, if_match: str) -> None:
        """Raise ContentChangedError unless ``at`` is a regular file whose content has
        the digest ``if_match``; called holding the backend's write lock."""
        entry = at.entry
        if entry is None:
            raise NotFoundError("no such file", display(norm))  # see ``_gone_is_changed``
        if entry.kind is not Kind.FILE:
            raise ContentChangedError("no longer a regular file", display(norm))
        # Read only if the sizes agree: a file of another size is changed, however large
        # it grew (or however lazy it is), without a byte of it read under the lock.
        read = functools.partial(self._backend.read_blocks, at.parent, at.name, entry)
        if not unchanged(if_match, entry.size, read):
            raise ContentChangedError("changed since it was read", display(norm))

    def _write(
        self, path: str, data: bytes, mode: WriteMode, create_parents: bool, if_match: str | None
    ) -> WriteResult:
        check_write_mode(mode, path)
        if if_match is not None:
            if mode == "create":
                raise InvalidArgumentError("if_match (an existing file's) with mode=create", path)
            token_size(if_match, path)
        norm = self._normalize(path)
        if not norm:
            raise IsADirectoryFsError("is a directory", display(norm))
        backend = self._backend
        make_dirs = create_parents and if_match is None  # a matched file has its directory
        with (
            _errors_for(norm),
            _gone_is_changed(norm, if_match),
            backend.mutating(),
            contextlib.ExitStack() as stack,
        ):
            if make_dirs:
                self._may_create(norm, "create", len(data))
            at = stack.enter_context(locate(backend, norm, make_dirs=make_dirs))
            if if_match is not None:
                self._unchanged(at, norm, if_match)
            if at.entry is not None:
                self._regular(at, norm)
                if mode == "create":
                    raise AlreadyExistsError("file exists", display(norm))
            backend.write(at.parent, at.name, at.entry, data, mode)
        return WriteResult(path=norm, bytes_written=len(data), mode=mode)

    def delete(self, path: str, *, recursive: bool = False, if_match: str | None = None) -> None:
        """Delete a file, symlink or directory tree (see ``Filesystem.delete``)."""
        self._writable(path)
        if if_match is not None:
            token_size(if_match, path)
        norm = self._normalize(path)
        if not norm:
            raise PathEscapeError("cannot delete the workspace root", "/")
        backend = self._backend
        with (
            _errors_for(norm),
            _gone_is_changed(norm, if_match),
            backend.mutating(),
            locate(backend, norm, follow=False) as at,
        ):
            if if_match is not None:
                self._unchanged(at, norm, if_match)
            entry = self._existing(at, norm)
            if entry.kind is not Kind.DIRECTORY:
                backend.unlink(at.parent, at.name)
            elif not recursive:
                raise IsADirectoryFsError("is a directory (use recursive=True)", display(norm))
            else:
                backend.remove_tree(at.parent, at.name)

    def rename(self, path: str, target: str, *, replace: bool = False) -> None:
        """Move or rename within the workspace, atomically (see ``Filesystem.rename``)."""
        self._writable(path)
        norm, dest = self._normalize(path), self._normalize(target)
        if not norm or not dest:
            raise PathEscapeError("cannot rename the workspace root", "/")
        if dest.startswith(norm + "/"):
            raise InvalidArgumentError(
                f"cannot move a directory into itself ({display(dest)})", display(norm)
            )
        backend = self._backend
        with (
            _errors_for(norm),
            backend.mutating(),
            locate(backend, norm, follow=False) as source,
            locate(backend, dest, follow=False) as destination,
        ):
            self._existing(source, norm)
            if source.name == "." or destination.name == ".":
                raise InvalidArgumentError("cannot rename a path that ends in '..'", display(norm))
            if dest == norm:
                return  # rename(2) of a name to itself does nothing
            if destination.entry is not None and not replace:
                raise AlreadyExistsError("file exists", display(dest))
            try:
                backend.rename(
                    source.parent, source.name, destination.parent, destination.name, replace
                )
            except OSError as exc:
                if exc.errno in _TARGET_ERRORS:  # what is at the target is the cause
                    raise translate(exc, display(dest)) from None
                raise

    def mkdir(self, path: str, *, parents: bool = True, exist_ok: bool = True) -> None:
        """Create a directory (see ``Filesystem.mkdir``)."""
        self._writable(path)
        norm = self._normalize(path)
        backend = self._backend
        with _errors_for(norm), backend.mutating(), contextlib.ExitStack() as stack:
            if parents:
                self._may_create(norm, "mkdir", 0)
            at = stack.enter_context(locate(backend, norm, make_dirs=parents))
            if at.entry is None:
                backend.mkdir(at.parent, at.name)
            elif not (exist_ok and _is_dir(at.entry)):
                raise AlreadyExistsError("file exists", display(norm))
