"""The archive adapter of the in-memory tree (live workspace or snapshot view)."""

from __future__ import annotations

import io
import stat as _stat
from collections.abc import Iterator
from contextlib import AbstractContextManager

from .._errors import NoSpaceError, NotFoundError
from ..fs import InMemoryFilesystem, TreeFilesystem, sanitised_mode
from ..tree import ROOT_INO, Directory, File, Symlink, Tree, TreeView
from ._types import Entry, Reader, file_content, symlink_target


class _FileReader(io.RawIOBase):
    """Reads a file node block by block (no whole-file copy)."""

    def __init__(self, node: File) -> None:
        self._node = node
        self._offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._node.read(self._offset, len(buffer))
        buffer[: len(data)] = data
        self._offset += len(data)
        return len(data)


class TreeArchiveSource:
    """Export side: a frozen view, so the archive is one consistent state.

    A live workspace is frozen in O(1) (writers carry on meanwhile); a
    snapshot view already is.
    """

    def __init__(self, filesystem: TreeFilesystem) -> None:
        if isinstance(filesystem, InMemoryFilesystem):
            filesystem = filesystem.frozen_view()
        self._view: TreeView = filesystem.view

    def entries(self) -> Iterator[Entry]:
        for path, _, node in self._view.walk():
            kind = _stat.S_IFMT(node.mode)
            if isinstance(node, Directory):
                yield Entry(path, node.mode, node.mtime_ns)
            elif isinstance(node, File):
                yield Entry(path, node.mode, node.mtime_ns, node.size)
            elif isinstance(node, Symlink):
                yield Entry(path, kind | 0o777, node.mtime_ns, target=node.target)
            # fifos, sockets and devices have no place in an archive

    def open(self, path: str) -> io.BufferedReader:
        ino = self._view.resolve_path(path)
        node = None if ino is None else self._view.get(ino)
        if not isinstance(node, File):
            raise NotFoundError("no such file in the exported view", path)
        return io.BufferedReader(_FileReader(node), 1 << 20)


class _AbortedError(Exception):
    """Thrown into the import's transaction to undo it."""


class TreeArchiveTarget:
    """Import side: empties the live tree and fills it in one transaction of
    the workspace, which undoes everything in O(1) on abort.

    Args:
        filesystem: The live workspace.
        special_modes: Keep setuid and setgid bits and a file's sticky bit as
            the archive records them; without it they are dropped
            (``fs.sanitised_mode``, the rule of every import path).
    """

    def __init__(self, filesystem: InMemoryFilesystem, *, special_modes: bool = False) -> None:
        self._fs = filesystem
        self._special = special_modes
        self._transaction: AbstractContextManager[Tree] | None = None
        self._tree: Tree | None = None
        self._times: list[tuple[int, int]] = []
        self._owner = (0, 0)

    def _live(self) -> Tree:
        assert self._tree is not None, "begin() comes first"
        return self._tree

    def reserve(self, nbytes: int) -> None:
        # Until the import commits, the transaction keeps what the workspace held (to
        # undo), so the archive's files come on top of it: the budget's free part.
        budget = self._fs.tree.budget
        if budget.limit is not None and nbytes > (budget.free or 0):
            raise NoSpaceError(
                f"the archive's files expand to {nbytes:,} bytes, more than the workspace's "
                f"memory budget has free ({budget.free:,} of {budget.limit:,} bytes); raise "
                "the budget or delete files or snapshots first",
                None,
            )

    def begin(self) -> None:
        self._transaction = self._fs.transaction()
        tree = self._tree = self._transaction.__enter__()
        root = tree.node(ROOT_INO)
        self._owner = (root.uid, root.gid)  # imported entries belong to the workspace owner
        tree.empty(ROOT_INO)

    def add(self, entry: Entry, content: Reader | None) -> None:
        tree = self._live()
        parent_path, _, name = entry.path.rpartition("/")
        parent = tree.make_dirs(parent_path, 0o755, *self._owner)
        kind = _stat.S_IFMT(entry.mode)
        mode = sanitised_mode(entry.mode, self._special)
        existing = tree.directory(parent).entries.get(name)
        if kind == _stat.S_IFDIR:
            ino = existing if existing is not None else tree.mkdir(parent, name, mode, *self._owner)
        elif kind == _stat.S_IFLNK:
            ino = tree.symlink(parent, name, symlink_target(entry), *self._owner)
        else:
            data = file_content(entry, content)
            ino = tree.create(parent, name, mode, *self._owner)
            offset = 0
            while block := data.read(1 << 20):
                tree.write(ino, offset, block)
                offset += len(block)
        if kind != _stat.S_IFLNK:
            tree.setattr(ino, mode=mode)
        self._times.append((ino, entry.mtime_ns))

    def commit(self) -> None:
        tree = self._live()
        try:
            for ino, mtime in self._times:  # last: adding entries touched their directories
                tree.setattr(ino, mtime_ns=mtime)
        except BaseException:
            self.abort()
            raise
        self._finish(None)

    def abort(self) -> None:
        self._finish(_AbortedError())

    def _finish(self, error: _AbortedError | None) -> None:
        transaction, self._transaction = self._transaction, None
        if transaction is not None:
            if error is None:
                transaction.__exit__(None, None, None)
            else:
                transaction.__exit__(_AbortedError, error, None)  # undoes, then lets it go
