"""Path-level diff of two views in O(changes).

The change sets name every inode that may differ. From them we gather a set
of candidate paths that is sure to contain every path whose state differs:

* a changed file or symlink contributes each path naming it, on both sides;
* a changed directory contributes, for each entry that differs between the
  two sides, every path of the subtree under that entry, on both sides.

Why this suffices: if a path resolves differently on the two sides, either
the walk reaches the same final node (then that node changed) or it first
diverges at some directory whose entry differs (then that directory changed).
Each candidate is then resolved on both sides and classified.

A diff names many paths in few directories, so each side (``DiffSide``) keeps
the directories it has found, by inode and by path: a path is then one
lookup in its directory, not a walk from the root (or up to it). A directory
that exists on one side only is not walked from its parent when it is among
the changed inodes itself: its own entries, all different, name what is in
it (a renamed directory, on both sides, still is: its files did not change).
Most differing entries need no candidate at all: where a changed directory's
path leads to it on each side that has it, an entry that is no directory on
either side is classified from the two directories' entries at once
(``_in_place``), which halves what the change feed spends a path.

A diff is a long reader: every ``PART`` items it makes way for a busy mount
(``make_way``).
"""

from __future__ import annotations

import stat as _stat
from collections.abc import Iterable, Set
from dataclasses import dataclass

from ._nodes import Directory, File, Node, Special, Symlink
from ._turns import make_way
from ._version import Version
from ._view import ROOT_INO, TreeView

PART = 32
"""Inodes or paths a diff handles between two looks at whether a mount is busy: about
50 us of work. A mount's request that comes meanwhile waits for the GIL until then
(or the switch interval, 0.5 ms in the daemon, is up): with 256 (0.4 ms), a request
and its answer took 2.5 times as long while a diff ran, with 32 about 1.2 times."""


@dataclass(frozen=True, slots=True)
class PathDiff:
    """Non-directory paths added, modified and deleted from ``base`` to ``target``."""

    added: tuple[str, ...]
    modified: tuple[str, ...]
    deleted: tuple[str, ...]


class DiffSide:
    """One view of a comparison, with what it has found kept: directories' paths by
    inode, and by path the inodes from the root (as far as the path resolves) and the
    directory or node at the end.

    Only for the span of one comparison: it holds a frozen view, or the live tree
    under its lock.
    """

    __slots__ = ("_dirs", "_get", "_leaves", "_paths", "view")

    def __init__(self, view: TreeView) -> None:
        self.view = view
        # A frozen view's table never changes: its lookup is bound once (one call a
        # node, not two); the live tree's table is replaced as it is written.
        frozen = type(view) is TreeView or isinstance(view, Version)
        self._get = view._table.get if frozen else view.get
        root = view.get(ROOT_INO)
        self._paths: dict[int, str | None] = {ROOT_INO: ""}
        # path -> (chain, the directory there if the path is one)
        self._dirs: dict[str, tuple[tuple[int, ...], Directory | None]] = {
            "": ((ROOT_INO,), root if isinstance(root, Directory) else None)
        }
        # path -> (the chain of its directory, the inode and node there if it resolves)
        self._leaves: dict[str, tuple[tuple[int, ...], int | None, Node | None]] = {}

    def directory_path(self, ino: int) -> str | None:
        """The path of directory ``ino`` (None: unreachable); see ``TreeView.paths``."""
        if ino in self._paths:
            return self._paths[ino]
        # Up to a directory already known, then its path down (a loop: trees may be
        # deeper than Python's stack).
        climbed: list[tuple[int, str]] = []
        current = ino
        while current not in self._paths:
            node = self._get(current)
            if node is None or not node.links:
                self._paths[current] = None
                break
            parent, name = node.links[0]
            climbed.append((current, name))
            current = parent
        prefix = self._paths[current]
        for child, name in reversed(climbed):
            if prefix is not None:
                prefix = f"{prefix}/{name}" if prefix else name
            self._paths[child] = prefix
        return self._paths[ino]

    def paths(self, ino: int, node: Node) -> list[str]:
        """Every path naming ``node`` (at ``ino``): one per link."""
        found = []
        for parent, name in node.links:
            prefix = self.directory_path(parent)
            if prefix is not None:
                found.append(f"{prefix}/{name}" if prefix else name)
        return found

    def chain(self, path: str) -> tuple[int, ...]:
        """The inodes from the root along ``path`` as far as it resolves (links not
        followed): one more than its names when it does."""
        chain, ino, _ = self._leaf(path)
        return chain if ino is None else (*chain, ino)

    def inode(self, path: str) -> int | None:
        """The inode at ``path`` (None: it does not resolve)."""
        return self._leaf(path)[1]

    def leaf(self, path: str) -> Node | None:
        """The node at ``path`` unless it is missing or a directory."""
        node = self._leaf(path)[2]
        return None if isinstance(node, Directory) else node

    def _leaf(self, path: str) -> tuple[tuple[int, ...], int | None, Node | None]:
        found = self._leaves.get(path)
        if found is None:
            parent, _, name = path.rpartition("/")
            chain, directory = self._dirs.get(parent) or self._directory(parent)
            child = None if directory is None else directory.entries.get(name)
            found = (chain, child, None if child is None else self._get(child))
            self._leaves[path] = found
        return found

    def _directory(self, path: str) -> tuple[tuple[int, ...], Directory | None]:
        missing = []  # the prefixes not known yet, deepest first
        known = path
        while known not in self._dirs:
            missing.append(known)
            known = known.rpartition("/")[0]
        chain, directory = self._dirs[known]
        for prefix in reversed(missing):
            child = None if directory is None else directory.entries.get(prefix.rpartition("/")[2])
            if child is None:
                directory = None
            else:
                chain = (*chain, child)
                node = self._get(child)
                directory = node if isinstance(node, Directory) else None
            self._dirs[prefix] = (chain, directory)
        return chain, directory


