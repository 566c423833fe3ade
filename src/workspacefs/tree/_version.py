"""``Version``: a frozen state of a tree, as ``Tree.snapshot`` returns it.

A version is a table root (shared, never changed again) and its place in
history (``Lineage``). Versions of one family of forks register in a weak
registry, so space accounting finds every version still alive, wherever it
is held.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator

from ._lineage import Lineage
from ._registry import WeakRegistry
from ._table import Table
from ._view import TreeView


class Version(TreeView):
    """A frozen version of a tree: never changes after it is taken."""

    __slots__ = (
        "__weakref__",
        "_family",
        "file_count",
        "lineage",
        "number",
        "total_bytes",
        "tree_id",
    )

    def __init__(
        self,
        table: Table,
        lineage: Lineage,
        *,
        tree_id: int,
        number: int,
        file_count: int,
        total_bytes: int,
        family: WeakRegistry[Version] | None = None,
    ) -> None:
        super().__init__(table)
        self.lineage = lineage
        self.tree_id = tree_id
        self.number = number
        self.file_count = file_count
        self.total_bytes = total_bytes
        self._family = family
        if family is not None:
            family.add(self)

    def alias(self) -> Version:
        """The same frozen state as another object, known to space accounting as
        its own holder.

        Space accounting tells holders apart by their version objects: a layer
        that keeps a snapshot's version beyond a call (a view, the git
        persistence state) keeps an alias, so that deleting the snapshot shows
        as freeing nothing while the alias lives. O(1).
        """
        return Version(
            self._table,
            self.lineage,
            tree_id=self.tree_id,
            number=self.number,
            file_count=self.file_count,
            total_bytes=self.total_bytes,
            family=self._family,
        )

    @property
    def history_key(self) -> Hashable:
        """Names this version's place in its tree's history (opaque, hashable):
        for layers that remember what they did with a version, e.g. the git
        commit it was persisted as."""
        return self.lineage

    def ancestor_keys(self) -> Iterator[Hashable]:
        """The history keys of the versions this one descends from, nearest first."""
        current = self.lineage.parent
        while current is not None:
            yield current
            current = current.parent
