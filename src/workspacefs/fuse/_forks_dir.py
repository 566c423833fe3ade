"""``/.forks``: live forks of the workspace, each a writable tree of its own.

pyfuse3 runs one FUSE session per process, so one mount serves a workspace
and all the forks added to it: ``/.forks/<name>/`` is a fork's root. A
container gets a fork as its ``/workspace`` by bind-mounting that directory,
so paths inside are the same as in the origin. Each fork is a whole
workspace (its own tree, lock, journal and lookup counts); the mount numbers
its inodes ``2**61 | slot << 36 | ino``, above the live tree's and the
snapshots' ranges, and the directory itself is ``2**62 + 1``.

Like ``/.snapshots`` the directory is hidden: found by name, never listed.
A removed fork disappears from it at once; the mount goes on serving the
inodes the kernel still holds (a process inside, a bind mount) and lets the
tree go when the kernel has forgotten the last of them.
"""

from __future__ import annotations

import errno
import stat as _stat
import threading
import time
from typing import Final

import pyfuse3
from pyfuse3 import FUSEError, InodeT

from .._errors import AlreadyExistsError, NotFoundError
from ..fs import AccessRules, check_name
from ..tree import ROOT_INO, Node, TreeView
from ._attributes import CachePolicy, entry_attributes
from ._served import FORKS_NAME, HIDDEN_INOS, LOCAL_BITS, LOCAL_MASK, ServedTree

NAME = FORKS_NAME.encode()
_BASE = 1 << 61
_SLOTS = 1 << (61 - LOCAL_BITS)  # slots fit below 2**62, where the hidden directories are
_TIMEOUT = 1.0  # forks come and go with API calls


class ForksDir:
    """The hidden ``/.forks`` directory and the forks served in it."""

    FIRST_INO: Final[InodeT] = _BASE
    """Inode numbers from here below ``2**62`` are the forks'."""
    INO: Final[InodeT] = HIDDEN_INOS + 1
    """The directory's own inode number."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Replaced, never changed in place: the FUSE thread reads them unlocked.
        self._slots: dict[int, ServedTree] = {}
        self._names: dict[str, ServedTree] = {}
        self._next_slot = 1
        self._changed_ns = time.time_ns()

    # -- which inode is whose ----------------------------------------------------

    def route(self, ino: int) -> tuple[ServedTree, InodeT]:
        """(the fork, its own number) of inode ``ino`` in the forks' range; ESTALE
        if that fork is no longer served."""
        served = self._slots.get((ino - _BASE) >> LOCAL_BITS)
        if served is None:
            raise FUSEError(errno.ESTALE)
        return served, InodeT(ino & LOCAL_MASK)

    def served(self) -> list[ServedTree]:
        """Every fork the mount serves, removed ones the kernel still holds included."""
        return list(self._slots.values())

    # -- adding and removing -------------------------------------------------------

    def add(
        self, name: str, view: TreeView, *, writable: bool, rules: AccessRules | None = None
    ) -> ServedTree:
        """Serve ``view`` as fork ``name``, not yet visible (see ``show``).

        Raises:
            InvalidArgumentError: ``name`` breaks the rule of names (``check_name``:
                one a table, a git ref and ``podman -v`` all hold).
            AlreadyExistsError: A fork of that name is served.
        """
        check_name(name, "fork name")
        with self._lock:
            if any(s.name == name and not s.hidden for s in self._slots.values()):
                raise AlreadyExistsError("a fork of this name is mounted", name)
            if any(s.view is view for s in self._slots.values()):
                raise AlreadyExistsError("this workspace is mounted as a fork already", name)
            slot = self._free_slot()
            served = ServedTree(
                view,
                base=_BASE | slot << LOCAL_BITS,
                writable=writable,
                parent=self.INO,
                name=name,
                rules=rules,
            )
            self._slots = {**self._slots, slot: served}
        return served

    def show(self, served: ServedTree) -> None:
        """Make an added fork visible under its name."""
        with self._lock:
            self._names = {**self._names, served.name: served}
            self._touch()

    def hide(self, name: str) -> ServedTree:
        """Take fork ``name`` out of the directory (its inodes stay served until
        ``release``).

        Raises:
            NotFoundError: No fork of that name is mounted.
        """
        with self._lock:
            served = self._names.get(name)
            if served is None:
                raise NotFoundError("no fork of this name is mounted", name)
            self._names = {key: value for key, value in self._names.items() if key != name}
            served.hidden = True
            self._touch()
        return served

    def release(self, served: ServedTree) -> bool:
        """Stop serving a fork's inodes; True if this call released it."""
        with self._lock:
            slot = (served.base - _BASE) >> LOCAL_BITS
            if self._slots.get(slot) is not served:
                return False
            self._slots = {key: value for key, value in self._slots.items() if key != slot}
            self._names = {k: v for k, v in self._names.items() if v is not served}
        return True

    def _free_slot(self) -> int:
        for _ in range(_SLOTS):
            slot = self._next_slot
            self._next_slot = slot % (_SLOTS - 1) + 1
            if slot not in self._slots:
                return slot
        raise FUSEError(errno.ENOSPC)

    def _touch(self) -> None:
        self._changed_ns = max(time.time_ns(), self._changed_ns + 1)

    # -- the directory -------------------------------------------------------------

    @staticmethod
    def shown_as(parent: InodeT, name: bytes) -> bool:
        """True if a lookup of ``parent/name`` that found no real entry means this directory."""
        return parent == ROOT_INO and name == NAME

    def find(self, name: str) -> ServedTree | None:
        """The visible fork named ``name``."""
        return self._names.get(name)

    def attributes(self, root: Node, cache: CachePolicy) -> pyfuse3.EntryAttributes:
        """The directory's ``stat``: the workspace root's owner, read-only, its
        modification time the last change of the listing, never cached (see
        ``SnapshotsDir.attributes``: forks too come and go without invalidation)."""
        entry = entry_attributes(self.INO, root, cache)
        entry.st_mode = _stat.S_IFDIR | 0o555
        entry.st_nlink = 2 + len(self._names)
        entry.st_mtime_ns = entry.st_ctime_ns = self._changed_ns
        entry.entry_timeout = _TIMEOUT
        entry.attr_timeout = 0
        return entry

    def listing(self) -> list[tuple[str, InodeT]]:
        """The directory's entries, ``.`` and ``..`` first, then each fork's root by name."""
        forks = sorted((name, served.ino(ROOT_INO)) for name, served in self._names.items())
        return [(".", self.INO), ("..", InodeT(ROOT_INO)), *forks]
