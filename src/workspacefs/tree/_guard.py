"""What the live tree asks before a change when access rules are in force: ``Guard``.

Access rules (read-only and hidden paths, quotas; ``workspacefs.fs.AccessRules``)
are enforced here, below every door: the mount's handlers, the ``Filesystem``
protocol, the tools and every container on the mount change the tree through
the same few methods of ``Tree``, and each asks its guard first. A tree without
rules has no guard (``Tree.guard`` is None), so it pays one attribute test.

Each check runs under the tree lock, before anything changes: it either raises
(the rule's error, naming it, and records the denial) or returns what the
change will do to the quotas (``Pending``, None for nothing), which the tree
hands back to ``commit`` once the change is made. A change that fails for
another reason afterwards (the memory budget, a name taken) commits nothing.
"""

from __future__ import annotations

from typing import Protocol

from ._view import TreeView

Pending = object
"""A guard's note of what a checked change does to its quotas (None: nothing)."""


class Guard(Protocol):
    """The access rules of one live tree, asked before each of its changes.

    ``action`` names the change for the denial record (``write``, ``truncate``,
    ``chmod``, ``create``, ``mkdir``, ``unlink``, ``rename``, ...). Every check
    raises the rule's error (an ``OSError`` with its errno) if a rule refuses it.
    """

    def check_change(self, tree: TreeView, ino: int, action: str, grow: int) -> Pending | None:
        """``ino`` (under every name it has) is about to change, its size to grow by
        ``grow`` bytes (negative: shrink)."""
        ...

    def check_add(
        self, tree: TreeView, parent: int, name: str, action: str, size: int
    ) -> Pending | None:
        """The name ``parent/name`` is about to be made, for ``size`` bytes of file data."""
        ...

    def check_remove(
        self, tree: TreeView, parent: int, name: str, ino: int, action: str
    ) -> Pending | None:
        """The name ``parent/name`` of ``ino`` is about to be removed."""
        ...

    def check_move(
        self,
        tree: TreeView,
        old_parent: int,
        old_name: str,
        new_parent: int,
        new_name: str,
        exchange: bool,
    ) -> Pending | None:
        """``old_parent/old_name`` is about to be renamed to ``new_parent/new_name``
        (whatever is there replaced, or with ``exchange`` moved the other way)."""
        ...

    def commit(self, pending: Pending, scale: int) -> None:
        """The change a check returned ``pending`` for was made; ``scale`` is the
        bytes its size changed by for a ``check_change``, else 1."""
        ...

    def reset(self) -> None:
        """The live state was replaced wholesale (a restore, a replayed journal): what
        the guard counted of it is stale."""
        ...
