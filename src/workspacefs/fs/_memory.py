"""``InMemoryFilesystem``: the live copy-on-write tree with O(1) snapshots."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from .._errors import (
    InvalidArgumentError,
    ReadOnlyError,
    SnapshotIncompatibleError,
)
from ..tree import MemoryBudget, Tree, Version, diff_versions
from ._budget import MemoryUsage, default_memory_budget
from ._hydrate import HostMount, hydrate
from ._limits import DEFAULT_LIMITS, Limits
from ._snapshots import (
    FilesystemDiff,
    FilesystemSnapshot,
    InMemorySnapshotStore,
    SnapshotRef,
    SnapshotRetentionPolicy,
    SnapshotStore,
)
from ._treefs import TreeFilesystem


class InMemoryFilesystem(TreeFilesystem):
    """A workspace held in memory, with O(1) snapshot and restore.

    The same live tree can be mounted with FUSE (``workspacefs.mount``); both
    front doors share ``tree.lock``.

    Args:
        mount_point: Absolute prefix that maps to the root, e.g. "/workspace".
        read_only: Refuse every write (snapshots may still be taken).
        limits: Per-call limits of the protocol.
        store: Where snapshots are kept (default: in memory).
        retention: Pruned after every snapshot, if given.
        workspace_id: Names the workspace in snapshot records (default: random).
        memory_budget: The most bytes the workspace's file data may hold, its
            snapshots' included; a write past it fails with ENOSPC (NoSpaceError)
            and changes nothing. Default: half of the memory this process can
            still allocate (``default_memory_budget``). A mount's statfs shows it
            as the size.
    """

    def __init__(
        self,
        *,
        mount_point: str | None = None,
        read_only: bool = False,
        limits: Limits = DEFAULT_LIMITS,
        store: SnapshotStore[Version] | None = None,
        retention: SnapshotRetentionPolicy | None = None,
        workspace_id: str | None = None,
        memory_budget: int | None = None,
    ) -> None:
        limit = default_memory_budget() if memory_budget is None else memory_budget
        tree = Tree(uid=os.getuid(), gid=os.getgid(), budget=MemoryBudget(limit))
        super().__init__(tree, read_only=read_only, mount_point=mount_point, limits=limits)
        self._live = tree
        self._store: SnapshotStore[Version] = store or InMemorySnapshotStore()
        self._retention = retention
        self._workspace_id = workspace_id or uuid.uuid4().hex
        self._current: uuid.UUID | None = None
        self._fork_point: Version | None = None

    def fork(self, snapshot: FilesystemSnapshot | None = None) -> InMemoryFilesystem:
        """A new writable workspace whose state is ``snapshot`` (default: the live
        tree now), in O(1): it shares all data with this one until either writes.

        Writes in the fork never show here and the other way round. The fork has
        its own snapshot store (empty), its own workspace id (so both may persist
        to one git repository) and this workspace's limits, mount point,
        retention and read-only flag. It draws on the same memory budget: shared
        data is counted once, and each side's new data adds to it (see
        ``Tree.fork``). Its history continues this one's, so the two can be
        compared and merged (``fork_point``, ``workspacefs.git.merge``).

        Each fork is its own tree; one mount serves a workspace and its forks
        (``Mount.add_fork``: ``<mountpoint>/.forks/<name>``), see ``docs/forks.md``.
        """
        with self._live.lock:
            version = self._live.snapshot() if snapshot is None else self.version(snapshot)
            tree = self._live.fork(version)
        fork = InMemoryFilesystem.__new__(InMemoryFilesystem)
        TreeFilesystem.__init__(
            fork, tree, read_only=self.read_only, mount_point=self.mount_point, limits=self.limits
        )
        fork._live = tree
        fork._store = InMemorySnapshotStore()
        fork._retention = self._retention
        fork._workspace_id = uuid.uuid4().hex
        fork._current = None
        fork._fork_point = version
        return fork

    def fast_forward(self, other: InMemoryFilesystem) -> bool:
        """Make ``other``'s live state this workspace's, in O(1) plus O(changes), if
        this workspace has not changed since the two diverged (typically: since
        ``other`` was forked from it); False, changing nothing, if it has (then
        merge: ``workspacefs.git.merge``).

        The result is what a merge of ``other`` would give, found without
        looking at a path; the mount's caches of what changed are invalidated
        as after a restore. ``other`` stays usable (it copies on its next write).

        Raises:
            ReadOnlyError: This workspace is read-only.
            InvalidArgumentError: ``other`` is no fork of this workspace's family.
        """
        if self.read_only:
            raise ReadOnlyError("read-only filesystem", "/")
        with self._live.lock, other._live.lock:  # this one's release publishes the change
            return self._live.fast_forward(other._live) is not None

    @property
    def fork_point(self) -> Version | None:
        """The version this workspace was forked from (None if it is no fork):
        the common ancestor of the fork and its origin at the time of the fork."""
        return self._fork_point

    @property
    def tree(self) -> Tree:
        """The live tree, for the FUSE layer and persistence."""
        return self._live

    @property
    def workspace_id(self) -> str:
        """The id recorded in this workspace's snapshots."""
        return self._workspace_id

    @property
    def memory_budget(self) -> int:
        """The most bytes the file data may hold (see the constructor); settable.

        Lowering it below what is held refuses writes until enough is deleted.
        """
        limit = self._live.budget.limit
        assert limit is not None
        return limit

    @memory_budget.setter
    def memory_budget(self, limit: int) -> None:
        if limit < 0:
            raise InvalidArgumentError("a memory budget cannot be negative", None)
        self._live.budget.limit = limit

    def memory_usage(self) -> MemoryUsage:
        """What the file data holds against the budget, and how much of it only
        snapshots hold (what deleting them would free). O(inodes)."""
        with self._live.lock:
            live = self._live.live_data_bytes()
            held = self._live.budget.held
        return MemoryUsage(budget=self.memory_budget, held=held, live=live)

    @property
    def current_snapshot_id(self) -> uuid.UUID | None:
        """The snapshot last taken or restored; None before the first."""
        return self._current

    # -- snapshots -------------------------------------------------------------

    def snapshot(self, *, tag: str | None = None) -> FilesystemSnapshot:
        """Freeze the live tree in O(1) and record it."""
        with self._live.lock:
            version = self._live.snapshot()
            parent = self._current
            record = FilesystemSnapshot(
                snapshot_id=uuid.uuid4(),
                created_at=datetime.now(UTC),
                ref=SnapshotRef("memory", str(version.number)),
                root_path=self.root,
                tag=tag,
                parent_id=parent,
                file_count=version.file_count,
                total_bytes=version.total_bytes,
                workspace_id=self._workspace_id,
            )
            self._store.save(record, version)
            self._current = record.snapshot_id
        if self._retention is not None:
            self._store.prune(self._retention)
        return record

    def adopt_snapshot(self, record: FilesystemSnapshot) -> Version:
        """Freeze the live tree under an existing record, e.g. one loaded from git.

        The record must name this workspace; afterwards ``restore(record)`` works.
        """
        if record.workspace_id != self._workspace_id:
            raise SnapshotIncompatibleError("snapshot belongs to another workspace", None)
        with self._live.lock:
            version = self._live.snapshot()
            self._store.save(record, version)
            self._current = record.snapshot_id
        return version

    def restore(self, snapshot: FilesystemSnapshot) -> None:
        """Make the live tree equal to ``snapshot`` in O(1)."""
        if self.read_only:
            raise ReadOnlyError("read-only filesystem", "/")
        version = self.version(snapshot)
        with self._live.lock:  # publishes what the restore changed
            self._live.restore(version)
            self._current = snapshot.snapshot_id

    def diff(
        self, base: FilesystemSnapshot, target: FilesystemSnapshot | None = None
    ) -> FilesystemDiff:
        """Files added, modified and deleted from ``base`` to ``target`` (or live), O(changes)."""
        before = self.version(base)
        if target is not None:
            after = self.version(target)
            paths = diff_versions(before, after, Tree.changes_between(before, after))
            count = after.file_count
        else:
            with self._live.lock:
                paths = diff_versions(before, self._live, self._live.changes_since(before))
                count = self._live.file_count
        return FilesystemDiff(
            added=paths.added,
            modified=paths.modified,
            deleted=paths.deleted,
            unchanged_count=count - len(paths.added) - len(paths.modified),
        )

    def at(self, snapshot: FilesystemSnapshot) -> TreeFilesystem:
        """A read-only ``Filesystem`` showing ``snapshot``, without restoring it."""
        return TreeFilesystem(
            self.version(snapshot), mount_point=self.mount_point, limits=self.limits
        )

    def snapshots(self) -> Sequence[FilesystemSnapshot]:
        """Every kept snapshot, in creation order."""
        return self._store.list()

    def delete_snapshot(self, snapshot: FilesystemSnapshot) -> None:
        """Forget a snapshot; memory no other version shares is freed."""
        self._store.delete(snapshot.snapshot_id)

    def prune(self, policy: SnapshotRetentionPolicy) -> Sequence[FilesystemSnapshot]:
        """Delete the snapshots ``policy`` expires; return them."""
        return self._store.prune(policy)

    def version(self, snapshot: FilesystemSnapshot) -> Version:
        """The frozen tree of a snapshot, for persistence and the FUSE layer."""
        if snapshot.workspace_id != self._workspace_id:
            raise SnapshotIncompatibleError(
                f"snapshot {snapshot.snapshot_id} belongs to another workspace", None
            )
        _, version = self._store.load(snapshot.snapshot_id)
        return version

    # -- hydration -------------------------------------------------------------

    def hydrate_from_host(
        self, mount: HostMount, *, allowed_roots: Sequence[str | os.PathLike[str]] = ()
    ) -> int:
        """Copy files from a host directory into the tree; return how many.

        Hydration sets the workspace up, so it works on a read-only one too.

        ``mount.host_path`` must lie inside one of ``allowed_roots`` (a
        relative one is looked up in each); anything else is refused.
        """
        with self.transaction() as tree:
            owner = (os.getuid(), os.getgid())
            return hydrate(tree, mount, allowed_roots, self._normalize, owner)

    # -- for the layers above: consistent reads and bulk writes ----------------

    def frozen_view(self) -> TreeFilesystem:
        """An O(1), consistent, read-only view of the live tree, for long readers
        (an archive export) that must neither hold the lock nor see later writes.

        Like any copy-on-write freeze it advances the epoch: the live tree's
        next write to each page, node or chunk copies it. The view is not a
        snapshot: the store does not list it, and it is freed with its last user.
        """
        with self._live.lock:
            version = self._live.snapshot()
        return TreeFilesystem(version, mount_point=self.mount_point, limits=self.limits)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Tree]:
        """Hold the tree lock and yield the live tree for a bulk write (an import,
        a load, a hydration); all or nothing.

        An exception puts the live tree back exactly as it was, in O(1) (the
        tree is frozen on entry, which advances the epoch as any freeze does).
        Afterwards, with the lock released, what was touched is published to
        subscribers (a mount invalidates its kernel caches), as after the
        protocol's own writes. Works on a read-only filesystem too: setting a
        workspace up is its owner's business; callers refuse what they must.
        """
        tree = self._live
        with tree.lock:  # its release publishes what the transaction touched
            before = tree.snapshot()
            try:
                yield tree
            except BaseException:
                tree.restore(before)
                raise
