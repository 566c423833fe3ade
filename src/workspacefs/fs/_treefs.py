"""The protocol over a tree view: the live tree, or a frozen version read-only.

``TreeBackend`` answers the frontend's questions with inode numbers as
directory handles. Every call of the frontend holds the tree lock for its
tree work only; decoding and matching happen outside it, and walks take it
one directory at a time.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager

from .._errors import InvalidArgumentError, NotFoundError
from ..tree import (
    RENAME_NOREPLACE,
    ROOT_INO,
    Directory,
    File,
    Node,
    Subscriber,
    Symlink,
    Tree,
    TreeView,
)
from ._access import AccessRules
from ._archiving import archive_verbs
from ._backend import Entry, Handle, Kind
from ._entries import MAX_ENTRIES, TreeEntry, tree_entries
from ._frontend import BackendFilesystem, resolved
from ._limits import DEFAULT_LIMITS, Limits
from ._paths import display, normalize_mount_point, strip_mount_point
from ._results import WriteMode
from ._walk import Walk

SEARCH_BLOCK = 1 << 20
"""Bytes a search reads per lock hold."""


def _kind(node: Node) -> Kind:
    if isinstance(node, File):
        return Kind.FILE
    if isinstance(node, Directory):
        return Kind.DIRECTORY
    if isinstance(node, Symlink):
        return Kind.SYMLINK
    return Kind.OTHER


class TreeBackend:
    """``Backend`` primitives on a ``TreeView``; writes need the live ``Tree``.

    With ``rules``, what a hidden rule covers is not there for the cause in effect:
    not found, not listed (the rules' other modes the tree enforces itself).
    """

    def __init__(
        self, view: TreeView, *, mount_point: str | None = None, rules: AccessRules | None = None
    ) -> None:
        self._view = view
        self._rules = rules
        self._tree = view if isinstance(view, Tree) else None
        self._mount_point = mount_point
        self._lock: AbstractContextManager[object] = (
            self._tree.lock if self._tree is not None else contextlib.nullcontext()
        )
        self._owner = (os.getuid(), os.getgid())

    def _live(self) -> Tree:
        assert self._tree is not None, "the frontend refuses writes to frozen versions"
        return self._tree

    def root(self) -> Handle:
        return ROOT_INO

    def release(self, handle: Handle) -> None:
        pass

    def lookup_all(self, directory: Handle, names: Iterable[str]) -> list[Entry | None]:
        lookup = self.lookup
        return [lookup(directory, name) for name in names]

    def enter_path(self, path: str) -> Handle | None:
        return None  # a lookup is a dict's: the walk is as quick, and applies the rules

    def _hidden(self, directory: Handle, name: str) -> bool:
        rules = self._rules
        return rules is not None and rules.hides and rules.hidden(self._view, directory, name)

    def lookup(self, directory: Handle, name: str) -> Entry | None:
        ino = self._view.find(directory, name)
        if ino is None:
            return None
        rules = self._rules  # inline: every resolution asks, and most workspaces hide nothing
        if (
            rules is not None
            and rules.hides
            and name not in (".", "..")
            and rules.hidden(self._view, directory, name)
        ):
            return None
        node = self._view.node(ino)
        return Entry(_kind(node), (0, ino), node.size, node.mode, node.mtime_ns, node.crtime_ns)

    def enter(self, directory: Handle, name: str, entry: Entry) -> Handle:
        return entry.key[1]

    def scan(self, directory: Handle) -> list[tuple[str, Kind]]:
        view = self._view
        found = [(name, _kind(view.node(ino))) for name, ino in view.readdir(directory)]
        rules = self._rules
        if rules is not None and rules.hides:
            found = [item for item in found if not rules.hidden(view, directory, item[0])]
        return found

    def scan_child(
        self, directory: Handle, name: str
    ) -> tuple[Handle, tuple[int, int], list[tuple[str, Kind]]]:
        ino = self._view.find(directory, name)
        if ino is not None and self._hidden(directory, name):
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", name)
        if ino is None or not isinstance(self._view.node(ino), Directory):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", name)
        return ino, (0, ino), self.scan(ino)

    def readlink(self, directory: Handle, name: str) -> str:
        return self._view.readlink(self._view.lookup(directory, name))

    def link_target(self, target: str) -> str:
        return strip_mount_point(target, self._mount_point)

    def read(self, directory: Handle, name: str, entry: Entry, offset: int, size: int) -> bytes:
        return self._view.read(entry.key[1], offset, size)

    def read_blocks(self, directory: Handle, name: str, entry: Entry | None) -> Iterator[bytes]:
        if entry is not None:
            return self._blocks(entry.key[1])
        ino = self._view.find(directory, name)
        if ino is not None and self._hidden(directory, name):
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", name)
        if ino is None or not isinstance(self._view.node(ino), File):
            raise OSError(errno.EINVAL, "not a regular file", name)
        return self._blocks(ino)

    def _blocks(self, ino: int) -> Iterator[bytes]:
        offset = 0
        while True:
            with self._lock:  # per block: writers and the mount go on meanwhile
                node = self._view.get(ino)
                if not isinstance(node, File):
                    return
                block = node.read(offset, SEARCH_BLOCK)
            if not block:
                return
            offset += len(block)
            yield block

    def write(
        self, directory: Handle, name: str, entry: Entry | None, data: bytes, mode: WriteMode
    ) -> None:
        tree = self._live()
        if entry is None:
            tree.budget.reserve(len(data))  # ENOSPC before the file exists
            tree.check_new(directory, name, "create", len(data))  # and a rule's refusal
            ino = tree.create(directory, name, 0o644, *self._owner)
            tree.write(ino, 0, data)
            return
        ino = entry.key[1]
        if mode == "overwrite":
            tree.replace(ino, data)
        else:
            tree.write(ino, tree.node(ino).size, data)

    def mkdir(self, directory: Handle, name: str) -> None:
        self._live().mkdir(directory, name, 0o755, *self._owner)

    def unlink(self, directory: Handle, name: str) -> None:
        self._live().unlink(directory, name)

    def rename(
        self, directory: Handle, name: str, into: Handle, target_name: str, replace: bool
    ) -> None:
        flags = 0 if replace else RENAME_NOREPLACE
        self._live().rename(directory, name, into, target_name, flags)

    def remove_tree(self, directory: Handle, name: str) -> None:
        tree = self._live()
        tree.empty(tree.lookup(directory, name))
        tree.rmdir(directory, name)

    def reading(self) -> AbstractContextManager[object]:
        return self._lock

    def mutating(self) -> AbstractContextManager[object]:
        return self._lock


class TreeFilesystem(BackendFilesystem):
    """The protocol over one tree view; writable only over the live tree."""

    def __init__(
        self,
        view: TreeView,
        *,
        read_only: bool = False,
        mount_point: str | None = None,
        limits: Limits = DEFAULT_LIMITS,
        rules: AccessRules | None = None,
    ) -> None:
        mount_point = normalize_mount_point(mount_point)
        super().__init__(
            TreeBackend(view, mount_point=mount_point, rules=rules),
            read_only=read_only or not isinstance(view, Tree),
            mount_point=mount_point,
            limits=limits,
        )
        self._view = view
        self._rules = rules

    @property
    def root(self) -> str:
        """Always "/": the tree is virtual."""
        return "/"

    def _walk(self) -> Walk:
        """A walk over the live tree goes over a freeze of it (O(1)), so a long listing,
        glob or grep takes no lock per directory or block and sees one state. Taking it
        per block, the walker took it back at once each time, and a writer waiting for
        it (the mount) waited for many: create+write+close p99 was 19 ms on a mount
        while a client grepped 5,000 files through the daemon."""
        view = self._view
        if not isinstance(view, Tree) or view.unlisted:
            # Directories not listed yet (a large load from git) would all be listed by
            # a freeze: the walk lists those it reaches, under the lock as it goes.
            return super()._walk()
        with view.lock:
            frozen = TreeBackend(view.snapshot(), mount_point=self.mount_point, rules=self._rules)
        return Walk(frozen, functools.partial(resolved, frozen))

    def _may_create(self, norm: str, action: str, size: int) -> None:
        """With access rules in force and a parent of ``norm`` missing, refuse here
        what the rules would refuse of ``norm`` once its parents were made (by its
        path: through a symlink, it may be refused where the tree would not)."""
        view, rules = self._view, self._rules
        if rules is None or not isinstance(view, Tree) or view.guard is None:
            return
        parent = view.resolve_path(norm.rpartition("/")[0])
        if parent is None or not isinstance(view.get(parent), Directory):
            rules.check_new(norm, action, size)

    @property
    def rules(self) -> AccessRules | None:
        """The access rules this filesystem shows its tree under (None: none); an
        ``InMemoryFilesystem``'s are its own (see ``AccessRules``), a snapshot
        view's those of the workspace it came from (only hidden paths matter there)."""
        return self._rules

    @property
    def view(self) -> TreeView:
        """The tree this filesystem shows: the live ``Tree`` or a frozen ``Version``."""
        return self._view

    def export_archive(self, path: str | os.PathLike[str]) -> int:
        """Write this filesystem as a workspace archive at ``path`` (parents made);
        the file count. See ``workspacefs.archive.export_archive``."""
        return archive_verbs().export_archive(self, path)

    def import_archive(self, path: str | os.PathLike[str], *, limits: object = None) -> int:
        """Replace this filesystem's content with the archive at ``path``; the file count.

        ``limits`` is an ``archive.ArchiveLimits`` (None: the defaults). See
        ``workspacefs.archive.import_archive``.

        Raises:
            ReadOnlyError: The filesystem is read-only, or a snapshot view.
        """
        return archive_verbs().import_archive(self, path, limits=limits)

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Tell ``subscriber`` what every change to the live tree touched; returns the
        unsubscribe function.

        Subscribers run in the changing thread after the tree lock is released,
        which is where the FUSE layer may safely invalidate kernel caches. A
        frozen version never changes, so subscribing to one does nothing.
        """
        if isinstance(self._view, Tree):
            return self._view.lock.subscribe(subscriber)
        return lambda: None

    def entries(
        self, path: str = ".", *, after: str = "", limit: int = MAX_ENTRIES, recursive: bool = True
    ) -> list[TreeEntry]:
        """A page of the listing below the directory ``path``: at most ``limit`` entries,
        links not followed, depth first in git's order from after the key ``after``
        (``tree_entries``; pass the last entry's ``tree_key`` for the next page).

        The live tree is frozen first (O(1)), so one page is one consistent state.

        Raises:
            FileNotFoundError: Nothing is at ``path``.
            NotADirectoryError: ``path`` is no directory.
            ValueError: ``limit`` is below 1 or over ``MAX_ENTRIES``.
        """
        if limit < 1:
            raise InvalidArgumentError("limit must be at least 1", display(path))
        self.limits.check("entries limit", limit, MAX_ENTRIES)
        norm = self._normalize(path)
        view = self._view
        if isinstance(view, Tree):
            with view.lock:
                if view.unlisted:  # listed as reached, rather than all by a freeze
                    found = tree_entries(view, norm, after=after, recursive=recursive)
                    return list(itertools.islice(found, limit))
                view = view.snapshot()
        hidden = None if self._rules is None else self._rules.hidden_filter()
        if hidden is not None and norm and hidden(norm):
            raise NotFoundError("no such file or directory", display(norm))
        found = tree_entries(view, norm, after=after, recursive=recursive, hidden=hidden)
        return list(itertools.islice(found, limit))