def diff_versions(
    base: TreeView | DiffSide, target: TreeView | DiffSide, changed: Iterable[int]
) -> PathDiff:
    """Compare two views of one tree given the inodes that may differ."""
    every = changed if isinstance(changed, Set) else set(changed)
    if not every:  # nothing may differ (a snapshot just after another): no sides to set up
        return PathDiff((), (), ())
    before_side = base if isinstance(base, DiffSide) else DiffSide(base)
    after_side = target if isinstance(target, DiffSide) else DiffSide(target)
    candidates: set[str] = set()
    found = _Found()
    get_before, get_after = before_side._get, after_side._get
    for count, ino in enumerate(every, 1):
        if not count % PART:
            make_way()
        before, after = get_before(ino), get_after(ino)
        if before is after:
            continue  # the same node: neither view changed it since they parted
        before_dir, after_dir = isinstance(before, Directory), isinstance(after, Directory)
        if before_dir or after_dir:
            _entry_candidates(before_side, after_side, ino, before, after, every, candidates, found)
        # A node only one side has is named by its links' entries, which differ in
        # their directories (changed too): those name its paths already.
        if before is not None and not before_dir and after is not None:
            candidates.update(before_side.paths(ino, before))
        if after is not None and not after_dir and before is not None:
            candidates.update(after_side.paths(ino, after))
    if found.decided:
        candidates -= found.decided
    leaf_before, leaf_after = before_side.leaf, after_side.leaf
    for count, path in enumerate(candidates, 1):
        if not count % PART:
            make_way()
        found.classify(path, leaf_before(path), leaf_after(path))
    return found.diff()


class _Found:
    """The paths a diff has classified, by how, and the set of those it classified
    before the candidates were resolved (``_in_place``)."""

    __slots__ = ("added", "decided", "deleted", "modified")

    def __init__(self) -> None:
        self.added: list[str] = []
        self.modified: list[str] = []
        self.deleted: list[str] = []
        self.decided: set[str] = set()

    def classify(self, path: str, old: Node | None, new: Node | None) -> None:
        """File ``path`` as ``old`` and ``new`` (None: missing, or a directory) differ."""
        if old is None:
            if new is not None:
                self.added.append(path)
        elif new is None:
            self.deleted.append(path)
        elif not same_entry(old, new):
            self.modified.append(path)

    def diff(self) -> PathDiff:
        for paths in (self.added, self.modified, self.deleted):
            paths.sort()
        return PathDiff(tuple(self.added), tuple(self.modified), tuple(self.deleted))


