"""Kernel cache invalidation after changes made outside the mount.

Called in the writer's thread once the tree lock is released: never from a
FUSE handler and never under the lock, since the kernel may need the FUSE
loop (and so the lock) to finish a request before it can invalidate.
Only what the kernel knows (held inodes, entries of held directories)
is invalidated; with change journals that is O(changes). A fork the mount
serves under ``/.forks`` has its inodes at an offset (``base``): its
journal's numbers are translated.
"""

from __future__ import annotations

import errno
import logging
import threading

import pyfuse3

from ..tree import ROOT_INO, Journal, Tree
from ._operations import encode

log = logging.getLogger(__name__)

_HARMLESS = (errno.ENOENT, errno.ENOTDIR)  # the kernel had already forgotten it


def invalidate(tree: Tree, journal: Journal, *, base: int = 0) -> None:
    """Drop the kernel's cached attributes, data and entries that ``journal`` touched.

    ``base + n`` is the kernel's number for the tree's inode ``n`` (0 for the
    mounted workspace, a fork's offset for a fork).
    """
    with tree.lock.unpublished:  # reads only; never refused (see TreeLock.refuse)
        inodes = [base + ino for ino in journal.inodes if tree.held(ino) or ino == ROOT_INO]
        entries = [
            (base + parent, name)
            for parent, name in journal.entries
            if tree.held(parent) or parent == ROOT_INO
        ]
    for parent, name in entries:
        try:
            pyfuse3.invalidate_entry(parent, encode(name))
        except OSError as exc:
            if exc.errno not in _HARMLESS:
                log.warning("invalidate_entry(%d, %r) failed: %s", parent, name, exc)
    for ino in inodes:
        try:
            pyfuse3.invalidate_inode(ino)
        except OSError as exc:
            if exc.errno not in _HARMLESS:
                log.warning("invalidate_inode(%d) failed: %s", ino, exc)


class Invalidator:
    """Invalidates after each API change until ``close``; ``close`` waits for
    one in flight, so the session can be destroyed safely afterwards (a
    notification through a destroyed session would crash the process)."""

    __slots__ = ("_base", "_lock", "_open", "_tree")

    def __init__(self, tree: Tree, *, base: int = 0) -> None:
        self._tree = tree
        self._base = base
        self._lock = threading.Lock()
        self._open = True

    def __call__(self, journal: Journal) -> None:
        with self._lock:
            if self._open:
                invalidate(self._tree, journal, base=self._base)

    def stop(self) -> None:
        """Stop invalidating, without waiting for one in flight (safe in the FUSE
        thread, which such an invalidation may be waiting on; ``close`` waits)."""
        self._open = False

    @property
    def finished(self) -> bool:
        """True once stopped and no invalidation runs any more."""
        if self._open or not self._lock.acquire(blocking=False):
            return False
        self._lock.release()
        return True

    def close(self) -> None:
        """Stop invalidating; returns once no invalidation runs any more."""
        with self._lock:
            self._open = False
