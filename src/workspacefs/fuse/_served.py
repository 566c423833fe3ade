"""One tree a mount serves, and the range of inode numbers it is known by.

A mount serves several trees at once: the workspace itself, each snapshot
under ``/.snapshots`` and each fork under ``/.forks``. Each has its own inode
numbers (all start at the root, 1), so the mount shifts each tree's numbers
into a range of its own: the kernel's inode ``base + n`` is the tree's inode
``n``. Handlers route every inode to its ``ServedTree`` and work on that
tree alone, under that tree's lock, with that tree's lookup counts.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Callable

from pyfuse3 import FUSEError, InodeT

from ..fs import AccessRules
from ..tree import Tree, TreeView
from ._lookups import LookupCounts

LOCAL_BITS = 36
"""A forked or snapshot tree's own inode numbers must fit in this many bits
(68 billion inodes): above them sit the range's bits."""
LOCAL_MASK = (1 << LOCAL_BITS) - 1
HIDDEN_INOS = 1 << 62
"""The hidden directories' own inode numbers (``/.snapshots``, ``/.forks``, the open
probe) start here, above every served tree's range."""
SNAPSHOTS_NAME = ".snapshots"
FORKS_NAME = ".forks"
HIDDEN_NAMES = (SNAPSHOTS_NAME, FORKS_NAME)
"""The directories a mount serves at the workspace's root besides the tree's own
entries (found by name, never listed). A container must reach neither: every
container the project starts has them masked (``sandbox.run_arguments``), and no
tree's root gets a new entry of these names through the mount."""


class ServedTree:
    """A live tree or frozen version the mount serves, at inode offset ``base``.

    Args:
        view: The live ``Tree`` or a frozen version.
        base: The kernel's number for the tree's inode ``n`` is ``base + n``.
        writable: Writes are allowed (a live tree on a writable mount).
        parent: The kernel's number of the directory that ``..`` of the
            tree's root names.
        name: What the mount calls it (a fork's name), for messages.
        rules: The access rules it is shown under (a snapshot: its workspace's);
            the handlers leave out what a hidden rule covers.
    """

    __slots__ = (
        "base",
        "hidden",
        "lock",
        "lookups",
        "name",
        "on_release",
        "parent",
        "rules",
        "tree",
        "view",
    )

    def __init__(
        self,
        view: TreeView,
        *,
        base: int,
        writable: bool,
        parent: InodeT,
        name: str = "",
        rules: AccessRules | None = None,
    ) -> None:
        live = view if isinstance(view, Tree) else None
        self.view = view
        self.tree = live if writable else None
        # A read-only mount of a live tree still counts lookups: API writes
        # change it, and an inode the kernel holds must outlive its unlink.
        self.lookups = LookupCounts(live) if live is not None else None
        self.lock: contextlib.AbstractContextManager[object] = (
            live.lock.unpublished if live is not None else contextlib.nullcontext()
        )
        self.base = base
        self.parent = parent
        self.name = name
        self.rules = rules
        self.hidden = False
        """Set when a fork is removed from the mount: no longer found by
        name, and released once the kernel forgets its last inode."""
        self.on_release: list[Callable[[], object]] = []
        """Called (in whichever thread released it, never under a lock) when
        the mount stops serving the tree."""

    def hides(self, local: int, name: str, *, anyone: bool = False) -> bool:
        """True if the entry ``name`` of the directory ``local`` is hidden from the
        cause in effect (``anyone``: from some tool's call); call under ``lock``."""
        rules = self.rules
        return (
            rules is not None
            and rules.hides
            and rules.hidden(self.view, local, name, anyone=anyone)
        )

    def writable(self) -> Tree:
        """The live tree, if it may be written here; EROFS otherwise."""
        if self.tree is None:
            raise FUSEError(errno.EROFS)
        return self.tree

    def ino(self, local: int) -> InodeT:
        """The kernel's number of the tree's inode ``local``."""
        if self.base and local > LOCAL_MASK:
            raise FUSEError(errno.EOVERFLOW)  # past the range: would alias another tree's
        return InodeT(self.base + local)

    def hold(self, local: int) -> None:
        """The kernel was given an entry for ``local``: one more reference (call
        under ``lock``)."""
        if self.lookups is not None:
            self.lookups.add(local)

    @property
    def held(self) -> bool:
        """True while the kernel holds any of the tree's inodes (call under ``lock``)."""
        return bool(self.lookups)

    def __repr__(self) -> str:
        return f"<ServedTree {self.name or '/'} at {self.base:#x}>"
