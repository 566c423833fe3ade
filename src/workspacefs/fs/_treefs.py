"""The ``Filesystem`` protocol over a tree view: the live tree or a frozen version.

Paths are normalised once (``_paths``), then walked inode by inode with
symlinks followed inside the workspace; a symlink whose target leaves the
root (``..`` past it, or an absolute path outside the mount point) is an
escape and raises PermissionError. Every call holds the tree lock for its
tree work only; decoding and matching happen outside it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime

from .._errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    IsADirectoryFsError,
    NotADirectoryFsError,
    NotFoundError,
    PathEscapeError,
    ReadOnlyError,
    TooManyLinksError,
)
from ..tree import ROOT_INO, Directory, File, Journal, Node, Symlink, Tree, TreeView
from ._limits import DEFAULT_LIMITS, Limits
from ._paths import display, join, normalize, normalize_mount_point, strip_mount_point
from ._requests import (
    byte_window,
    bytes_payload,
    check_write_mode,
    glob_pattern,
    grep_cap,
    line_window,
    read_page,
    text_payload,
)
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
from ._search import Listing, glob_paths, grep_below

log = logging.getLogger(__name__)

ChangeListener = Callable[[Journal], None]
"""Called after a write through the API with what it touched (tree lock released)."""

MAX_SYMLINK_HOPS = 40
"""As Linux: following more links than this is ELOOP."""

GREP_BLOCK_BYTES = 1 << 20
"""grep reads a file in blocks of this size, taking the lock for each."""


def _timestamp(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, UTC)


class TreeFilesystem:
    """The protocol over one tree view; writable only over the live tree."""

    def __init__(
        self,
        view: TreeView,
        *,
        read_only: bool = False,
        mount_point: str | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self._view = view
        self._tree = view if isinstance(view, Tree) else None
        self._read_only = read_only or self._tree is None
        self._mount_point = normalize_mount_point(mount_point)
        self._limits = limits
        self._lock: contextlib.AbstractContextManager[object] = (
            self._tree.lock if self._tree is not None else contextlib.nullcontext()
        )
        self._owner = (os.getuid(), os.getgid())
        self._listeners: list[ChangeListener] = []

    # -- properties ------------------------------------------------------------

    @property
    def root(self) -> str:
        """Always "/": the tree is virtual."""
        return "/"

    @property
    def read_only(self) -> bool:
        """True for snapshot views and filesystems opened read-only."""
        return self._read_only

    @property
    def mount_point(self) -> str | None:
        """The absolute prefix that maps to the root, or None."""
        return self._mount_point

    @property
    def view(self) -> TreeView:
        """The tree this filesystem shows: the live ``Tree`` or a frozen ``Version``."""
        return self._view

    @property
    def limits(self) -> Limits:
        """The per-call limits in force."""
        return self._limits

    # -- change notification ---------------------------------------------------

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener`` after every API write; returns the unsubscribe function.

        Listeners run in the writer's thread after the tree lock is released,
        which is where the FUSE layer may safely invalidate kernel caches.
        """
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _publish(self, journal: Journal) -> None:
        if not journal:
            return
        for listener in list(self._listeners):
            listener(journal)

    def export_archive(self, path: str | os.PathLike[str]) -> int:
        """Write this workspace (or snapshot view) as a workspace archive; the file count.

        See ``workspacefs.archive`` for the format.
        """
        from ..archive import export_tree  # the archive layer builds on this one

        return export_tree(self, path)

    def tree_changes(self) -> contextlib.AbstractContextManager[Tree]:
        """Hold the lock for a group of tree operations; publish what they touched.

        For layers that work on the tree directly (archives, git loads) and
        must keep a mount coherent, exactly as the protocol's own writes do.
        """
        return self._mutation("")

    def _mutation(self, path: str) -> contextlib.AbstractContextManager[Tree]:
        """Hold the lock for one write and publish what it touched afterwards."""
        return self._recording(self._writable_tree(path))

    @contextlib.contextmanager
    def _recording(self, tree: Tree) -> Iterator[Tree]:
        journal = Journal()
        try:
            with tree.lock:
                journal = tree.record()
                try:
                    yield tree
                finally:
                    tree.stop_recording()
        finally:
            self._publish(journal)

    # -- path walking ----------------------------------------------------------

    def _normalize(self, path: str) -> str:
        return normalize(path, self._mount_point, self._limits)

    def _locate(self, path: str, *, follow: bool = True) -> tuple[int, str, int | None]:
        """Walk a normalised path: (parent inode, final name, inode or None if absent).

        The root is ``(ROOT_INO, "", ROOT_INO)``. A missing intermediate
        directory raises NotFoundError; a final symlink is followed if ``follow``.
        """
        view = self._view
        pending = path.split("/")[::-1] if path else []
        parent, name, current = ROOT_INO, "", ROOT_INO
        hops = 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if current == ROOT_INO:
                    raise PathEscapeError("symlink escapes the workspace root", display(path))
                current = view.lookup(current, "..")
                links = view.node(current).links
                parent, name = links[0] if links else (ROOT_INO, "")
                continue
            directory = view.node(current)
            if not isinstance(directory, Directory):
                raise NotADirectoryFsError("not a directory", display(path))
            child = directory.entries.get(part)
            more = any(p not in ("", ".") for p in pending)
            if child is None:
                if more:
                    raise NotFoundError("no such file or directory", display(path))
                return current, part, None
            node = view.node(child)
            if isinstance(node, Symlink) and (follow or more):
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise TooManyLinksError("too many levels of symbolic links", display(path))
                target = node.target
                if target.startswith("/"):
                    target = strip_mount_point(target, self._mount_point)
                    parent, name, current = ROOT_INO, "", ROOT_INO
                pending.extend(reversed(target.split("/")))
                continue
            parent, name, current = current, part, child
        return parent, name, current

    def _existing(self, path: str, *, follow: bool = True) -> tuple[int, Node]:
        ino = self._locate(path, follow=follow)[2]
        if ino is None:
            raise NotFoundError("no such file or directory", display(path))
        return ino, self._view.node(ino)

    def _kind(self, path: str, node: Node) -> tuple[bool, bool]:
        """(is_file, is_directory) of a node, following a symlink at ``path``."""
        if isinstance(node, Symlink):
            try:
                node = self._existing(path)[1]
            except (OSError, ValueError):
                return False, False
        return isinstance(node, File), isinstance(node, Directory)

    def _scan(self, path: str) -> Iterable[Listing]:
        try:
            directory = self._existing(path)[1]
        except (OSError, ValueError):
            return []
        if not isinstance(directory, Directory):
            return []
        result = []
        for name, ino in directory.entries.items():
            node = self._view.node(ino)
            is_link = isinstance(node, Symlink)
            if is_link:
                try:
                    ino, node = self._existing(join(path, name))
                except (OSError, ValueError):
                    result.append(Listing(name, False, False, True, None))
                    continue
            key = (0, ino)
            result.append(Listing(name, isinstance(node, Directory), isinstance(node, File),
                                  is_link, key))  # fmt: skip
        return result

    def _base_key(self, path: str) -> tuple[int, int] | None:
        try:
            return (0, self._existing(path)[0])
        except (OSError, ValueError):
            return None

    def _file(self, path: str) -> File:
        node = self._existing(path)[1]
        if isinstance(node, Directory):
            raise IsADirectoryFsError("is a directory", display(path))
        if not isinstance(node, File):
            raise InvalidArgumentError("not a regular file", display(path))
        return node

    # -- reading ---------------------------------------------------------------

    def read(
        self, path: str, *, offset: int = 0, limit: int | None = None, encoding: str = "utf-8"
    ) -> ReadResult:
        """Read a page of lines of a text file (see ``Filesystem.read``)."""
        norm = self._normalize(path)
        limit = line_window(offset, limit, norm, self._limits)
        with self._lock:
            node = self._file(norm)
            size = node.size
            data = node.read(0, min(size, self._limits.max_read_bytes))
        return read_page(data, size, norm, offset, limit, encoding, self._limits)

    def read_bytes(
        self, path: str, *, offset: int = 0, limit: int | None = None
    ) -> ReadBytesResult:
        """Read a byte range of a file (see ``Filesystem.read_bytes``)."""
        norm = self._normalize(path)
        limit = byte_window(offset, limit, norm, self._limits)
        with self._lock:
            node = self._file(norm)
            content = node.read(offset, limit)
            size = node.size
        return ReadBytesResult(
            content=content,
            path=norm,
            size_bytes=size,
            offset=offset,
            limit=limit,
            truncated=offset + len(content) < size,
        )

    def exists(self, path: str) -> bool:
        """True if the path resolves (symlinks followed, as ``os.path.exists``)."""
        norm = self._normalize(path)
        with self._lock:
            try:
                return self._locate(norm)[2] is not None
            except (NotFoundError, NotADirectoryFsError, TooManyLinksError):
                return False

    def stat(self, path: str) -> FileStat:
        """Metadata of a path, following symlinks; ``is_symlink`` tells of the path itself."""
        norm = self._normalize(path)
        with self._lock:
            _, own = self._existing(norm, follow=False)
            _, node = self._existing(norm) if isinstance(own, Symlink) else (0, own)
            return FileStat(
                path=display(norm),
                is_file=isinstance(node, File),
                is_directory=isinstance(node, Directory),
                size_bytes=node.size,
                created_at=_timestamp(node.crtime_ns),
                modified_at=_timestamp(node.mtime_ns),
                is_symlink=isinstance(own, Symlink),
                mode=node.mode,
            )

    def list(self, path: str = ".") -> Sequence[FileEntry]:
        """The entries of a directory, sorted by name."""
        norm = self._normalize(path)
        with self._lock:
            directory = self._existing(norm)[1]
            if not isinstance(directory, Directory):
                raise NotADirectoryFsError("not a directory", display(norm))
            entries = []
            for name in sorted(directory.entries):
                child = join(norm, name)
                node = self._view.node(directory.entries[name])
                is_file, is_dir = self._kind(child, node)
                entries.append(FileEntry(name, child, is_file, is_dir, isinstance(node, Symlink)))
            return entries

    def glob(self, pattern: str, *, path: str = ".") -> Sequence[GlobMatch]:
        """Paths matching ``pattern`` below ``path``, sorted (see ``_patterns``)."""
        pattern = glob_pattern(pattern, self._mount_point, self._limits)
        norm = self._normalize(path)
        with self._lock:  # only to find the base: the walk locks per directory
            base_key = self._base_key(norm)

        def scan(directory: str) -> Iterable[Listing]:
            with self._lock:
                return self._scan(directory)

        return glob_paths(scan, norm, pattern, base_key=base_key, limits=self._limits)

    def grep(
        self,
        pattern: str,
        *,
        path: str = ".",
        glob: str | None = None,
        max_matches: int | None = None,
    ) -> Sequence[GrepMatch]:
        """Lines matching an RE2 regex (see ``Filesystem.grep``)."""
        limits = self._limits
        wanted = grep_cap(pattern, max_matches, limits)
        norm = self._normalize(path)
        with self._lock:
            ino, node = self._existing(norm)
            is_directory = isinstance(node, Directory)

        def scan(directory: str) -> Iterable[Listing]:
            with self._lock:  # one directory at a time: a long grep never stalls the mount
                return self._scan(directory)

        def read_blocks(file_path: str) -> Iterator[bytes]:
            with self._lock:
                try:
                    node = self._file(file_path)
                except (OSError, ValueError):  # removed or replaced since listed
                    return
                size = node.size  # the file as it was when grep reached it
                block = node.read(0, GREP_BLOCK_BYTES)
            offset = 0
            while block:  # the lock is taken per block, never held across a yield
                yield block
                offset += len(block)
                if offset >= size:
                    return
                with self._lock:
                    block = node.read(offset, min(GREP_BLOCK_BYTES, size - offset))

        return grep_below(pattern, norm, is_directory=is_directory, scan=scan,
                          read_blocks=read_blocks, file_glob=glob, max_matches=wanted,
                          base_key=(0, ino), limits=limits)  # fmt: skip

    # -- writing ---------------------------------------------------------------

    def _writable_tree(self, path: str) -> Tree:
        if self._read_only or self._tree is None:
            raise ReadOnlyError("read-only filesystem", path)
        return self._tree

    def write(
        self,
        path: str,
        content: str,
        *,
        mode: WriteMode = "overwrite",
        create_parents: bool = True,
    ) -> WriteResult:
        """Write UTF-8 text (see ``Filesystem.write``)."""
        self._writable_tree(path)
        return self._write(path, text_payload(content, path, self._limits), mode, create_parents)

    def write_bytes(
        self,
        path: str,
        content: bytes,
        *,
        mode: WriteMode = "overwrite",
        create_parents: bool = True,
    ) -> WriteResult:
        """Write bytes (see ``Filesystem.write_bytes``)."""
        self._writable_tree(path)
        return self._write(path, bytes_payload(content, path, self._limits), mode, create_parents)

    def _write(self, path: str, data: bytes, mode: WriteMode, create_parents: bool) -> WriteResult:
        check_write_mode(mode, path)
        norm = self._normalize(path)
        if not norm:
            raise IsADirectoryFsError("is a directory", display(norm))
        with self._mutation(norm) as tree:
            try:
                parent, name, ino = self._locate(norm)
            except NotFoundError:
                if not create_parents:
                    raise
                self._make_dirs(tree, norm.rpartition("/")[0])
                parent, name, ino = self._locate(norm)
            if ino is None:
                ino = tree.create(parent, name, 0o644, *self._owner)
                tree.write(ino, 0, data)
            else:
                node = self._file(norm)
                if mode == "create":
                    raise AlreadyExistsError("file exists", display(norm))
                if mode == "overwrite":
                    tree.truncate(ino, 0)
                tree.write(ino, 0 if mode == "overwrite" else node.size, data)
        return WriteResult(path=norm, bytes_written=len(data), mode=mode)

    def _make_dirs(self, tree: Tree, path: str) -> None:
        """mkdir -p, following symlinks to directories inside the workspace."""
        parts = path.split("/") if path else []
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            parent, name, ino = self._locate(prefix)
            if ino is None:
                tree.mkdir(parent, name, 0o755, *self._owner)
            elif not isinstance(self._view.node(ino), Directory):
                raise NotADirectoryFsError("not a directory", prefix)

    def delete(self, path: str, *, recursive: bool = False) -> None:
        """Delete a file, symlink or directory tree (see ``Filesystem.delete``)."""
        self._writable_tree(path)
        norm = self._normalize(path)
        if not norm:
            raise PathEscapeError("cannot delete the workspace root", "/")
        with self._mutation(norm) as tree:
            parent, name, ino = self._locate(norm, follow=False)
            if ino is None:
                raise NotFoundError("no such file or directory", display(norm))
            if not isinstance(tree.node(ino), Directory):
                tree.unlink(parent, name)
                return
            if not recursive:
                raise IsADirectoryFsError("is a directory (use recursive=True)", display(norm))
            tree.empty(ino)
            tree.rmdir(parent, name)

    def mkdir(self, path: str, *, parents: bool = True, exist_ok: bool = True) -> None:
        """Create a directory (see ``Filesystem.mkdir``)."""
        self._writable_tree(path)
        norm = self._normalize(path)
        with self._mutation(norm) as tree:
            try:
                parent, name, ino = self._locate(norm)
            except NotFoundError:
                if not parents:
                    raise
                self._make_dirs(tree, norm)
                return
            if ino is None:
                tree.mkdir(parent, name, 0o755, *self._owner)
            elif not (exist_ok and isinstance(tree.node(ino), Directory)):
                raise AlreadyExistsError("file exists", display(norm))
