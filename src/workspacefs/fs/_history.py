"""A workspace's history of changes with their causes: ``changes``, ``history``, ``blame``.

History is read between *anchors*: versions the workspace still holds a
table of (its kept snapshots, its origin's if it is a fork, and the live
tree). Between two anchors, the path-level diff says what changed and the
lineage steps between them say who changed it (``tree.Span``); so a pruned
snapshot merges its changes into the next kept one, and nothing is lost but
the boundary. Before a version loaded from git, history continues with what
git recorded (``SnapshotChanges`` read back, see ``workspacefs.git``).

Every step costs O(changes) for ``changes`` and O(depth) per step for one
path's ``blame``.
"""

from __future__ import annotations

import bisect
import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .._errors import InvalidArgumentError
from ..tree import (
    Cause,
    ChangeKind,
    Lineage,
    PathChange,
    Span,
    Tree,
    TreeView,
    attributed_diff,
    empty_view,
    path_change,
)
from ._codec import to_json
from ._snapshots import FilesystemSnapshot

_KINDS: tuple[ChangeKind, ...] = ("added", "modified", "deleted")


def change_kind(value: object) -> ChangeKind:
    """``value`` as a ``ChangeKind``; InvalidArgumentError if it is none."""
    for kind in _KINDS:
        if value == kind:
            return kind
    raise InvalidArgumentError(f"unknown change kind {value!r}", None)


@dataclass(frozen=True, slots=True)
class SnapshotChanges:
    """What one snapshot changed, since the snapshot before it, and who changed it.

    Attributes:
        snapshot: The snapshot; None for the live workspace's changes that no
            snapshot holds yet.
        base: The snapshot the changes are counted from: the nearest earlier
            one on the same line of history still known (None: the empty
            workspace).
        changes: One entry per file or symlink that differs, sorted by path.
    """

    snapshot: FilesystemSnapshot | None
    base: FilesystemSnapshot | None
    changes: tuple[PathChange, ...]
    _paths: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_paths", tuple(change.path for change in self.changes))

    def change_of(self, path: str) -> PathChange | None:
        """How ``path`` (normalised) changed here, or None."""
        index = bisect.bisect_left(self._paths, path)
        if index < len(self._paths) and self._paths[index] == path:
            return self.changes[index]
        return None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``fs.to_json``)."""
        data: dict[str, Any] = to_json(self)
        return data


@dataclass(frozen=True, slots=True)
class BlameEntry:
    """One change to one path: in which snapshot, how, and who made it.

    Attributes:
        path: The path (normalised, relative to the root).
        snapshot: The snapshot that holds the change; None for a live change
            no snapshot holds yet.
        base: The snapshot before it the change is counted from (None: the
            empty workspace).
        kind: ``added``, ``modified`` or ``deleted``.
        causes: Who made it, oldest first (several if several changed the path
            between the two snapshots); empty if no cause was in effect.
    """

    path: str
    snapshot: FilesystemSnapshot | None
    base: FilesystemSnapshot | None
    kind: ChangeKind
    causes: tuple[Cause, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``fs.to_json``)."""
        data: dict[str, Any] = to_json(self)
        return data


@runtime_checkable
class AttributedFilesystem(Protocol):
    """A filesystem that knows who made each change: ``InMemoryFilesystem`` and
    ``RemoteFilesystem``. Backends that cannot attribute (``HostFilesystem``: a
    real directory anyone may write) do not implement it."""

    def blame(
        self, path: str, *, snapshot: FilesystemSnapshot | None = None
    ) -> Sequence[BlameEntry]:
        """Every change to the file at ``path``, newest first (see
        ``InMemoryFilesystem.blame``)."""
        ...

    def changes(self, snapshot: FilesystemSnapshot | None = None) -> SnapshotChanges:
        """What ``snapshot`` (None: the live workspace) changed, with causes."""
        ...


# -- the walk ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Anchor:
    """A state history can be read at: a record (None: the live tree), its table and
    its place in history. ``lock`` guards the live tree's reads."""

    record: FilesystemSnapshot | None
    view: TreeView
    lineage: Lineage
    lock: AbstractContextManager[object] = field(default_factory=contextlib.nullcontext)


@dataclass(frozen=True, slots=True)
class Recorded:
    """Where history continues from stored records: a version loaded from git, and
    its changes and the older ones as git holds them (newest first)."""

    anchor: Anchor
    changes: Iterable[SnapshotChanges]


@dataclass(frozen=True, slots=True)
class _Step:
    """The changes between two anchors, computed on demand."""

    target: Anchor
    base: Anchor | None  # None: the empty workspace
    root: Lineage

    def _span(self) -> Span:
        """The steps between the anchors (hold the target's lock). The live tree's
        place is read now: a snapshot taken since the walk began is then one step
        more, not changes lost."""
        view = self.target.view
        lineage = view.pending() if isinstance(view, Tree) else self.target.lineage
        return Span(self.base.lineage if self.base is not None else self.root, lineage)

    def _base_view(self) -> TreeView:
        return self.base.view if self.base is not None else empty_view()

    def _base_record(self) -> FilesystemSnapshot | None:
        return self.base.record if self.base is not None else None

    def change_of(self, path: str) -> PathChange | None:
        with self.target.lock:
            return path_change(self._base_view(), self.target.view, path, self._span())

    def changes(self) -> SnapshotChanges:
        with self.target.lock:
            span = self._span()
            found = attributed_diff(self._base_view(), self.target.view, span.changed(), span)
        return SnapshotChanges(self.target.record, self._base_record(), tuple(found))


Step = _Step | SnapshotChanges


def walk(
    start: Anchor, anchors: Mapping[Lineage, Anchor], recorded: Mapping[Lineage, Recorded]
) -> Iterator[Step]:
    """The steps of history from ``start`` back, newest first: computed ones between
    anchors, then recorded ones once a loaded version is reached."""
    point = start
    while True:
        found = recorded.get(point.lineage)
        if found is not None:
            yield from found.changes
            return
        last = point.lineage
        node = last.parent
        while node is not None and node not in anchors and node not in recorded:
            last, node = node, node.parent
        if node is None:  # ``last`` is the first step of the tree's history
            yield _Step(point, None, last)
            return
        base = anchors[node] if node in anchors else recorded[node].anchor
        yield _Step(point, base, node)
        point = base


def changes_of(step: Step) -> SnapshotChanges:
    """A step's changes, computed if need be."""
    return step if isinstance(step, SnapshotChanges) else step.changes()


def blame_of(step: Step, path: str) -> BlameEntry | None:
    """How ``path`` changed in ``step``, as a blame entry, or None."""
    change = step.change_of(path)
    if change is None:
        return None
    if isinstance(step, SnapshotChanges):
        snapshot, base = step.snapshot, step.base
    else:
        snapshot, base = step.target.record, step._base_record()
    return BlameEntry(path, snapshot, base, change.kind, change.causes)
