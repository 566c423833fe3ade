"""Snapshot records, diffs, retention policies and snapshot stores."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Literal, Protocol, TypeVar, get_args

from .._errors import InvalidArgumentError, SnapshotNotFoundError
from ._codec import from_json, to_json

SnapshotKind = Literal["memory", "git", "copy", "archive"]
"""How a snapshot's state is kept; says how to read ``SnapshotRef.location``."""


def snapshot_kind(value: object) -> SnapshotKind:
    """``value`` as a ``SnapshotKind``; InvalidArgumentError if it is none."""
    for kind in get_args(SnapshotKind):
        if value == kind:
            return kind  # type: ignore[no-any-return]
    raise InvalidArgumentError(f"unknown snapshot kind {value!r}", None)


@dataclass(frozen=True, slots=True)
class SnapshotRef:
    """Where the state a snapshot captured is kept.

    ``kind`` says how to read ``location``:

    * ``memory``: a version of an in-memory tree, held by its snapshot store;
      ``location`` is ``mem-<version number>`` (for people: nothing reads it back);
    * ``git``: a commit; ``location`` is its id and ``repository`` the git
      directory holding it (a host directory's git snapshots, or a persisted
      workspace snapshot loaded from git);
    * ``copy``: ``location`` is a directory holding a full copy (host);
    * ``archive``: ``location`` is a workspace archive file (host).
    """

    kind: SnapshotKind
    location: str
    repository: str | None = None

    def __post_init__(self) -> None:
        snapshot_kind(self.kind)


