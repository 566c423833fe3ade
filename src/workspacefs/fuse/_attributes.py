"""What the kernel is told about an inode, and how long it may trust it.

This is the one place a tree node becomes a ``stat`` record: the tree holds
the attributes, the kernel wants them as ``EntryAttributes``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyfuse3

from ..fs import available_memory
from ..tree import Node, Special, Tree, TreeView, Version

BLOCK_SIZE = 4096
"""The block size statfs reports (the unit of its block counts)."""

IO_SIZE = 128 << 10
"""The ``st_blksize`` stat reports: the preferred I/O size.

stdio and Python's buffered files write in chunks of this size, and every
write(2) is at least one request: with 4 KiB a 1 MB file took 375 requests,
with 128 KiB (s3ql's choice) 27 (docs/fuse.md).
"""


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """How long the kernel may trust what it was told.

    Safe to be generous: every change made through the Python API, and every
    restore, is invalidated explicitly (see ``_invalidate``).
    """

    entry_timeout: float = 300.0
    attr_timeout: float = 300.0
    keep_cache: bool = True


DEFAULT_CACHE = CachePolicy()


_PYFUSE3_TIMEOUT = 300.0
"""The entry and attribute timeouts ``EntryAttributes()`` starts with."""

_set_stat: Callable[..., None] | None = getattr(pyfuse3.EntryAttributes, "set_stat", None)
"""``EntryAttributes.set_stat`` of the patched pyfuse3: every ``stat`` field in one
call (about 0.45 us a reply instead of 1.1 us field by field)."""


def entry_attributes(
    ino: pyfuse3.InodeT, node: Node, cache: CachePolicy
) -> pyfuse3.EntryAttributes:
    """The ``stat`` record of ``node``, known to the kernel as ``ino``.

    Built on every reply that carries attributes (a getattr, lookup, create or
    setattr), so it costs one call with the patched pyfuse3 (``set_stat``), and
    sets nothing that ``EntryAttributes()`` starts with: generation 0, the
    timeouts of the default policy, and the birth time, which exists only on
    BSD and macOS.
    """
    entry = pyfuse3.EntryAttributes()
    if _set_stat is not None:
        _set_stat(
            entry,
            ino,
            node.mode,
            node.nlink,
            node.uid,
            node.gid,
            node.rdev if isinstance(node, Special) else 0,
            node.size,
            IO_SIZE,
            (node.allocated + 511) // 512,
            node.atime_ns,
            node.mtime_ns,
            node.ctime_ns,
        )
    else:
        entry.st_ino = ino
        entry.st_mode = node.mode
        entry.st_nlink = node.nlink
        entry.st_uid = node.uid
        entry.st_gid = node.gid
        if isinstance(node, Special):
            entry.st_rdev = node.rdev
        entry.st_size = node.size
        entry.st_blksize = IO_SIZE
        entry.st_blocks = (node.allocated + 511) // 512
        entry.st_atime_ns = node.atime_ns
        entry.st_mtime_ns = node.mtime_ns
        entry.st_ctime_ns = node.ctime_ns
    if cache.entry_timeout != _PYFUSE3_TIMEOUT:
        entry.entry_timeout = cache.entry_timeout
    if cache.attr_timeout != _PYFUSE3_TIMEOUT:
        entry.attr_timeout = cache.attr_timeout
    return entry


def missing_entry(timeout: float) -> pyfuse3.EntryAttributes:
    """A negative lookup reply the kernel may cache for ``timeout`` seconds."""
    missing = pyfuse3.EntryAttributes()
    missing.st_ino = 0
    missing.entry_timeout = timeout
    return missing


def capacity(view: TreeView) -> tuple[int, int]:
    """(size, free bytes) for statfs: the live tree's memory budget and what is
    left of it (snapshots' data counts as used); a frozen version is full."""
    if isinstance(view, Tree):
        budget = view.budget
        if budget.limit is None:  # a bare tree counts without a limit: memory is the limit
            free = available_memory()
            return budget.held + free, free
        return budget.limit, budget.free or 0
    used = view.total_bytes if isinstance(view, Version) else 0
    return used, 0
