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
"""

from __future__ import annotations

import stat as _stat
from collections.abc import Iterable
from dataclasses import dataclass

from ._nodes import Directory, File, Node, Special, Symlink
from ._view import TreeView


@dataclass(frozen=True, slots=True)
class PathDiff:
    """Non-directory paths added, modified and deleted from ``base`` to ``target``."""

    added: tuple[str, ...]
    modified: tuple[str, ...]
    deleted: tuple[str, ...]


def diff_versions(base: TreeView, target: TreeView, changed: Iterable[int]) -> PathDiff:
    """Compare two views of one tree given the inodes that may differ."""
    candidates: set[str] = set()
    for ino in changed:
        before, after = base.get(ino), target.get(ino)
        if isinstance(before, Directory) or isinstance(after, Directory):
            _entry_candidates(base, target, ino, before, after, candidates)
        for view, node in ((base, before), (target, after)):
            if node is not None and not isinstance(node, Directory):
                candidates.update(view.paths(ino))
    added, modified, deleted = [], [], []
    for path in candidates:
        old = _resolve(base, path)
        new = _resolve(target, path)
        if old is None and new is not None:
            added.append(path)
        elif new is None and old is not None:
            deleted.append(path)
        elif old is not None and new is not None and not same_entry(old, new):
            modified.append(path)
    return PathDiff(tuple(sorted(added)), tuple(sorted(modified)), tuple(sorted(deleted)))


def _entry_candidates(
    base: TreeView,
    target: TreeView,
    ino: int,
    before: Node | None,
    after: Node | None,
    out: set[str],
) -> None:
    old_entries = before.entries if isinstance(before, Directory) else {}
    new_entries = after.entries if isinstance(after, Directory) else {}
    if old_entries is new_entries:
        return
    differing = {name for name, _ in old_entries.items() ^ new_entries.items()}
    for view, entries in ((base, old_entries), (target, new_entries)):
        names = [name for name in differing if name in entries]
        if not names:
            continue
        for prefix in view.paths(ino):
            for name in names:
                path = f"{prefix}/{name}" if prefix else name
                child = entries[name]
                if isinstance(view.get(child), Directory):
                    out.update(p for p, _, node in view.walk(child, path) if not _is_dir(node))
                else:
                    out.add(path)


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


def _resolve(view: TreeView, path: str) -> Node | None:
    ino = view.resolve_path(path)
    if ino is None:
        return None
    node = view.get(ino)
    return None if node is None or isinstance(node, Directory) else node


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
