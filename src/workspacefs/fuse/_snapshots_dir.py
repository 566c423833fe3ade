"""``/.snapshots``: every snapshot as a read-only directory next to the live tree.

Every snapshot is a frozen tree with its own inode numbers, so the mount
gives each one a slot and numbers its inodes ``2**60 | slot << 36 | ino``;
the live tree keeps its own numbers (far below), and the directory itself
has one number above them all (``2**62``). Everything in that range is
read-only and needs no lookup counts: a version never changes and is never
freed while listed.

``.snapshots`` is hidden like ZFS's ``.zfs``: it answers a lookup by name
but is never listed, so ``git status``, ``find`` and agents' globs do not
wander into it. A real entry of that name wins.
"""

from __future__ import annotations

import contextlib
import errno
import stat as _stat
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Final

import pyfuse3
from pyfuse3 import FUSEError

from .._errors import SnapshotNotFoundError
from ..fs import AccessRules, FilesystemSnapshot, InMemoryFilesystem, TreeFilesystem
from ..tree import ROOT_INO, Node, Version
from ._attributes import CachePolicy, entry_attributes, missing_entry
from ._served import HIDDEN_INOS, LOCAL_BITS, LOCAL_MASK, SNAPSHOTS_NAME, ServedTree

_NAME = SNAPSHOTS_NAME.encode()
_BASE = 1 << 60
_SLOT_MASK = (1 << (60 - LOCAL_BITS)) - 1  # slots fit below 2**60, where forks start
_TIMEOUT = 1.0  # snapshots come and go with API calls that invalidate nothing here

SnapshotLister = Callable[[], Sequence[tuple[FilesystemSnapshot, Version]]]
"""Lists the snapshots to show, each with its frozen version."""


def snapshot_lister(filesystem: TreeFilesystem) -> SnapshotLister | None:
    """What ``/.snapshots`` shows for ``filesystem``: its snapshots, if it has any."""
    if not isinstance(filesystem, InMemoryFilesystem):
        return None  # a snapshot view has no snapshots of its own
    live = filesystem

    def listing() -> list[tuple[FilesystemSnapshot, Version]]:
        found = []
        for record in live.snapshots():
            with contextlib.suppress(SnapshotNotFoundError):  # pruned meanwhile
                found.append((record, live.version(record)))
        return found

    return listing


class SnapshotsDir:
    """The hidden ``/.snapshots`` directory and the inodes of the snapshots in it.

    Args:
        lister: Lists the snapshots to show; None hides the directory.
    """

    # -- which inode is whose ----------------------------------------------------

    FIRST_INO: Final[pyfuse3.InodeT] = _BASE
    """Inode numbers from here up are this directory's (itself and every inode
    of its snapshots: read-only, never held); below are the live tree's."""
    INO: Final[pyfuse3.InodeT] = HIDDEN_INOS
    """The directory's own inode number."""

    def __init__(self, lister: SnapshotLister | None, rules: AccessRules | None = None) -> None:
        self._lister = lister
        self._rules = rules  # the workspace's: what they hide, its snapshots hide too
        self._lock = threading.Lock()
        self._slots: dict[str, int] = {}  # snapshot id -> slot (stable for the mount)
        # Weakly: a deleted snapshot frees its memory at once, and its inodes go stale.
        self._versions: dict[int, weakref.ref[Version]] = {}
        self._names: dict[str, pyfuse3.InodeT] = {}
        self._changed_ns = time.time_ns()  # when the listing last changed

    def resolve(self, ino: pyfuse3.InodeT) -> tuple[ServedTree, pyfuse3.InodeT]:
        """(the snapshot served read-only, the inode's own number in it) of an
        inode inside a snapshot.

        Raises ESTALE if the snapshot is gone, EISDIR for the directory itself
        (which is no version: callers answer for it first).
        """
        if ino == self.INO:
            raise FUSEError(errno.EISDIR)
        slot = (ino >> LOCAL_BITS) & _SLOT_MASK
        version = self._version(slot)
        if version is None:
            self._refresh()  # a snapshot taken since: refresh the slots
            version = self._version(slot)
            if version is None:
                raise FUSEError(errno.ESTALE)
        # Made per request (a few attribute stores), so nothing here holds the
        # version; read-only and never held, and ``..`` of its root is itself.
        root = _base(slot) + ROOT_INO
        served = ServedTree(
            version, base=_base(slot), writable=False, parent=root, rules=self._rules
        )
        return served, pyfuse3.InodeT(ino & LOCAL_MASK)

    def bases(self) -> list[int]:
        """The inode offset of every snapshot the kernel may have been shown."""
        with self._lock:
            return [_base(slot) for slot in self._versions]

    def _version(self, slot: int) -> Version | None:
        ref = self._versions.get(slot)
        return None if ref is None else ref()

    # -- the directory -----------------------------------------------------------

    def shown_as(self, parent: pyfuse3.InodeT, name: bytes) -> bool:
        """True if a lookup of ``parent/name`` that found no real entry means this directory."""
        return self._lister is not None and parent == ROOT_INO and name == _NAME

    def attributes(self, root: Node, cache: CachePolicy) -> pyfuse3.EntryAttributes:
        """The directory's ``stat``: the workspace root's owner, read-only, and as
        modification time the last change of the listing, never cached.

        Snapshots come and go through API calls that invalidate nothing here;
        a kernel that caches listings (open-free mounts) checks the
        modification time before it reuses one, so it must always ask.
        """
        self._refresh()
        entry = entry_attributes(self.INO, root, cache)
        entry.st_mode = _stat.S_IFDIR | 0o555
        entry.st_nlink = 2
        entry.st_mtime_ns = entry.st_ctime_ns = self._changed_ns
        entry.entry_timeout = _TIMEOUT
        entry.attr_timeout = 0
        return entry

    def lookup(self, name: str, cache: CachePolicy) -> pyfuse3.EntryAttributes:
        """The entry of the snapshot named ``name`` (its tag or its id)."""
        ino = self._refresh().get(name)
        if ino is None:
            return missing_entry(0)  # a snapshot taken later must show up at once
        served, local = self.resolve(ino)
        entry = entry_attributes(ino, served.view.node(local), cache)
        entry.entry_timeout = _TIMEOUT  # a deleted snapshot must not linger
        return entry

    def listing(self) -> list[tuple[str, pyfuse3.InodeT]]:
        """The directory's entries, ``.`` and ``..`` first, then each snapshot by name."""
        return [(".", self.INO), ("..", ROOT_INO), *sorted(self._refresh().items())]

    def _refresh(self) -> dict[str, pyfuse3.InodeT]:
        """List the snapshots again: name -> inode of each one's root, by tag and by id."""
        if self._lister is None:
            return {}
        listed = self._lister()
        with self._lock:
            names: dict[str, pyfuse3.InodeT] = {}
            current: dict[int, weakref.ref[Version]] = {}
            for record, version in listed:
                key = str(record.snapshot_id)
                slot = self._slots.setdefault(key, len(self._slots) + 1)
                current[slot] = weakref.ref(version)
                names[key] = _base(slot) + ROOT_INO
                if record.tag and "/" not in record.tag and record.tag not in (".", ".."):
                    names[record.tag] = _base(slot) + ROOT_INO
            self._versions = current
            if names != self._names:
                self._names = names
                self._changed_ns = max(time.time_ns(), self._changed_ns + 1)
        return names


def _base(slot: int) -> int:
    """The number of slot ``slot``'s inode 0: its inode ``n`` is ``base + n``."""
    return _BASE | slot << LOCAL_BITS
