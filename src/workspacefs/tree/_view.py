"""Read operations, shared by the live tree and its frozen versions.

All operations are inode-based, as FUSE speaks, and cost O(1) in the size of
the tree (O(name count) for readdir, O(depth) for paths).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

from .._errors import (
    InvalidArgumentError,
    IsADirectoryFsError,
    NoAttributeError,
    NotADirectoryFsError,
    NotFoundError,
)
from ._nodes import Directory, File, Node, Symlink
from ._table import PAGE_BITS, Table

ROOT_INO = 1
"""The inode number of the root directory, as FUSE expects."""


class TreeView:
    """Read access to one table: a frozen version or the live tree."""

    __slots__ = ("_table",)

    def __init__(self, table: Table) -> None:
        self._table = table

    # -- nodes ---------------------------------------------------------------

    def inodes(self) -> Iterator[int]:
        """Every inode number in this view's table, in order (reachable or not)."""
        for index, page in enumerate(self._table.pages):
            if page is not None:
                base = index << PAGE_BITS
                yield from (base + slot for slot, node in enumerate(page.slots) if node is not None)

    def node(self, ino: int) -> Node:
        """The node at ``ino``; raises NotFoundError. Callers must not mutate it."""
        node = self._table.get(ino)
        if node is None:
            raise NotFoundError(f"no inode {ino}", None)
        return node

    def get(self, ino: int) -> Node | None:
        """The node at ``ino``, or None."""
        return self._table.get(ino)

    def directory(self, ino: int) -> Directory:
        """The directory at ``ino``; raises NotADirectoryFsError otherwise."""
        node = self.node(ino)
        if not isinstance(node, Directory):
            raise NotADirectoryFsError("not a directory", self.describe(ino))
        return node

    # -- inode operations ----------------------------------------------------

    def find(self, parent: int, name: str) -> int | None:
        """The inode named ``name`` in directory ``parent``, or None.

        For hot paths (FUSE lookups of missing names): no exception, no message.
        """
        directory = self.directory(parent)
        if name == ".":
            return parent
        if name == "..":
            return directory.links[0][0] if directory.links else ROOT_INO
        return directory.entries.get(name)

    def lookup(self, parent: int, name: str) -> int:
        """The inode named ``name`` in directory ``parent``."""
        ino = self.find(parent, name)
        if ino is None:
            raise NotFoundError("no such file or directory", self.describe(parent, name))
        return ino

    def read(self, ino: int, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes of file ``ino`` at ``offset``."""
        return self._readable(ino, offset, size).read(offset, size)

    def prepare_read(self, ino: int, offset: int, size: int) -> bytes | Callable[[], bytes]:
        """``read``, or, if the file's data is not in memory, a function that loads it
        and returns those bytes: call it after releasing the tree lock, so the disk
        is read without it (the bytes are those of the file as it is now)."""
        node = self._readable(ino, offset, size)
        marker = node.absent()
        if marker is None:
            return node.read(offset, size)
        return functools.partial(node.read_absent, marker, offset, size)

    def _readable(self, ino: int, offset: int, size: int) -> File:
        node = self.node(ino)
        if not isinstance(node, File):
            if isinstance(node, Directory):
                raise IsADirectoryFsError("is a directory", self.describe(ino))
            raise InvalidArgumentError("not a regular file", self.describe(ino))
        if offset < 0 or size < 0:
            raise InvalidArgumentError("negative offset or size", self.describe(ino))
        return node

    def readdir(self, ino: int) -> list[tuple[str, int]]:
        """The entries of directory ``ino`` as (name, inode), in creation order.

        The list is a copy: iterating it is safe while the directory changes.
        """
        return list(self.directory(ino).entries.items())

    def readlink(self, ino: int) -> str:
        """The target of symlink ``ino``."""
        node = self.node(ino)
        if not isinstance(node, Symlink):
            raise InvalidArgumentError("not a symbolic link", self.describe(ino))
        return node.target

    def getxattr(self, ino: int, name: bytes) -> bytes:
        """The value of extended attribute ``name``."""
        xattrs = self.node(ino).xattrs
        if xattrs is None or name not in xattrs:
            raise NoAttributeError("no such attribute", self.describe(ino))
        return xattrs[name]

    def listxattr(self, ino: int) -> list[bytes]:
        """The names of the extended attributes of ``ino``."""
        return list(self.node(ino).xattrs or ())

    # -- paths ---------------------------------------------------------------

    def paths(self, ino: int) -> list[str]:
        """Every path naming ``ino`` (several for hard links); "" is the root."""
        if ino == ROOT_INO:
            return [""]
        node = self.get(ino)
        if node is None:
            return []
        result = []
        for parent, name in node.links:
            prefix = self._directory_path(parent)
            if prefix is not None:
                result.append(f"{prefix}/{name}" if prefix else name)
        return result

    def _directory_path(self, ino: int) -> str | None:
        """The path of directory ``ino``, or None if it is not reachable.

        A loop up the parents, not a recursion: trees may be deeper than
        Python's stack. A directory has one name, so there is one path.
        """
        names = []
        while ino != ROOT_INO:
            node = self.get(ino)
            if node is None or not node.links:
                return None
            ino, name = node.links[0]
            names.append(name)
        return "/".join(reversed(names))

    def describe(self, ino: int, name: str | None = None) -> str:
        """A path for error messages, or ``<inode N>`` if unreachable."""
        found = self.paths(ino)
        base = found[0] if found else f"<inode {ino}>"
        if name is None:
            return base or "/"
        return f"{base}/{name}" if base else name

    def walk(self, ino: int = ROOT_INO, prefix: str = "") -> Iterator[tuple[str, int, Node]]:
        """Yield (path, inode, node) for everything below directory ``ino``, depth first."""
        stack = [(prefix, ino)]
        while stack:
            base, current = stack.pop()
            directory = self.directory(current)
            for name, child in directory.entries.items():
                node = self.node(child)
                path = f"{base}/{name}" if base else name
                yield path, child, node
                if isinstance(node, Directory):
                    stack.append((path, child))

    def resolve_path(self, path: str) -> int | None:
        """The inode at a normalised relative path (no symlinks followed), or None."""
        ino = ROOT_INO
        if not path:
            return ino
        for name in path.split("/"):
            node = self.get(ino)
            if not isinstance(node, Directory):
                return None
            child = node.entries.get(name)
            if child is None:
                return None
            ino = child
        return ino
