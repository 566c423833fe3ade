"""The archive adapter of the in-memory tree (live workspace or snapshot view)."""

from __future__ import annotations

import contextlib
import io
import stat as _stat
from collections.abc import Iterator

from ..fs import InMemoryFilesystem, TreeFilesystem
from ..tree import ROOT_INO, Directory, File, Symlink, Tree, TreeView, Version
from ._format import Entry, Reader


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
    """Export side: a frozen view, so the archive is one consistent state."""

    def __init__(self, filesystem: TreeFilesystem) -> None:
        view = filesystem.view
        if isinstance(view, Tree):
            with view.lock:
                view = view.snapshot()  # O(1); writers carry on meanwhile
        self._view: TreeView = view

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
        assert ino is not None
        node = self._view.node(ino)
        assert isinstance(node, File)
        return io.BufferedReader(_FileReader(node), 1 << 20)


class TreeArchiveTarget:
    """Import side: empties the live tree, fills it, and can undo in O(1)."""

    def __init__(self, filesystem: InMemoryFilesystem) -> None:
        self._fs = filesystem
        self._stack = contextlib.ExitStack()
        self._tree: Tree | None = None
        self._before: Version | None = None
        self._times: list[tuple[int, int]] = []
        self._owner = (0, 0)

    def begin(self) -> None:
        tree = self._fs.tree
        self._stack.enter_context(tree.lock)
        self._tree = tree
        self._before = tree.snapshot()
        root = tree.node(ROOT_INO)
        self._owner = (root.uid, root.gid)  # imported entries belong to the workspace owner
        tree.empty(ROOT_INO)

    def add(self, entry: Entry, content: Reader | None) -> None:
        tree = self._tree
        assert tree is not None
        parent_path, _, name = entry.path.rpartition("/")
        parent = tree.make_dirs(parent_path, 0o755, *self._owner)
        kind = _stat.S_IFMT(entry.mode)
        existing = tree.directory(parent).entries.get(name)
        if kind == _stat.S_IFDIR:
            ino = (
                existing
                if existing is not None
                else tree.mkdir(parent, name, entry.mode, *self._owner)
            )
        elif kind == _stat.S_IFLNK:
            assert entry.target is not None
            ino = tree.symlink(parent, name, entry.target, *self._owner)
        else:
            assert content is not None
            ino = tree.create(parent, name, entry.mode, *self._owner)
            offset = 0
            while block := content.read(1 << 20):
                tree.write(ino, offset, block)
                offset += len(block)
        if kind != _stat.S_IFLNK:
            tree.setattr(ino, mode=entry.mode)
        self._times.append((ino, entry.mtime_ns))

    def commit(self) -> None:
        tree = self._tree
        assert tree is not None
        for ino, mtime in self._times:  # last: adding entries touched their directories
            tree.setattr(ino, mtime_ns=mtime)
        self._stack.close()

    def abort(self) -> None:
        if self._tree is not None and self._before is not None:
            self._tree.restore(self._before)
        self._stack.close()
