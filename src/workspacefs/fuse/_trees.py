"""Which tree an inode belongs to: the trees a mount serves, and its forks' comings and goings.

One mount serves the workspace's live tree (its own inode numbers), every
snapshot under ``/.snapshots`` (``SnapshotsDir``) and every fork under
``/.forks`` (``ForksDir``), each of the others in a range of numbers of its
own. ``ServedTrees`` routes an inode to its ``ServedTree`` and keeps the
forks' lifecycle: added, shown, removed (hidden at once) and released once
the kernel has forgotten the last of their inodes (the lookup counts say
when).
"""

from __future__ import annotations

import contextlib
import errno
import logging
from collections.abc import Sequence

from pyfuse3 import FUSEError, InodeT

from .._errors import AlreadyExistsError
from ..fs import AccessRules
from ..tree import ROOT_INO, Tree, TreeView
from ._forks_dir import ForksDir
from ._served import ServedTree
from ._snapshots_dir import SnapshotLister, SnapshotsDir

log = logging.getLogger(__name__)

OTHER_TREES = SnapshotsDir.FIRST_INO
"""Inode numbers from here up belong to snapshots, forks and the hidden directories."""

HIDDEN_DIRS = (SnapshotsDir.INO, ForksDir.INO)
"""The hidden directories' own inode numbers (read-only, never held)."""


class ServedTrees:
    """The trees one mount serves.

    Args:
        view: The workspace's live ``Tree``, or a frozen version.
        read_only: Nothing may be written (forks added later neither).
        snapshots: Lists the snapshots ``/.snapshots`` shows; None hides it.
    """

    def __init__(
        self,
        view: TreeView,
        *,
        read_only: bool,
        snapshots: SnapshotLister | None,
        rules: AccessRules | None = None,
    ):
        self.origin = ServedTree(view, base=0, writable=not read_only, parent=ROOT_INO, rules=rules)
        self.snapshots = SnapshotsDir(snapshots, rules)
        self.forks = ForksDir()
        self._read_only = read_only

    # -- routing ---------------------------------------------------------------------

    def route(self, ino: InodeT) -> tuple[ServedTree, InodeT]:
        """(the tree inode ``ino`` belongs to, its own number there); ESTALE for a
        snapshot or fork the mount no longer serves."""
        if ino < OTHER_TREES:
            return self.origin, ino
        if ForksDir.FIRST_INO <= ino < SnapshotsDir.INO:
            return self.forks.route(ino)
        return self.snapshots.resolve(ino)

    def route_any(self, ino: InodeT) -> tuple[ServedTree, InodeT]:
        """``route``, with the hidden directories counted as the live tree's (whose
        lock guards what their attributes are made of)."""
        if ino in HIDDEN_DIRS:
            return self.origin, ino
        return self.route(ino)

    def writable(self, *inodes: InodeT) -> tuple[ServedTree, Tree, Sequence[InodeT]]:
        """(served tree, its live tree, the inodes' own numbers) for a write that
        involves ``inodes``: EROFS where they may not be written (snapshots, the
        hidden directories, a read-only mount), EXDEV if they are in two trees."""
        if len(inodes) == 1 and inodes[0] < OTHER_TREES:  # the hot path
            origin = self.origin
            if origin.tree is None:
                raise FUSEError(errno.EROFS)
            return origin, origin.tree, inodes
        routes = []
        for ino in inodes:
            if ino in HIDDEN_DIRS:
                raise FUSEError(errno.EROFS)
            routes.append(self.route(ino))
        served = routes[0][0]
        tree = served.writable()
        for other, _ in routes[1:]:
            other.writable()
            if other is not served:
                raise FUSEError(errno.EXDEV)  # two workspaces: as two filesystems
        return served, tree, [local for _, local in routes]

    def all(self) -> list[ServedTree]:
        """The live tree and every fork served (removed ones still held included)."""
        return [self.origin, *self.forks.served()]

    # -- forks ---------------------------------------------------------------------

    def add_fork(
        self,
        name: str,
        view: TreeView,
        *,
        read_only: bool,
        show: bool,
        rules: AccessRules | None = None,
    ) -> ServedTree:
        """Serve ``view`` at ``/.forks/<name>/`` (see ``WorkspaceOperations.add_fork``)."""
        if any(served.view is view for served in self.all()):
            raise AlreadyExistsError("this tree is mounted here already", name)
        writable = not (read_only or self._read_only)
        served = self.forks.add(name, view, writable=writable, rules=rules)
        if show:
            self.forks.show(served)
        return served

    def remove_fork(self, name: str) -> ServedTree:
        """Hide fork ``name``; release it now if the kernel holds none of its inodes."""
        served = self.forks.hide(name)
        with served.lock:
            held = served.held
        if not held:
            self.release(served)
        return served

    def release(self, served: ServedTree) -> None:
        """Stop serving a removed fork, and tell (``on_release``) once."""
        if self.forks.release(served):
            for callback in served.on_release:
                try:
                    callback()
                except Exception:
                    log.exception("releasing fork %s failed", served.name)

    @staticmethod
    def held_entries(served: ServedTree) -> list[tuple[InodeT, str]]:
        """(parent, name) of every entry of ``served`` the kernel may have cached:
        the names of the inodes it holds, for invalidation when a fork goes."""
        found = []
        with served.lock:
            for local in served.lookups.inodes() if served.lookups is not None else ():
                node = served.view.get(local)
                for parent, name in node.links if node is not None else ():
                    found.append((served.ino(parent), name))
        return found

    # -- the kernel's references ----------------------------------------------------

    def forget(self, inode_list: Sequence[tuple[InodeT, int]]) -> None:
        """The kernel's ``forget``: drop references, each tree under its own lock
        once; a removed fork whose last inode goes is released."""
        if len(inode_list) == 1 and inode_list[0][0] < OTHER_TREES:
            # The common case: the kernel forgets as soon as it evicts, one
            # inode at a time (an rm -rf sends one FORGET per entry).
            lookups = self.origin.lookups
            if lookups is not None:
                ino, count = inode_list[0]
                with self.origin.lock:
                    lookups.forget(ino, count)
            return
        by_tree: dict[int, tuple[ServedTree, list[tuple[InodeT, int]]]] = {}
        for ino, count in inode_list:
            if SnapshotsDir.FIRST_INO <= ino < ForksDir.FIRST_INO or ino >= SnapshotsDir.INO:
                continue  # snapshots and the hidden directories hold nothing
            with contextlib.suppress(FUSEError):  # a fork released already
                served, local = self.route(ino)
                by_tree.setdefault(id(served), (served, []))[1].append((local, count))
        for served, forgotten in by_tree.values():
            lookups = served.lookups
            if lookups is None:
                continue
            with served.lock:
                for local, count in forgotten:
                    lookups.forget(local, count)
                released = served.hidden and not lookups
            if released:
                self.release(served)

    def forget_all(self) -> None:
        """The kernel session has ended: it holds no inode any more."""
        for served in self.all():
            if served.lookups is not None:
                with served.lock:
                    served.lookups.forget_all()
