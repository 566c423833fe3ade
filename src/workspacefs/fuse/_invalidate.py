"""Kernel cache invalidation after changes made outside the mount.

Called in the writer's thread once the tree lock is released: never from a
FUSE handler and never under the lock, since the kernel may need the FUSE
loop (and so the lock) to finish a request before it can invalidate.
Only what the kernel knows (held inodes, entries of held directories)
is invalidated; with change journals that is O(changes).
"""

from __future__ import annotations

import errno
import logging

import pyfuse3

from ..tree import ROOT_INO, Journal, Tree
from ._operations import encode

log = logging.getLogger(__name__)

_HARMLESS = (errno.ENOENT, errno.ENOTDIR)  # the kernel had already forgotten it


def invalidate(tree: Tree, journal: Journal) -> None:
    """Drop the kernel's cached attributes, data and entries that ``journal`` touched."""
    with tree.lock:
        inodes = [ino for ino in journal.inodes if tree.held(ino) or ino == ROOT_INO]
        entries = [
            (parent, name)
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
