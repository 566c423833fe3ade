"""Space accounting per snapshot and per fork: shared and exclusive bytes.

``InMemoryFilesystem.space_usage()`` says, for the live tree, every snapshot,
every fork of the family and whatever else holds versions, how many bytes of
file data each reaches and how many of those nothing else holds: what
deleting that snapshot (or dropping that fork) would free. The counting is
``tree.shares``; this module names the holders and shapes the answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import InvalidArgumentError
from ..tree import Holding, Node, Shares, Version, shares
from ._codec import from_json, to_json
from ._snapshots import FilesystemSnapshot


@dataclass(frozen=True, slots=True)
class SpaceShare:
    """The file data one holder reaches (bytes), and how much of it is its alone."""

    reached: int
    """Bytes of file data it reaches (each chunk once)."""
    shared: int = field(init=False)
    """Of ``reached``, what something else holds too (derived, kept for readers)."""
    exclusive: int
    """Of ``reached``, what nothing else holds: what dropping it would free."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "shared", self.reached - self.exclusive)

    def to_dict(self) -> dict[str, int]:
        """A JSON-ready dict (``fs.to_json``)."""
        data: dict[str, int] = to_json(self)
        return data


@dataclass(frozen=True, slots=True)
class SnapshotSpace:
    """The file data of one snapshot: what it reaches, shares and holds alone."""

    snapshot: FilesystemSnapshot
    reached: int
    """Bytes of file data the snapshot reaches."""
    shared: int = field(init=False)
    """Of ``reached``, what the live tree, another snapshot or a fork holds too (derived)."""
    exclusive: int
    """Of ``reached``, what nothing else holds: what deleting the snapshot frees."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "shared", self.reached - self.exclusive)

    @property
    def snapshot_id(self) -> uuid.UUID:
        """The snapshot's id."""
        return self.snapshot.snapshot_id

    @property
    def tag(self) -> str | None:
        """The snapshot's tag."""
        return self.snapshot.tag


@dataclass(frozen=True, slots=True)
class WorkspaceSpace:
    """The file data of one workspace of a family of forks, by holder."""

    workspace_id: str
    live: SpaceShare
    """The live tree (open unlinked files included)."""
    snapshots: tuple[SnapshotSpace, ...]
    """Its kept snapshots, in creation order."""
    fork_point: SpaceShare | None
    """The version it was forked from, which it keeps (None if it is no fork)."""
    reached: int
    """Bytes the live tree, the snapshots and the fork point reach together."""
    exclusive: int
    """Of ``reached``, what nothing outside this workspace holds: what dropping
    the whole workspace (a fork) would free."""
    snapshots_exclusive: int
    """What only its snapshots hold: what deleting all of them would free."""


