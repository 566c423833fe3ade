"""Change sets: which inodes each epoch touched, and how versions descend.

Every version links to the version it was taken from, with the set of inodes
created, changed or dropped in between. The lineage is kept apart from the
tables themselves so that pruning a version frees its data while diffs across
it still work: walking from two versions to their common ancestor and uniting
the sets on the way gives every inode that may differ, in O(changes).
"""

from __future__ import annotations

from collections.abc import Set


class Lineage:
    """One step of history: ``changes`` since ``parent`` (None for the first)."""

    __slots__ = ("changes", "depth", "parent")

    def __init__(self, parent: Lineage | None, changes: Set[int]) -> None:
        self.parent = parent
        self.changes = changes
        self.depth: int = 0 if parent is None else parent.depth + 1


def changes_between(a: Lineage, b: Lineage) -> set[int]:
    """Every inode that may differ between the versions at ``a`` and ``b``."""
    changed: set[int] = set()
    x: Lineage | None = a
    y: Lineage | None = b
    while x is not y:
        assert x is not None, "lineages of different trees"
        assert y is not None, "lineages of different trees"
        if x.depth >= y.depth:
            changed |= x.changes
            x = x.parent
        else:
            changed |= y.changes
            y = y.parent
    return changed


def diverged(a: Lineage, b: Lineage) -> tuple[set[int], set[int]]:
    """(inodes changed on ``a``'s side, on ``b``'s side) since their common ancestor."""
    ours: set[int] = set()
    theirs: set[int] = set()
    x: Lineage | None = a
    y: Lineage | None = b
    while x is not y:
        assert x is not None, "lineages of different trees"
        assert y is not None, "lineages of different trees"
        if x.depth >= y.depth:
            ours |= x.changes
            x = x.parent
        else:
            theirs |= y.changes
            y = y.parent
    return ours, theirs
