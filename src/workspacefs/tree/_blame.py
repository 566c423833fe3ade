"""Path-level changes with their causes, between two views of one tree.

The diff (``_diff``) says which paths differ; the steps of history between
the two views say which causes changed which inodes (``causes_between``).
A path's causes are those of the inode it names (on the side where it
exists, the newer first), or, when that inode itself did not change (a
directory above it was renamed or replaced), those of the nearest directory
on its way that did. Both cost O(depth) per path, so attributing a diff
stays O(changes), and one path's history costs O(depth) per version.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Iterator, Set
from dataclasses import dataclass
from typing import Literal, Protocol

from ._causes import Cause
from ._diff import PART, DiffSide, diff_versions, same_entry
from ._nodes import Directory
from ._table import Table, put
from ._turns import make_way
from ._view import ROOT_INO, TreeView

ChangeKind = Literal["added", "modified", "deleted"]


class Causes(Protocol):
    """Who changed an inode, by inode (a ``Span``, or a plain dict)."""

    def get(self, ino: int, /) -> tuple[Cause, ...] | None: ...


@dataclass(frozen=True, slots=True)
class PathChange:
    """One non-directory path that differs, how, and who changed it.

    ``causes`` is empty when no cause was in effect (an unattributed API
    call, or a version older than attribution).
    """

    path: str
    kind: ChangeKind
    causes: tuple[Cause, ...]


@functools.cache
def empty_view() -> TreeView:
    """A tree holding only an empty root: the state before the first change."""
    return TreeView(put(Table(0, []), ROOT_INO, Directory(0, 0o755, 0, 0, 0), 0))


def attributed_changes(
    base: TreeView | DiffSide, target: TreeView | DiffSide, changed: Iterable[int], causes: Causes
) -> Iterator[tuple[ChangeKind, str, tuple[Cause, ...]]]:
    """``(kind, path, causes)`` for every path that differs from ``base`` to ``target``:
    the added ones, then the modified, then the deleted, each kind's paths sorted.
    ``changed`` and ``causes`` come from the steps between them. (A caller diffing the
    same two views in parts passes each as a ``DiffSide``, which keeps what it found.)
    For readers of many paths at a time (the change feed): no object per path."""
    changed = changed if isinstance(changed, Set) else set(changed)
    if not changed:  # nothing may differ: no sides to set up
        return
    before = base if isinstance(base, DiffSide) else DiffSide(base)
    after = target if isinstance(target, DiffSide) else DiffSide(target)
    paths = diff_versions(before, after, changed)
    groups: tuple[tuple[ChangeKind, tuple[str, ...]], ...] = (
        ("added", paths.added),
        ("modified", paths.modified),
        ("deleted", paths.deleted),
    )
    for kind, group in groups:
        for count, path in enumerate(group, 1):
            if not count % PART:
                make_way()
            yield kind, path, _path_causes(before, after, path, causes)


def attributed_diff(
    base: TreeView | DiffSide, target: TreeView | DiffSide, changed: Iterable[int], causes: Causes
) -> list[PathChange]:
    """Every path that differs from ``base`` to ``target``, sorted, with its causes;
    see ``attributed_changes``."""
    found = [
        PathChange(path, kind, who)
        for kind, path, who in attributed_changes(base, target, changed, causes)
    ]
    found.sort(key=_by_path)
    return found


_by_path = operator.attrgetter("path")


def path_change(base: TreeView, target: TreeView, path: str, causes: Causes) -> PathChange | None:
    """How ``path`` changed from ``base`` to ``target`` (None: it did not), as ``diff``
    would say, with its causes."""
    before, after = DiffSide(base), DiffSide(target)
    old, new = before.leaf(path), after.leaf(path)
    kind: ChangeKind
    if old is None and new is None:
        return None
    if old is None:
        kind = "added"
    elif new is None:
        kind = "deleted"
    elif same_entry(old, new):
        return None
    else:
        kind = "modified"
    return PathChange(path, kind, _path_causes(before, after, path, causes))


def path_causes(base: TreeView, target: TreeView, path: str, causes: Causes) -> tuple[Cause, ...]:
    """The causes of ``path``'s change (see the module docstring)."""
    return _path_causes(DiffSide(base), DiffSide(target), path, causes)


def _path_causes(base: DiffSide, target: DiffSide, path: str, causes: Causes) -> tuple[Cause, ...]:
    for side in (target, base):
        ino = side.inode(path)
        if ino is not None:  # the path exists on this side: its own inode first
            found = causes.get(ino)
            if found:
                return found
    full = path.count("/") + 2  # the root and one inode per name
    chains = [target.chain(path), base.chain(path)]
    for chain in chains:
        # The directories on the way, deepest first. Not the root: every change at
        # the top level changes it.
        for ino in reversed(chain[1 : full - 1]):
            found = causes.get(ino)
            if found:
                return found
    return ()