@dataclass(frozen=True, slots=True)
class SpaceUsage:
    """Who holds the file data of a workspace's family (bytes, shared data once).

    Returned by ``InMemoryFilesystem.space_usage()``. ``exclusive`` figures say
    what deleting one snapshot, or dropping one fork, would free; the bytes a
    holder reaches that are not exclusive are ``shared`` with another holder.
    """

    held: int
    """What the family's memory budget counts as held (``MemoryUsage.held``)."""
    accounted: int
    """What the holders below reach together; equals ``held`` unless data was
    written or freed while the accounting ran."""
    workspace: WorkspaceSpace
    """This workspace: its live tree, snapshots and fork point."""
    forks: tuple[WorkspaceSpace, ...]
    """Every other workspace of the family still alive (its forks, their forks,
    the workspace it was forked from), in the order they were made."""
    other: SpaceShare
    """Versions that none of the above lists, held elsewhere: the git
    persistence state's last persisted version, frozen views being read."""
    _shares: Shares | None = field(default=None, repr=False, compare=False)
    _holdings: Mapping[uuid.UUID, int] = field(default_factory=dict, repr=False, compare=False)

    @property
    def live(self) -> SpaceShare:
        """This workspace's live tree."""
        return self.workspace.live

    @property
    def snapshots(self) -> tuple[SnapshotSpace, ...]:
        """This workspace's snapshots, in creation order."""
        return self.workspace.snapshots

    def exclusive_bytes(
        self,
        snapshots: Iterable[FilesystemSnapshot | uuid.UUID],
        *,
        deleted: Iterable[FilesystemSnapshot | uuid.UUID] = (),
    ) -> int:
        """Bytes that only these snapshots hold, together: what deleting all of
        them would free (data two of them share counts, unlike in the sum of
        their own ``exclusive``). With ``deleted``: once those are deleted (what
        they share with these becomes these snapshots' alone). Snapshots of any
        workspace of the family.

        Raises:
            InvalidArgumentError: A snapshot the accounting did not list, or a
                usage that came over the wire (it carries no share table: ask
                the workspace's own process, e.g. ``prune(..., dry_run=True)``).
        """
        if self._shares is None:
            raise InvalidArgumentError(
                "this space usage holds no share table (it came over the wire)", None
            )
        return self._shares.exclusive(self._indices(snapshots), dropped=self._indices(deleted))

    def _indices(self, snapshots: Iterable[FilesystemSnapshot | uuid.UUID]) -> list[int]:
        holdings = []
        for item in snapshots:
            snapshot_id = item.snapshot_id if isinstance(item, FilesystemSnapshot) else item
            holding = self._holdings.get(snapshot_id)
            if holding is None:
                raise InvalidArgumentError(f"snapshot {snapshot_id} was not accounted", None)
            holdings.append(holding)
        return holdings

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, without the share table (``fs.to_json``)."""
        data: dict[str, Any] = to_json(self)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SpaceUsage:
        """The usage ``to_dict`` wrote; ``exclusive_bytes`` refuses on it."""
        return from_json(cls, data)


@dataclass(frozen=True, slots=True)
class WorkspaceHoldings:
    """What one workspace of a family holds, frozen for accounting."""

    workspace_id: str
    live: Version
    """The live tree, frozen (an O(1) snapshot taken for the accounting)."""
    orphans: Sequence[tuple[int, Node]]
    """The live tree's open unlinked files, taken with ``live``."""
    snapshots: Sequence[tuple[FilesystemSnapshot, Version]]
    fork_point: Version | None


def account(
    members: Sequence[WorkspaceHoldings], others: Sequence[Version], held: int
) -> SpaceUsage:
    """Count the shares of ``members`` (the asking workspace first) and of the
    versions ``others`` (grouped as one holder); ``held`` is the budget's count."""
    holdings: list[Holding] = []
    layout: list[tuple[WorkspaceHoldings, int, list[int], int | None]] = []
    by_snapshot: dict[uuid.UUID, int] = {}
    for member in members:
        live = len(holdings)
        holdings.append(Holding([member.live], member.orphans))
        numbers = []
        for record, version in member.snapshots:
            by_snapshot[record.snapshot_id] = len(holdings)
            numbers.append(len(holdings))
            holdings.append(Holding([version]))
        point = None
        if member.fork_point is not None:
            point = len(holdings)
            holdings.append(Holding([member.fork_point]))
        layout.append((member, live, numbers, point))
    other = len(holdings)
    holdings.append(Holding(others))
    table = shares(holdings)

    def share(holding: int) -> SpaceShare:
        return SpaceShare(table.reached([holding]), table.exclusive([holding]))

    spaces = []
    for member, live, numbers, point in layout:
        everything = [live, *numbers] + ([] if point is None else [point])
        spaces.append(
            WorkspaceSpace(
                workspace_id=member.workspace_id,
                live=share(live),
                snapshots=tuple(
                    SnapshotSpace(record, table.reached([n]), table.exclusive([n]))
                    for (record, _), n in zip(member.snapshots, numbers, strict=True)
                ),
                fork_point=None if point is None else share(point),
                reached=table.reached(everything),
                exclusive=table.exclusive(everything),
                snapshots_exclusive=table.exclusive(numbers),
            )
        )
    return SpaceUsage(
        held=held,
        accounted=table.total,
        workspace=spaces[0],
        forks=tuple(spaces[1:]),
        other=share(other),
        _shares=table,
        _holdings=by_snapshot,
    )
