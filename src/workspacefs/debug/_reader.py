"""Reading one state of a workspace (a snapshot view, or the live tree) for the API.

Any ``Filesystem`` works through the protocol: ``list`` then ``stat`` per
entry, ``read_bytes`` in blocks. An in-memory view (``TreeFilesystem``) is
read from its frozen tree instead, which lists 50,000 files in tens of
milliseconds rather than one protocol call per file.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from .._errors import IsADirectoryFsError, NotADirectoryFsError, NotFoundError
from ..fs import FileStat, Filesystem, InMemoryFilesystem, TreeFilesystem
from ..tree import Directory, File, Node, Symlink, Tree, TreeView
from ._model import TreeEntry, depth_first

BLOCK = 1 << 20
"""Bytes read per call when a file is streamed."""


def _node_entry(path: str, node: Node) -> TreeEntry:
    if isinstance(node, File):
        return TreeEntry(path, "file", node.size, node.mode)
    if isinstance(node, Directory):
        return TreeEntry(path, "directory", 0, node.mode)
    if isinstance(node, Symlink):
        return TreeEntry(path, "symlink", len(node.target), node.mode, node.target)
    return TreeEntry(path, "other", 0, node.mode)


def _stat_entry(path: str, info: FileStat) -> TreeEntry:
    if info.is_symlink:
        return TreeEntry(path, "symlink", info.size_bytes, info.mode)
    if info.is_directory:
        return TreeEntry(path, "directory", 0, info.mode)
    if info.is_file:
        return TreeEntry(path, "file", info.size_bytes, info.mode)
    return TreeEntry(path, "other", 0, info.mode)


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


class TreeReader:
    """Reads a frozen tree (a snapshot's ``Version``) directly."""

    def __init__(self, view: TreeView) -> None:
        self._view = view

    def _node(self, path: str) -> Node:
        ino = self._view.resolve_path(path)
        node = None if ino is None else self._view.get(ino)
        if node is None:
            raise NotFoundError("no such file or directory", path)
        return node

    def list(self, path: str) -> Sequence[TreeEntry]:
        node = self._node(path)
        if not isinstance(node, Directory):
            raise NotADirectoryFsError("not a directory", path)
        view = self._view
        entries = [
            _node_entry(_join(path, name), view.node(ino)) for name, ino in node.entries.items()
        ]
        return sorted(entries, key=lambda entry: entry.path)

    def walk(self) -> Iterator[TreeEntry]:
        view = self._view

        def children(entry: TreeEntry | None) -> list[TreeEntry]:
            path = "" if entry is None else entry.path
            directory = self._node(path)
            assert isinstance(directory, Directory), "walked into directories only"
            return [_node_entry(_join(path, n), view.node(i)) for n, i in directory.entries.items()]

        return depth_first(children)

    def stat(self, path: str) -> TreeEntry:
        return _node_entry(path, self._node(path))

    def _file(self, path: str) -> File:
        node = self._node(path)
        if isinstance(node, Directory):
            raise IsADirectoryFsError("is a directory", path)
        if not isinstance(node, File):
            raise NotFoundError("not a regular file", path)
        return node

    def read(self, path: str, limit: int) -> bytes:
        return self._file(path).read(0, limit)

    def blocks(self, path: str) -> Iterator[bytes]:
        node = self._file(path)
        offset = 0
        while block := node.read(offset, BLOCK):
            offset += len(block)
            yield block


class ProtocolReader:
    """Reads any ``Filesystem`` through the protocol (a remote workspace, say)."""

    def __init__(self, filesystem: Filesystem) -> None:
        self._fs = filesystem

    @staticmethod
    def _arg(path: str) -> str:
        return path or "."

    def list(self, path: str) -> Sequence[TreeEntry]:
        entries = []
        for item in self._fs.list(self._arg(path)):
            child = _join(path, item.name)
            if item.is_directory and not item.is_symlink:
                entries.append(TreeEntry(child, "directory"))
            else:
                entries.append(_stat_entry(child, self._fs.stat(child)))
        return sorted(entries, key=lambda entry: entry.path)

    def walk(self) -> Iterator[TreeEntry]:
        return depth_first(lambda entry: self.list("" if entry is None else entry.path))

    def stat(self, path: str) -> TreeEntry:
        try:
            return _stat_entry(path, self._fs.stat(self._arg(path)))
        except NotADirectoryError as exc:  # a path through a file names nothing
            raise NotFoundError("no such file or directory", path) from exc

    def _check_file(self, path: str) -> None:
        entry = self.stat(path)
        if entry.kind == "directory":
            raise IsADirectoryFsError("is a directory", path)
        if entry.kind != "file":
            raise NotFoundError("not a regular file", path)

    def read(self, path: str, limit: int) -> bytes:
        self._check_file(path)
        data = b""
        while len(data) < limit:
            chunk = self._fs.read_bytes(path, offset=len(data), limit=min(BLOCK, limit - len(data)))
            data += chunk.content
            if not chunk.truncated or not chunk.content:
                break
        return data

    def blocks(self, path: str) -> Iterator[bytes]:
        self._check_file(path)
        offset = 0
        while True:
            chunk = self._fs.read_bytes(path, offset=offset, limit=BLOCK)
            if chunk.content:
                yield chunk.content
            offset += len(chunk.content)
            if not chunk.truncated or not chunk.content:
                return


StateReader = TreeReader | ProtocolReader
"""Either way of reading one state."""


def reader_for(filesystem: Filesystem) -> StateReader:
    """The fastest reader for ``filesystem``: a frozen tree where there is one.

    A live in-memory workspace is frozen first (O(1)), so one request sees one
    consistent state while writers go on.
    """
    if isinstance(filesystem, InMemoryFilesystem):
        filesystem = filesystem.frozen_view()
    if isinstance(filesystem, TreeFilesystem) and not isinstance(filesystem.view, Tree):
        return TreeReader(filesystem.view)
    return ProtocolReader(filesystem)
