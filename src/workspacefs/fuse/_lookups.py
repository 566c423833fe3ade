"""The kernel's lookup counts of the live tree's inodes.

The kernel counts one reference for every entry it is given (lookup, create,
mkdir, mknod, symlink, link, and each accepted ``readdir_reply``) and gives
them back with ``forget``. The counts are the FUSE layer's business; the tree
only learns whether an inode is held at all (``Tree.hold``/``Tree.release``),
since an unlinked inode the kernel still knows (an open file) must stay
alive as an orphan until its count drops to zero.
"""

from __future__ import annotations

import pyfuse3

from ..tree import Tree


class LookupCounts:
    """Lookup counts per inode; the first reference holds the inode in the tree,
    the last one released frees it if it was unlinked meanwhile."""

    __slots__ = ("_counts", "_tree")

    def __init__(self, tree: Tree) -> None:
        self._tree = tree
        self._counts: dict[pyfuse3.InodeT, int] = {}

    def add(self, ino: pyfuse3.InodeT) -> None:
        """Count one more reference: the kernel was given an entry for ``ino``."""
        count = self._counts.get(ino, 0)
        if count == 0:
            self._tree.hold(ino)
        self._counts[ino] = count + 1

    def forget(self, ino: pyfuse3.InodeT, count: int) -> None:
        """Drop ``count`` references, as the kernel's ``forget`` says."""
        left = self._counts.get(ino, 0) - count
        if left > 0:
            self._counts[ino] = left
            return
        self._counts.pop(ino, None)
        self._tree.release(ino)

    def inodes(self) -> list[pyfuse3.InodeT]:
        """The inodes the kernel holds."""
        return list(self._counts)

    def __len__(self) -> int:
        """How many inodes the kernel holds."""
        return len(self._counts)

    def forget_all(self) -> None:
        """Drop every reference: the kernel session has ended."""
        for ino in self._counts:
            self._tree.release(ino)
        self._counts.clear()
