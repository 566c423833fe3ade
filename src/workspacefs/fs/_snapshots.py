"""Snapshot records, diffs, retention policies and snapshot stores."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from .._errors import InvalidArgumentError, SnapshotNotFoundError


@dataclass(frozen=True, slots=True)
class FilesystemSnapshot:
    """An immutable record of a snapshot, storable in session state.

    ``commit_ref`` names the captured state in the backend: a version id for
    the in-memory tree, a commit id for git-backed ones (``git_dir`` then
    says where). ``to_dict``/``from_dict`` give a JSON-ready form.
    """

    snapshot_id: uuid.UUID
    created_at: datetime
    commit_ref: str
    root_path: str
    git_dir: str | None = None
    tag: str | None = None
    parent_id: uuid.UUID | None = None
    file_count: int = 0
    total_bytes: int = 0
    workspace_id: str | None = None
    strategy: str | None = None
    """How a host directory's snapshot is kept: "git", "copy" or "archive"."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        data = asdict(self)
        data["snapshot_id"] = str(self.snapshot_id)
        data["parent_id"] = None if self.parent_id is None else str(self.parent_id)
        data["created_at"] = self.created_at.isoformat()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FilesystemSnapshot:
        """Rebuild a record written by ``to_dict``."""
        fields = dict(data)
        fields["snapshot_id"] = uuid.UUID(fields["snapshot_id"])
        parent = fields.get("parent_id")
        fields["parent_id"] = None if parent is None else uuid.UUID(parent)
        fields["created_at"] = datetime.fromisoformat(fields["created_at"])
        return cls(**fields)


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


@dataclass(frozen=True, slots=True)
class SnapshotRetentionPolicy:
    """Which snapshots to keep.

    ``max_count`` keeps the newest N, ``max_age_hours`` drops older ones; with
    ``keep_tagged`` a tagged snapshot is never pruned (it still counts toward
    ``max_count``). None disables a rule.
    """

    max_count: int | None = None
    max_age_hours: float | None = None
    keep_tagged: bool = True

    def __post_init__(self) -> None:
        if self.max_count is not None and self.max_count < 1:
            raise InvalidArgumentError("max_count must be at least 1", None)
        if self.max_age_hours is not None and self.max_age_hours <= 0:
            raise InvalidArgumentError("max_age_hours must be positive", None)

    def expired(
        self, snapshots: Sequence[FilesystemSnapshot], now: datetime | None = None
    ) -> list[FilesystemSnapshot]:
        """The snapshots this policy would delete, oldest first."""
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
        return [s for s in ordered if s.snapshot_id in doomed]


PayloadT = TypeVar("PayloadT")


class SnapshotStore(Protocol[PayloadT]):
    """Where a backend keeps its snapshots: records plus a backend payload."""

    def save(self, snapshot: FilesystemSnapshot, payload: PayloadT) -> None:
        """Store a snapshot and what the backend needs to restore it."""
        ...

    def load(self, snapshot_id: uuid.UUID) -> tuple[FilesystemSnapshot, PayloadT]:
        """The record and payload; raises SnapshotNotFoundError."""
        ...

    def list(self) -> Sequence[FilesystemSnapshot]:
        """Every stored snapshot, in creation order."""
        ...

    def delete(self, snapshot_id: uuid.UUID) -> None:
        """Forget a snapshot; raises SnapshotNotFoundError."""
        ...

    def prune(
        self, policy: SnapshotRetentionPolicy, *, now: datetime | None = None
    ) -> Sequence[FilesystemSnapshot]:
        """Delete what ``policy`` expires; return what was deleted."""
        ...


@dataclass(slots=True)
class InMemorySnapshotStore(Generic[PayloadT]):
    """A ``SnapshotStore`` in a dict; deleting drops the payload for the GC."""

    _entries: dict[uuid.UUID, tuple[FilesystemSnapshot, PayloadT]] = field(default_factory=dict)

    def save(self, snapshot: FilesystemSnapshot, payload: PayloadT) -> None:
        self._entries[snapshot.snapshot_id] = (snapshot, payload)

    def load(self, snapshot_id: uuid.UUID) -> tuple[FilesystemSnapshot, PayloadT]:
        try:
            return self._entries[snapshot_id]
        except KeyError:
            raise SnapshotNotFoundError(f"no snapshot {snapshot_id}", None) from None

    def list(self) -> Sequence[FilesystemSnapshot]:
        return [snapshot for snapshot, _ in self._entries.values()]

    def delete(self, snapshot_id: uuid.UUID) -> None:
        if self._entries.pop(snapshot_id, None) is None:
            raise SnapshotNotFoundError(f"no snapshot {snapshot_id}", None)

    def prune(
        self, policy: SnapshotRetentionPolicy, *, now: datetime | None = None
    ) -> Sequence[FilesystemSnapshot]:
        doomed = policy.expired(self.list(), now)
        for snapshot in doomed:
            del self._entries[snapshot.snapshot_id]
        return doomed