def _entry_candidates(
    base: DiffSide,
    target: DiffSide,
    ino: int,
    before: Node | None,
    after: Node | None,
    changed: Set[int],
    out: set[str],
    found: _Found,
) -> None:
    old_entries = before.entries if isinstance(before, Directory) else {}
    new_entries = after.entries if isinstance(after, Directory) else {}
    if old_entries is new_entries:
        return
    differing = {name for name, _ in old_entries.items() ^ new_entries.items()}
    differing = _in_place(base, target, ino, before, after, differing, found)
    sides = ((base, target, before, old_entries), (target, base, after, new_entries))
    for side, other, node, entries in sides:
        names = [name for name in differing if name in entries]
        if not names or node is None:
            continue
        get = side._get
        prefixes = [""] if ino == ROOT_INO else side.paths(ino, node)
        for prefix in prefixes:
            for name in names:
                path = f"{prefix}/{name}" if prefix else name
                child = entries[name]
                if not isinstance(get(child), Directory):
                    out.add(path)
                elif child not in changed or other._get(child) is not None:
                    walked = side.view.walk(child, path)
                    out.update(p for p, _, node in walked if not _is_dir(node))
                # else: a directory only this side has, whose own entries name its files


def _in_place(
    base: DiffSide,
    target: DiffSide,
    ino: int,
    before: Node | None,
    after: Node | None,
    names: set[str],
    found: _Found,
) -> set[str]:
    """Classify the differing entries ``names`` of directory ``ino`` straight from the
    directories its path leads to on each side (a path is then known on both sides
    without resolving it again, causes included), where that path leads to it on
    each side that has it; the names left for the candidates: those a directory
    holds on either side, or all where the path does not lead to it (a directory
    moved)."""
    before_dir, after_dir = isinstance(before, Directory), isinstance(after, Directory)
    if ino == ROOT_INO:
        prefix: str | None = ""
    else:
        prefix = (base if before_dir else target).directory_path(ino)
    if prefix is None:
        return names
    old_chain, old_directory = base._dirs.get(prefix) or base._directory(prefix)
    new_chain, new_directory = target._dirs.get(prefix) or target._directory(prefix)
    if (before_dir and old_directory is not before) or (after_dir and new_directory is not after):
        return names
    left = set()
    old_entries = {} if old_directory is None else old_directory.entries
    new_entries = {} if new_directory is None else new_directory.entries
    get_old, get_new = base._get, target._get
    old_leaves, new_leaves = base._leaves, target._leaves
    decided = found.decided
    for count, name in enumerate(names, 1):
        if not count % PART:
            make_way()
        old_child, new_child = old_entries.get(name), new_entries.get(name)
        old = None if old_child is None else get_old(old_child)
        new = None if new_child is None else get_new(new_child)
        if isinstance(old, Directory) or isinstance(new, Directory):
            left.add(name)
            continue
        path = f"{prefix}/{name}" if prefix else name
        if path in decided:
            continue  # the directory the other side has there named it already
        old_leaves[path] = (old_chain, old_child, old)
        new_leaves[path] = (new_chain, new_child, new)
        decided.add(path)
        found.classify(path, old, new)
    return left


def changed_entries(
    before: TreeView, after: TreeView, changed: Iterable[int]
) -> set[tuple[int, str]]:
    """(directory, name) pairs bound differently in ``after`` than in ``before``."""
    entries: set[tuple[int, str]] = set()
    for ino in changed:
        old, new = before.get(ino), after.get(ino)
        old_entries = old.entries if isinstance(old, Directory) else {}
        new_entries = new.entries if isinstance(new, Directory) else {}
        if old_entries is not new_entries:
            entries.update((ino, name) for name, _ in old_entries.items() ^ new_entries.items())
    return entries


def _is_dir(node: Node) -> bool:
    return isinstance(node, Directory)


def same_entry(a: Node, b: Node) -> bool:
    """True if two non-directory nodes would check out identically."""
    if a is b:
        return True
    if _stat.S_IFMT(a.mode) != _stat.S_IFMT(b.mode) or a.mode != b.mode:
        return False
    if isinstance(a, File) and isinstance(b, File):
        return a.same_data(b)
    if isinstance(a, Symlink) and isinstance(b, Symlink):
        return a.target == b.target
    if isinstance(a, Special) and isinstance(b, Special):
        return a.rdev == b.rdev
    return False
