"""Reading one state of a workspace (a snapshot view, or the live tree) for the API.

An in-memory view (``TreeFilesystem``) is read from its frozen tree, which
lists 50,000 files in tens of milliseconds. Any other ``Filesystem`` is read
through the protocol: a daemon's ``RemoteFilesystem`` lists in pages of
thousands of entries (``entries``, one round trip a page); one without that
verb falls back to ``list`` then ``stat`` per entry. Files are read in
blocks of ``BLOCK`` bytes, never whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from .._errors import IsADirectoryFsError, NotADirectoryFsError, NotFoundError
from ..fs import (
    MAX_ENTRIES,
    Filesystem,
    FilesystemSource,
    InMemoryFilesystem,
    TreeFilesystem,
    node_entry,
    tree_entries,
    tree_key,
)
from ..tree import Directory, File, Tree, TreeView
from ._model import TreeEntry, depth_first

BLOCK = 1 << 20
"""Bytes read per call when a file is streamed."""


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def _by_path(entries: Sequence[TreeEntry]) -> list[TreeEntry]:
    return sorted(entries, key=lambda entry: entry.path)


class TreeReader:
    """Reads a frozen tree (a snapshot's ``Version``) directly."""

    def __init__(self, view: TreeView) -> None:
        self._view = view

    def list(self, path: str) -> Sequence[TreeEntry]:
        return _by_path(list(tree_entries(self._view, path, recursive=False)))

    def walk(self, after: str = "") -> Iterator[TreeEntry]:
        return tree_entries(self._view, after=after)

    def stat(self, path: str) -> TreeEntry:
        ino = self._view.resolve_path(path)
        node = None if ino is None else self._view.get(ino)
        if node is None:
            raise NotFoundError("no such file or directory", path)
        return node_entry(path, node)

    def _file(self, path: str) -> File:
        ino = self._view.resolve_path(path)
        node = None if ino is None else self._view.get(ino)
        if node is None:
            raise NotFoundError("no such file or directory", path)
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


Pager = Callable[..., list[TreeEntry]]
"""``entries(path, *, after, limit, recursive)`` of a filesystem that lists in pages."""


class ProtocolReader:
    """Reads any ``Filesystem`` through the protocol (a remote workspace, say); a path
    is looked up as ``FilesystemSource`` does, never through a link."""

    def __init__(self, filesystem: Filesystem) -> None:
        self._fs = filesystem
        self._source = FilesystemSource(filesystem)
        pager = getattr(filesystem, "entries", None)
        self._pager: Pager | None = pager if callable(pager) else None

    @staticmethod
    def _arg(path: str) -> str:
        return path or "."

    def _pages(self, path: str, after: str, recursive: bool) -> Iterator[TreeEntry]:
        assert self._pager is not None
        while True:
            page = self._pager(self._arg(path), after=after, limit=MAX_ENTRIES, recursive=recursive)
            yield from page
            if len(page) < MAX_ENTRIES:
                return
            after = tree_key(page[-1])

    def list(self, path: str) -> Sequence[TreeEntry]:
        if self._pager is not None:
            return _by_path(list(self._pages(path, "", recursive=False)))
        if self.stat(path).kind != "directory":
            raise NotADirectoryFsError("not a directory", path)
        entries = []
        for item in self._fs.list(self._arg(path)):
            child = _join(path, item.name)
            if item.is_directory and not item.is_symlink:
                entries.append(TreeEntry(child, "directory"))
            else:
                entries.append(self.stat(child))
        return _by_path(entries)

    def walk(self, after: str = "") -> Iterator[TreeEntry]:
        if self._pager is not None:
            return self._pages("", after, recursive=True)
        return depth_first(lambda e: self.list("" if e is None else e.path), after=after)

    def stat(self, path: str) -> TreeEntry:
        found = self._source.entry(path)
        if found is None:
            raise NotFoundError("no such file or directory", path)
        return found

    def _check_file(self, path: str) -> None:
        entry = self.stat(path)
        if entry.kind == "directory":
            raise IsADirectoryFsError("is a directory", path)
        if entry.kind != "file":
            raise NotFoundError("not a regular file", path)

    def read(self, path: str, limit: int) -> bytes:
        self._check_file(path)
        return self._source.read(path, limit)

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