@dataclass(frozen=True, slots=True)
class FilesystemSnapshot:
    """An immutable record of a snapshot, storable in session state.

    ``ref`` says where and how the backend keeps the captured state
    (``commit_ref`` and ``git_dir`` read it under the seeds' names).
    ``to_dict``/``from_dict`` give a JSON-ready form.
    """

    snapshot_id: uuid.UUID
    created_at: datetime
    ref: SnapshotRef
    root_path: str
    tag: str | None = None
    parent_id: uuid.UUID | None = None
    file_count: int = 0
    total_bytes: int = 0
    workspace_id: str | None = None

    @property
    def commit_ref(self) -> str:
        """The seeds' name for ``ref.location``: a git commit id for git snapshots,
        ``mem-<n>`` for an in-memory version, a directory or archive path otherwise."""
        return self.ref.location

    @property
    def git_dir(self) -> str | None:
        """The seeds' name for ``ref.repository``: the git directory holding a git
        snapshot's commit (None for other kinds)."""
        return self.ref.repository

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (``ref`` as a nested dict; see ``fs.to_json``)."""
        data: dict[str, Any] = to_json(self)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FilesystemSnapshot:
        """Rebuild a record written by ``to_dict``, also by releases whose records
        had ``commit_ref``/``git_dir``/``strategy`` instead of ``ref``."""
        if isinstance(data, dict) and "ref" not in data and "commit_ref" in data:
            fields = dict(data)
            location = fields.pop("commit_ref")
            repository = fields.pop("git_dir", None)
            kind = fields.pop("strategy", None) or ("git" if repository else "memory")
            fields["ref"] = {"kind": kind, "location": location, "repository": repository}
            data = fields
        return from_json(cls, data)


@dataclass(frozen=True, slots=True)
class FilesystemDiff:
    """Paths of files (and symlinks) that differ between two states, sorted."""

    added: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    unchanged_count: int = 0

    @property
    def changed(self) -> bool:
        """True if anything was added, modified or deleted."""
        return bool(self.added or self.modified or self.deleted)


class SnapshotBytes(Protocol):
    """What a byte-based retention rule asks: ``SpaceUsage`` answers it."""

    def exclusive_bytes(
        self,
        snapshots: Iterable[FilesystemSnapshot],
        *,
        deleted: Iterable[FilesystemSnapshot] = (),
    ) -> int:
        """Bytes only these snapshots would hold, together, once ``deleted`` are gone."""
        ...


@dataclass(frozen=True, slots=True)
class SnapshotRetentionPolicy:
    """Which snapshots to keep.

    ``max_count`` keeps the newest N (10 unless given, as seed 001 has it; None
    keeps any number), ``max_age_hours`` drops older ones, and
    ``max_snapshot_bytes`` drops the oldest until the memory that only the
    kept snapshots hold (``SpaceUsage``: what deleting all of them would free)
    is at most that many bytes; with ``keep_tagged`` a tagged snapshot is never
    pruned (it still counts toward ``max_count`` and the bytes). None disables
    a rule. The byte rule applies to in-memory workspaces
    (``InMemoryFilesystem.prune``), which can count what snapshots hold.
    """

    max_count: int | None = 10
    max_age_hours: float | None = None
    keep_tagged: bool = True
    max_snapshot_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.max_count is not None and self.max_count < 1:
            raise InvalidArgumentError("max_count must be at least 1", None)
        if self.max_age_hours is not None and self.max_age_hours <= 0:
            raise InvalidArgumentError("max_age_hours must be positive", None)
        if self.max_snapshot_bytes is not None and self.max_snapshot_bytes < 0:
            raise InvalidArgumentError("max_snapshot_bytes cannot be negative", None)

    def expired(
        self,
        snapshots: Sequence[FilesystemSnapshot],
        now: datetime | None = None,
        *,
        space: SnapshotBytes | None = None,
    ) -> list[FilesystemSnapshot]:
        """The snapshots this policy would delete, oldest first.

        ``space`` says what snapshots hold; the ``max_snapshot_bytes`` rule needs
        it (InvalidArgumentError without), the others ignore it.
        """
        now = now or datetime.now(UTC)
        ordered = sorted(snapshots, key=lambda s: s.created_at)
        prunable = [s for s in ordered if not (self.keep_tagged and s.tag is not None)]
        doomed: dict[uuid.UUID, FilesystemSnapshot] = {}
        if self.max_age_hours is not None:
            cutoff = now - timedelta(hours=self.max_age_hours)
            doomed.update((s.snapshot_id, s) for s in prunable if s.created_at < cutoff)
        if self.max_count is not None:
            excess = len(ordered) - len(doomed) - self.max_count
            for snapshot in prunable:
                if excess <= 0:
                    break
                if snapshot.snapshot_id not in doomed:
                    doomed[snapshot.snapshot_id] = snapshot
                    excess -= 1
        if self.max_snapshot_bytes is not None:
            if space is None:
                raise InvalidArgumentError(
                    "max_snapshot_bytes needs to know what snapshots hold "
                    "(prune through InMemoryFilesystem.prune)",
                    None,
                )
            # A deletion leaves what the deleted snapshot shared with kept ones to
            # them alone: the kept snapshots are counted again after each.
            kept = [s for s in ordered if s.snapshot_id not in doomed]
            for snapshot in prunable:
                held = space.exclusive_bytes(kept, deleted=doomed.values())
                if held <= self.max_snapshot_bytes:
                    break
                if snapshot.snapshot_id not in doomed:
                    doomed[snapshot.snapshot_id] = snapshot
                    kept.remove(snapshot)
        return [s for s in ordered if s.snapshot_id in doomed]


@dataclass(frozen=True, slots=True)
class PruneResult:
    """What ``prune`` deleted (or, with ``dry_run``, would delete) and what that frees.

    Attributes:
        pruned: The snapshots, oldest first.
        dry_run: True if nothing was deleted.
        freed_bytes: What the space accounting expected deleting them to free.
        held_before: What the memory budget held before (``MemoryUsage.held``).
        held_after: And after: with nothing else changing, ``held_before - freed_bytes``.
    """

    pruned: tuple[FilesystemSnapshot, ...]
    dry_run: bool
    freed_bytes: int
    held_before: int
    held_after: int


PayloadT = TypeVar("PayloadT")


class SnapshotObserver(Protocol):
    """Told of each snapshot a workspace takes, adopts or deletes (``observe_snapshots``)."""

    def snapshot_taken(self, record: FilesystemSnapshot, version: Any) -> Callable[[], None] | None:
        """``record`` was taken; ``version`` is its frozen tree. Called under the tree
        lock, so that nothing changes in between; the function it returns, if any,
        runs once the lock is released, and the snapshot call returns after it (if it
        raises, the snapshot is deleted and the call raises that)."""

    def snapshot_adopted(self, record: FilesystemSnapshot, version: Any) -> None:
        """The live tree's state was adopted as ``record`` (``adopt_snapshot``: a load's
        snapshot), under the tree lock."""

    def snapshot_deleted(self, record: FilesystemSnapshot) -> None:
        """``record`` was deleted (or pruned)."""


class SnapshotStore(Protocol[PayloadT]):
    """Where a backend keeps its snapshots: records (seed 001's store), each with the
    payload the backend needs to restore it (an in-memory tree's frozen version)."""

    def save(self, snapshot: FilesystemSnapshot, payload: PayloadT | None = None) -> None:
        """Store a snapshot's record, and what the backend needs to restore it."""
        ...

    def load(self, snapshot_id: uuid.UUID) -> FilesystemSnapshot:
        """The record; raises SnapshotNotFoundError."""
        ...

    def payload(self, snapshot_id: uuid.UUID) -> PayloadT:
        """What was saved with the record; raises SnapshotNotFoundError (also for a
        record saved without one)."""
        ...

    def list(self) -> Sequence[FilesystemSnapshot]:
        """Every stored snapshot, in creation order."""
        ...

    def delete(self, snapshot_id: uuid.UUID) -> None:
        """Forget a snapshot; raises SnapshotNotFoundError."""
        ...

    def prune(self, policy: SnapshotRetentionPolicy, *, now: datetime | None = None) -> int:
        """Delete what ``policy`` expires; return how many were deleted."""
        ...


@dataclass(slots=True)
class InMemorySnapshotStore(Generic[PayloadT]):
    """A ``SnapshotStore`` in a dict; deleting drops the payload for the GC."""

    _entries: dict[uuid.UUID, tuple[FilesystemSnapshot, PayloadT | None]] = field(
        default_factory=dict
    )

    def save(self, snapshot: FilesystemSnapshot, payload: PayloadT | None = None) -> None:
        self._entries[snapshot.snapshot_id] = (snapshot, payload)

    def _entry(self, snapshot_id: uuid.UUID) -> tuple[FilesystemSnapshot, PayloadT | None]:
        try:
            return self._entries[snapshot_id]
        except KeyError:
            raise SnapshotNotFoundError(f"no snapshot {snapshot_id}", None) from None

    def load(self, snapshot_id: uuid.UUID) -> FilesystemSnapshot:
        return self._entry(snapshot_id)[0]

    def payload(self, snapshot_id: uuid.UUID) -> PayloadT:
        found = self._entry(snapshot_id)[1]
        if found is None:
            raise SnapshotNotFoundError(f"snapshot {snapshot_id} was saved without a payload", None)
        return found

    def list(self) -> Sequence[FilesystemSnapshot]:
        # Copied in one step first (``list`` of a dict view runs in C, so no other
        # thread's save or delete comes between): a Python loop over the view itself
        # fails when another thread takes a snapshot meanwhile (several clients'
        # tool calls each take one).
        return [snapshot for snapshot, _ in list(self._entries.values())]

    def delete(self, snapshot_id: uuid.UUID) -> None:
        if self._entries.pop(snapshot_id, None) is None:
            raise SnapshotNotFoundError(f"no snapshot {snapshot_id}", None)

    def prune(self, policy: SnapshotRetentionPolicy, *, now: datetime | None = None) -> int:
        doomed = policy.expired(self.list(), now)
        for snapshot in doomed:
            del self._entries[snapshot.snapshot_id]
        return len(doomed)
