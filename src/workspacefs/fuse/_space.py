"""One inode space for the live tree and its snapshots under ``/.snapshots``.

Every snapshot is a frozen tree with its own inode numbers, so the mount
gives each one a slot and numbers its inodes ``SNAPSHOT_BASE | slot << 36 |
ino``; the live tree keeps its own numbers (far below the base).
``.snapshots`` itself is hidden like ZFS's ``.zfs``: it answers a lookup by
name but is never listed, so ``git status``, ``find`` and agents' globs do
not wander into it.
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable, Sequence

from pyfuse3 import FUSEError

from ..fs import FilesystemSnapshot
from ..tree import ROOT_INO, TreeView, Version

SNAPSHOTS_NAME = ".snapshots"
SNAPSHOTS_INO = 1 << 62
SNAPSHOT_BASE = 1 << 60
_SLOT_SHIFT = 36
_LOCAL_MASK = (1 << _SLOT_SHIFT) - 1

SnapshotLister = Callable[[], Sequence[tuple[FilesystemSnapshot, Version]]]


class InodeSpace:
    """Maps mount inode numbers to (tree view, its own inode number, slot)."""

    def __init__(self, live: TreeView, lister: SnapshotLister | None) -> None:
        self._live = live
        self._lister = lister
        self._lock = threading.Lock()
        self._slots: dict[str, int] = {}  # snapshot id -> slot (stable for the mount)
        self._views: dict[int, Version] = {}

    @property
    def enabled(self) -> bool:
        """True if this mount shows ``/.snapshots``."""
        return self._lister is not None

    def resolve(self, ino: int) -> tuple[TreeView, int, int]:
        """(view, local inode, slot) of a mount inode; slot 0 is the live tree."""
        if ino < SNAPSHOT_BASE:
            return self._live, ino, 0
        if ino == SNAPSHOTS_INO:
            raise FUSEError(errno.EISDIR)  # callers handle the directory itself first
        slot = (ino >> _SLOT_SHIFT) & 0xFFFFFF
        view = self._views.get(slot)
        if view is None:
            self.names()  # a snapshot taken since: refresh the slots
            view = self._views.get(slot)
            if view is None:
                raise FUSEError(errno.ESTALE)
        return view, ino & _LOCAL_MASK, slot

    @staticmethod
    def outer(slot: int, local: int) -> int:
        """The mount inode of ``local`` in ``slot``."""
        return local if slot == 0 else SNAPSHOT_BASE | slot << _SLOT_SHIFT | local

    def names(self) -> dict[str, int]:
        """Directory name -> mount inode of each snapshot's root: its tag and its id."""
        if self._lister is None:
            return {}
        listed = self._lister()
        with self._lock:
            names: dict[str, int] = {}
            current: dict[int, Version] = {}
            for record, version in listed:
                key = str(record.snapshot_id)
                slot = self._slots.setdefault(key, len(self._slots) + 1)
                current[slot] = version
                names[key] = self.outer(slot, ROOT_INO)
                if record.tag and "/" not in record.tag and record.tag not in (".", ".."):
                    names[record.tag] = self.outer(slot, ROOT_INO)
            self._views = current
        return names
