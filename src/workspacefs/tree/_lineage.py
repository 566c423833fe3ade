"""Change sets: which inodes each epoch touched, and how versions descend.

Every version links to the version it was taken from, with the set of inodes
created, changed or dropped in between. The lineage is kept apart from the
tables themselves so that pruning a version frees its data while diffs across
it still work: walking from two versions to their common ancestor and uniting
the sets on the way gives every inode that may differ, in O(changes).

Each step also keeps who made its changes (``causes``: inode -> the causes
of its changes in that step), so attribution lives and dies with history:
a restored or forked version brings it back, pruning data keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from ._causes import Cause

StepCauses = Mapping[int, "Cause | tuple[Cause, ...]"]
"""Inode -> the causes of its changes in one step, oldest first: one cause as itself,
several as a tuple (most inodes have one, and a tuple each would be an object more
for the garbage collector per changed inode)."""

NO_CAUSES: StepCauses = {}


class Lineage:
    """One step of history: ``changes`` since ``parent`` (None for the first), and
    the ``causes`` of the changes, by inode."""

    __slots__ = ("causes", "changes", "depth", "parent")

    def __init__(
        self,
        parent: Lineage | None,
        changes: Set[int],
        causes: StepCauses = NO_CAUSES,
    ) -> None:
        self.parent = parent
        self.changes = changes
        self.causes = causes
        self.depth: int = 0 if parent is None else parent.depth + 1


def _steps_apart(a: Lineage, b: Lineage) -> tuple[list[Lineage], list[Lineage]]:
    """The steps from ``a`` up to its common ancestor with ``b``, and those from ``b``,
    each newest first: every step whose changes may make the two versions differ."""
    ours: list[Lineage] = []
    theirs: list[Lineage] = []
    x: Lineage | None = a
    y: Lineage | None = b
    while x is not y:
        assert x is not None, "lineages of different trees"
        assert y is not None, "lineages of different trees"
        if x.depth >= y.depth:
            ours.append(x)
            x = x.parent
        else:
            theirs.append(y)
            y = y.parent
    return ours, theirs


def changes_between(a: Lineage, b: Lineage) -> set[int]:
    """Every inode that may differ between the versions at ``a`` and ``b``."""
    ours, theirs = _steps_apart(a, b)
    return _united(ours + theirs)


def diverged(a: Lineage, b: Lineage) -> tuple[set[int], set[int]]:
    """(inodes changed on ``a``'s side, on ``b``'s side) since their common ancestor."""
    ours, theirs = _steps_apart(a, b)
    return _united(ours), _united(theirs)


def _united(steps: list[Lineage]) -> set[int]:
    changed: set[int] = set()
    for step in steps:
        changed |= step.changes
    return changed


class Span:
    """The steps of history between the versions at ``a`` and ``b`` (those
    ``changes_between`` unites): what may differ, and who changed it.

    Built in O(steps); ``get`` looks one inode up in O(steps), so attributing a
    few paths never merges every step's causes.
    """

    __slots__ = ("_steps",)

    def __init__(self, a: Lineage, b: Lineage) -> None:
        ours, theirs = _steps_apart(a, b)
        self._steps = sorted(ours + theirs, key=lambda step: step.depth)

    def changed(self) -> set[int]:
        """Every inode that may differ."""
        return _united(self._steps)

    def get(self, ino: int) -> tuple[Cause, ...] | None:
        """The causes of ``ino``'s changes in these steps, oldest first (None: none
        recorded)."""
        found: tuple[Cause, ...] | None = None
        for step in self._steps:
            causes = step.causes.get(ino)
            if causes is None:
                continue
            if isinstance(causes, Cause):
                causes = (causes,)
            found = causes if found is None else joined(found, causes)
        return found


MAX_CAUSES = 8
"""The most distinct causes kept per inode and step (the latest ones)."""


def joined(older: tuple[Cause, ...], newer: tuple[Cause, ...]) -> tuple[Cause, ...]:
    """``older`` then ``newer``, each cause once (at its latest place), the last
    ``MAX_CAUSES``."""
    merged = [cause for cause in older if cause not in newer] + list(newer)
    return tuple(merged[-MAX_CAUSES:])
