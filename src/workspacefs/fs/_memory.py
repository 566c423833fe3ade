"""``InMemoryFilesystem``: the live copy-on-write tree with O(1) snapshots."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import uuid
import weakref
from collections import ChainMap
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .._errors import (
    InvalidArgumentError,
    IsADirectoryFsError,
    ReadOnlyError,
    ReadOnlyRestoreError,
    SnapshotIncompatibleError,
    SnapshotNotFoundError,
)
from ..tree import (
    Cause,
    Directory,
    Lineage,
    MemoryBudget,
    Tree,
    TreeLock,
    Version,
    WeakRegistry,
    diff_versions,
)
from ..tree import attributed as _attributed
from ._access import AccessRules
from ._budget import MemoryUsage, default_memory_budget
from ._conditional import changed_since
from ._events import ChangeStream
from ._feed import ChangeFeed
from ._history import (
    Anchor,
    BlameEntry,
    Recorded,
    SnapshotChanges,
    Step,
    blame_of,
    changes_of,
    walk,
)
from ._limits import DEFAULT_LIMITS, Limits
from ._paths import normalize_mount_point
from ._rules import Denial, Rule
from ._snapshot_names import check_tag
from ._snapshots import (
    FilesystemDiff,
    FilesystemSnapshot,
    InMemorySnapshotStore,
    PruneResult,
    SnapshotObserver,
    SnapshotRef,
    SnapshotRetentionPolicy,
    SnapshotStore,
)
from ._space import SpaceUsage, WorkspaceHoldings, account
from ._spellings import either
from ._treefs import TreeFilesystem

if TYPE_CHECKING:
    from ._hydrate import HostMount


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
            as the size. A workspace with a store (``store.open_workspace``) uses
            it as a cache target: data the store holds leaves memory to make room,
            and only data it does not hold yet is refused past it.
        _read_only, _mount_point: The seeds' spellings of ``read_only`` and
            ``mount_point`` (their dataclass fields), accepted as well.
        blame_full_commands: Record the command lines and labels of causes as they
            are. By default blame keeps them with their secrets masked
            (``Cause.redacted``: passwords, tokens, keys in flags, headers,
            ``KEY=value`` pairs and URLs), so history, and the git objects
            ``persist`` writes from it, never hold them; settable.
        rules: Access rules for the workspace (``Rule``: read-only and hidden paths,
            quotas); ``rules`` is where to change them later.
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
        _read_only: bool | None = None,
        _mount_point: str | None = None,
        blame_full_commands: bool = False,
        rules: Iterable[Rule] = (),
    ) -> None:
        read_only = either("read_only", read_only, False, _read_only)
        mount_point = either("mount_point", mount_point, None, _mount_point)
        limit = default_memory_budget() if memory_budget is None else memory_budget
        self._init(
            Tree(uid=os.getuid(), gid=os.getgid(), budget=MemoryBudget(limit)),
            read_only=read_only,
            mount_point=mount_point,
            limits=limits,
            store=store or InMemorySnapshotStore(),
            retention=retention,
            workspace_id=workspace_id or uuid.uuid4().hex,
            fork_point=None,
            origin=None,
            family=WeakRegistry(),
        )
        self.blame_full_commands = blame_full_commands
        rules = tuple(rules)
        if rules:
            self._rules.set(rules)

    def _init(
        self,
        tree: Tree,
        *,
        read_only: bool,
        mount_point: str | None,
        limits: Limits,
        store: SnapshotStore[Version],
        retention: SnapshotRetentionPolicy | None,
        workspace_id: str,
        fork_point: Version | None,
        origin: weakref.ref[InMemoryFilesystem] | None,
        family: WeakRegistry[InMemoryFilesystem],
    ) -> None:
        # The one place every field is set: ``__init__`` and ``fork`` both come here.
        origin_fs = None if origin is None else origin()
        rules = AccessRules(
            tree,
            scope="workspace" if origin_fs is None else "fork",
            origin=None if origin_fs is None else origin_fs._rules,
            mount_point=normalize_mount_point(mount_point),
        )
        super().__init__(
            tree, read_only=read_only, mount_point=mount_point, limits=limits, rules=rules
        )
        self._rules: AccessRules = rules
        self._live = tree
        self._store = store
        self._retention = retention
        self._workspace_id = workspace_id
        self._current: uuid.UUID | None = None
        self._fork_point = fork_point
        self._origin = origin
        self._recorded: dict[Lineage, Recorded] = {}
        # Each lineage's oldest kept snapshot, where history's steps end (``_steps``):
        # kept up to date as snapshots are taken, made again after one is deleted
        # (None), so that what a new snapshot changed costs O(changes), not a pass over
        # every snapshot kept (a durable store asks after every snapshot).
        self._anchors: dict[Lineage, Anchor] | None = None
        self._anchors_changed = 0  # bumped under the tree lock at each save and deletion
        # A fork is journalled by whoever made it durable, if anyone: it starts with none.
        self._observers: list[SnapshotObserver] = []
        # Per workspace merged in (weakly: it goes with that workspace), the last
        # merge: where it is in this history, and the version of that workspace
        # it brought in (strongly: a merge base must keep its data).
        self._merges: weakref.WeakKeyDictionary[InMemoryFilesystem, tuple[Lineage, Version]] = (
            weakref.WeakKeyDictionary()
        )
        self._merges_lock = threading.Lock()
        self._feed: ChangeFeed | None = None  # started by the first reader
        self._feed_lock = threading.Lock()
        # This workspace and its forks, theirs too (weakly): what space accounting asks.
        self._family = family
        family.add(self)

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

        This workspace's access rules bind the fork too, as they change; the
        fork's own (``fork.rules``) bind it alone.
        """
        with self._live.lock:
            version = self._live.snapshot() if snapshot is None else self.version(snapshot)
            tree = self._live.fork(version)
        fork = InMemoryFilesystem.__new__(InMemoryFilesystem)
        fork._init(
            tree,
            read_only=self.read_only,
            mount_point=self.mount_point,
            limits=self.limits,
            store=InMemorySnapshotStore(),
            retention=self._retention,
            workspace_id=uuid.uuid4().hex,
            fork_point=version,
            # History before the fork is the origin's, read while the origin lives:
            # a strong reference would keep every origin snapshot alive with the fork.
            origin=weakref.ref(self),
            family=self._family,
        )
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
        if other is self or other._family is not self._family:
            raise InvalidArgumentError("not a fork of this workspace's family", None)
        with _holding(self._live.lock, other._live.lock):
            merged = other._live.snapshot()  # O(1): what this workspace is about to hold
            if self._live.fast_forward(other._live) is None:
                return False
            # The adopted state continues from ``merged``: a step of both histories now.
            self.record_merge(other, merged.lineage, merged)
            return True

    def record_merge(self, other: InMemoryFilesystem, step: Lineage, merged: Version) -> None:
        """Remember that this workspace's history holds ``merged``, a version of
        ``other`` (this workspace itself for one of its snapshots), from ``step``
        on (a merge of ``other`` into this workspace ended there; ``step`` is
        ``Version.lineage`` of a version of this workspace): every later state
        of this workspace descends from ``merged`` too, so a later merge of the
        two starts from there, not from where they forked
        (``workspacefs.git.merge`` records, and finds, these).

        The last merge of each workspace is kept while ``other`` lives; it holds
        ``merged`` (what ``other`` has changed since is the memory it costs).
        """
        with self._merges_lock:
            self._merges[other] = (step, merged)

    def merge_points(self) -> list[tuple[Lineage, Version]]:
        """(step, merged) of each merge ``record_merge`` remembers."""
        with self._merges_lock:
            return list(self._merges.values())

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
        """What the file data holds against the budget, how much of it only snapshots
        hold (what deleting them would free), how much of it may leave memory, and
        how much of the live tree is on disk only. O(inodes)."""
        with self._live.lock:
            live, on_disk = self._live.live_residency()
            held = self._live.budget.held
        evictable = self._live.budget.residency.evictable()
        return MemoryUsage(
            budget=self.memory_budget,
            held=held,
            live=live,
            evictable=min(evictable, held),
            on_disk=on_disk,
        )

    def space_usage(self) -> SpaceUsage:
        """Shared and exclusive bytes of file data for the live tree, every
        snapshot, every fork of the family and whatever else holds versions:
        what deleting each snapshot (or dropping each fork) would free.

        Bytes are counted by identity of the chunks that copy-on-write shares
        between versions, as the budget counts them, so the figures add up to
        ``memory_usage().held``. Each live tree of the family is frozen in O(1)
        under its lock (as ``frozen_view`` does), so no lock is held while
        counting. Cost: one pass over one version's inode table, plus the
        inodes the versions' change sets name and the chunks of those files:
        O(inodes + changes), never a walk of every snapshot (``docs/space.md``).
        """
        members = []
        for workspace in [self, *(fs for fs in self._family.alive() if fs is not self)]:
            members.append(workspace._holdings())
        listed = {id(member.live) for member in members}
        for member in members:
            listed.update(id(version) for _, version in member.snapshots)
            if member.fork_point is not None:
                listed.add(id(member.fork_point))
        others = [version for version in self._live.versions() if id(version) not in listed]
        return account(members, others, self._live.budget.held)

    def _holdings(self) -> WorkspaceHoldings:
        """What this workspace holds, its live tree frozen in O(1)."""
        with self._live.lock:
            live = self._live.snapshot()
            orphans = self._live.orphan_nodes()
        snapshots = []
        for record in self._store.list():
            with contextlib.suppress(SnapshotNotFoundError):  # deleted meanwhile
                snapshots.append((record, self._store.payload(record.snapshot_id)))
        return WorkspaceHoldings(self._workspace_id, live, orphans, snapshots, self._fork_point)

    @property
    def current_snapshot_id(self) -> uuid.UUID | None:
        """The snapshot last taken or restored; None before the first."""
        return self._current

    # -- snapshots -------------------------------------------------------------

    def snapshot(self, *, tag: str | None = None) -> FilesystemSnapshot:
        """Freeze the live tree in O(1) and record it.

        Raises:
            InvalidArgumentError: ``tag`` breaks the rule of tags (``check_tag``):
                refused here, not when the snapshot is persisted.
        """
        if tag is not None:
            check_tag(tag)
        with self._live.lock:
            version = self._live.snapshot()
            parent = self._current
            record = FilesystemSnapshot(
                snapshot_id=uuid.uuid4(),
                created_at=datetime.now(UTC),
                ref=SnapshotRef("memory", f"mem-{version.number}"),
                root_path=self.root,
                tag=tag,
                parent_id=parent,
                file_count=version.file_count,
                total_bytes=version.total_bytes,
                workspace_id=self._workspace_id,
            )
            self._store.save(record, version)
            self._anchors_changed += 1
            if self._anchors is not None:  # the newest: a lineage's oldest only if its first
                self._anchors.setdefault(version.lineage, Anchor(record, version, version.lineage))
            self._current = record.snapshot_id
            then = [observer.snapshot_taken(record, version) for observer in self._observers]
        try:
            for finish in then:
                if finish is not None:
                    finish()
        except BaseException:
            # Not kept where it was promised to be kept (a journal's disk is full):
            # not kept at all, rather than lost later.
            with self._live.lock, contextlib.suppress(SnapshotNotFoundError):
                self._store.delete(record.snapshot_id)
                self._forget_anchors()
                if self._current == record.snapshot_id:
                    self._current = parent
            raise
        if self._retention is not None:
            self._delete(self._expired(self._retention)[0])
        return record

    def observe_snapshots(self, observer: SnapshotObserver) -> Callable[[], None]:
        """Tell ``observer`` of every snapshot taken, adopted and deleted from now on, before the
        call that took or deleted it returns (a journal makes it durable there);
        returns the function that stops it."""
        self._observers.append(observer)
        return lambda: self._observers.remove(observer)

    def adopt_snapshot(
        self, record: FilesystemSnapshot, *, history: Iterable[SnapshotChanges] | None = None
    ) -> Version:
        """Freeze the live tree under an existing record, e.g. one loaded from git.

        The record must name this workspace; afterwards ``restore(record)`` works.

        Args:
            record: The snapshot's record.
            history: What the snapshot changed and what the snapshots before it
                did, newest first (the first item's snapshot is ``record``), as
                recorded elsewhere (git): ``changes``, ``history`` and ``blame``
                read it rather than counting the whole state as added. Iterated
                again on every such call, so it should cache what it reads.
        """
        if record.workspace_id != self._workspace_id:
            raise SnapshotIncompatibleError("snapshot belongs to another workspace", None)
        with self._live.lock:
            version = self._live.snapshot()
            self._store.save(record, version)
            self._forget_anchors()  # the record may be one kept already, with another version
            self._current = record.snapshot_id
            if history is not None:
                anchor = Anchor(record, version, version.lineage)
                self._recorded[version.lineage] = Recorded(anchor, history)
            for observer in self._observers:
                observer.snapshot_adopted(record, version)
        return version

    def restore(
        self, snapshot: FilesystemSnapshot, *, if_unchanged_since: FilesystemSnapshot | None = None
    ) -> None:
        """Make the live tree equal to ``snapshot`` in O(1) (``if_unchanged_since``: only
        if nothing changed since that snapshot, checked under the same lock hold)."""
        if self.read_only:
            raise ReadOnlyRestoreError("read-only filesystem", "/")
        version = self.version(snapshot)
        with self._live.lock:  # publishes what the restore changed
            if if_unchanged_since is not None:
                # O(changes since it): the change sets name what may differ (none: done at
                # once), and a changed file is read only to compare it with one of its size.
                changes = self.recorded_diff(if_unchanged_since)  # hidden paths count too
                if changes.changed:
                    raise changed_since(self._rules.shown_diff(changes))  # but go unnamed
            self._live.restore(version)
            self._current = snapshot.snapshot_id

    def diff(
        self, base: FilesystemSnapshot, target: FilesystemSnapshot | None = None
    ) -> FilesystemDiff:
        """Files added, modified and deleted from ``base`` to ``target`` (or live), O(changes).

        Paths an access rule hides (from the cause in effect) are left out, as listings
        leave them out."""
        return self._rules.shown_diff(self.recorded_diff(base, target))

    def recorded_diff(
        self, base: FilesystemSnapshot, target: FilesystemSnapshot | None = None
    ) -> FilesystemDiff:
        """``diff`` with every path, hidden ones too: for what must see every change
        (a conditional restore, a rewind's check for other writers), not a reader."""
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

    # -- the change feed -------------------------------------------------------

    def change_feed(self) -> ChangeFeed:
        """The live workspace's change feed (``ChangeFeed``), started by the first call:
        from then on every change, through the API or the mount, becomes events."""
        with self._feed_lock:
            if self._feed is None:
                self._feed = ChangeFeed(self._live, rules=self._rules)
            return self._feed

    def events(
        self, after: str | None = None, *, glob: str | None = None, timeout: float | None = None
    ) -> ChangeStream:
        """What changes in the live workspace, as it happens: a ``ChangeStream`` of
        ``ChangeEvent``s (paths, added/modified/deleted, causes) after the event
        ``after`` (None: from now on), naming the paths ``glob`` matches (as grep's
        file filter: ``*.py`` names, ``src/**`` paths). Iteration ends once no event
        came for ``timeout`` seconds (None: never). See docs/agents.md.

        Raises:
            InvalidArgumentError: ``after`` is no id of this feed's, or ``glob`` is
                malformed.
        """
        return self.change_feed().events(after, glob=glob, timeout=timeout)

    # -- access rules ------------------------------------------------------------

    @property
    def rules(self) -> AccessRules:
        """This workspace's access rules (``AccessRules``: ``add``, ``remove``,
        ``set``, ``in_force``); a fork's also holds those of its origin."""
        return self._rules

    def denials(self, path: str | None = None, *, after: int = 0) -> list[Denial]:
        """The changes the access rules refused, oldest first, with their causes (of
        ``path`` and below only, if given; numbered after ``after`` only). See
        ``AccessRules.denials``."""
        return self._rules.denials(None if path is None else self._normalize(path), after=after)

    # -- attribution -----------------------------------------------------------

    @staticmethod
    def attributed(cause: Cause | None) -> contextlib.AbstractContextManager[Cause | None]:
        """Attribute every change made in this thread or task to ``cause`` until the
        block ends (changes through the mount are attributed to their process).

        The cause lives in a context variable, so it is the same for every
        workspace: ``workspacefs.attributed(cause)`` does the same.
        """
        return _attributed(cause)

    @property
    def attribution(self) -> bool:
        """Whether changes are recorded with their cause (default True); settable.

        Off, the tree records no cause and a mount resolves no process: for
        measuring what attribution costs, or a workspace nobody will blame.
        """
        return self._live.attributing

    @attribution.setter
    def attribution(self, on: bool) -> None:
        self._live.attributing = bool(on)

    @property
    def blame_full_commands(self) -> bool:
        """Whether causes are recorded with their full command lines and labels
        (default False: with their secrets masked, see ``Cause.redacted``); settable,
        for the changes made from then on. Forks take it with the rest."""
        return self._live.blame_full_commands

    @blame_full_commands.setter
    def blame_full_commands(self, on: bool) -> None:
        self._live.blame_full_commands = bool(on)

    def changes(self, snapshot: FilesystemSnapshot | None = None) -> SnapshotChanges:
        """What ``snapshot`` changed since the snapshot before it (None: what the live
        workspace changed since its last snapshot), with the cause of each change.

        "The snapshot before it" is the nearest earlier one still kept on its
        line of history (its origin's too, for a fork), or, before a snapshot
        loaded from git, what git recorded. O(changes). Paths an access rule hides
        are left out (``recorded_changes`` has them).
        """
        return self._rules.shown_changes(self.recorded_changes(snapshot))

    def recorded_changes(self, snapshot: FilesystemSnapshot | None = None) -> SnapshotChanges:
        """``changes`` with every path, hidden ones too: what the workspace records of
        itself (its store's journal, the commits git persists), not a reader's view."""
        for step in self._steps(snapshot):
            return changes_of(step)
        return SnapshotChanges(snapshot, None, ())

    def history(
        self,
        snapshot: FilesystemSnapshot | None = None,
        *,
        anchors: Iterable[tuple[FilesystemSnapshot, Version]] = (),
        everything: bool = False,
    ) -> Iterator[SnapshotChanges]:
        """``changes`` of ``snapshot`` (None: the live workspace) and of every earlier
        snapshot on its line of history, newest first, lazily.

        Args:
            snapshot: Where to start.
            anchors: More versions to count changes from, with their records
                (e.g. the last one persisted, which the store may have dropped).
            everything: Paths an access rule hides too (see ``changes``).
        """
        for step in self._steps(snapshot, anchors):
            found = changes_of(step)
            yield found if everything else self._rules.shown_changes(found)

    def blame(self, path: str, *, snapshot: FilesystemSnapshot | None = None) -> list[BlameEntry]:
        """Every change to the file at ``path`` over the workspace's history, newest
        first: in which snapshot, added, modified or deleted, and by whom.

        Starts at ``snapshot`` (None: the live workspace, whose changes no
        snapshot holds yet come first with ``snapshot`` None). A path that
        never existed has no entries. O(depth) per snapshot.

        Raises:
            IsADirectoryError: ``path`` is a directory (blame the files in it).
        """
        norm = self._normalize(path)
        if self._rules.hidden_path("/" + norm if norm else ""):
            return []  # not there for this reader, nor is its history
        start = self._start(snapshot)
        with start.lock:
            ino = start.view.resolve_path(norm)
            if ino is not None and isinstance(start.view.get(ino), Directory):
                raise IsADirectoryFsError("is a directory", path)
        found = []
        for step in self._steps(snapshot, start=start):
            entry = blame_of(step, norm)
            if entry is not None:
                found.append(entry)
        return found

    def _start(self, snapshot: FilesystemSnapshot | None) -> Anchor:
        if snapshot is None:
            with self._live.lock:
                return Anchor(None, self._live, self._live.pending(), self._live.lock)
        version = self.version(snapshot)
        return Anchor(snapshot, version, version.lineage)

    def _steps(
        self,
        snapshot: FilesystemSnapshot | None,
        extra: Iterable[tuple[FilesystemSnapshot, Version]] = (),
        *,
        start: Anchor | None = None,
    ) -> Iterator[Step]:
        """The steps of ``history`` (see ``_history.walk``)."""
        start = start or self._start(snapshot)
        # Looked up in order: this workspace's, its origins', then ``extra`` (the first
        # that knows a lineage names its anchor).
        indexes: list[dict[Lineage, Anchor]] = []
        recorded: dict[Lineage, Recorded] = {}
        workspace: InMemoryFilesystem | None = self
        while workspace is not None:
            indexes.append(workspace._anchor_index())
            for lineage, found in list(workspace._recorded.items()):  # see _store.list
                recorded.setdefault(lineage, found)
            workspace = workspace._origin() if workspace._origin is not None else None
        more: dict[Lineage, Anchor] = {}
        for record, version in extra:
            more.setdefault(version.lineage, Anchor(record, version, version.lineage))
        return walk(start, ChainMap(*indexes, more), recorded)

    def _anchor_index(self) -> dict[Lineage, Anchor]:
        """Each lineage's oldest kept snapshot (see ``_anchors``), made without the tree
        lock: kept only if no snapshot was taken or deleted meanwhile."""
        index = self._anchors
        if index is not None:
            return index
        changed = self._anchors_changed
        index = {}
        for record in self._store.list():
            try:
                version = self._store.payload(record.snapshot_id)
            except SnapshotNotFoundError:  # deleted meanwhile
                continue
            index.setdefault(version.lineage, Anchor(record, version, version.lineage))
        with self._live.lock:
            if self._anchors_changed == changed:
                self._anchors = index
        return index

    def _forget_anchors(self) -> None:
        """After a snapshot left the store (or came back changed): the index is made
        again when next needed."""
        with self._live.lock:
            self._anchors = None
            self._anchors_changed += 1

    def at(self, snapshot: FilesystemSnapshot) -> TreeFilesystem:
        """A read-only ``Filesystem`` showing ``snapshot``, without restoring it (what
        this workspace's hidden rules cover is hidden there too)."""
        # An alias: space accounting then sees what the view holds (``Version.alias``).
        return TreeFilesystem(
            self.version(snapshot).alias(),
            mount_point=self.mount_point,
            limits=self.limits,
            rules=self._rules,
        )

    def snapshots(self) -> Sequence[FilesystemSnapshot]:
        """Every kept snapshot, in creation order."""
        return self._store.list()

    def delete_snapshot(self, snapshot: FilesystemSnapshot) -> None:
        """Forget a snapshot; memory no other version shares is freed."""
        self._store.delete(snapshot.snapshot_id)
        self._forgotten(snapshot)

    def _forgotten(self, snapshot: FilesystemSnapshot) -> None:
        """A snapshot left the store: drop the history recorded for it (which holds its
        version, so its data would stay in memory) and the anchors' index, and tell the
        observers."""
        for lineage, found in list(self._recorded.items()):
            record = found.anchor.record
            if record is not None and record.snapshot_id == snapshot.snapshot_id:
                self._recorded.pop(lineage, None)
        self._forget_anchors()
        for observer in self._observers:
            observer.snapshot_deleted(snapshot)

    def prune(self, policy: SnapshotRetentionPolicy, *, dry_run: bool = False) -> PruneResult:
        """Delete the snapshots ``policy`` expires, oldest first (with ``dry_run``, only
        name them); say what the space accounting expects that to free, and what the
        memory budget held before and after.

        A ``max_snapshot_bytes`` rule needs ``space_usage()`` (O(inodes +
        changes)), but only when the budget holds more than its limit: below
        that, the snapshots cannot hold more either. Saying what deleting frees
        needs it too, once anything is to be deleted.
        """
        doomed, space = self._expired(policy)
        held_before = self._live.budget.held if space is None else space.held
        freed = 0
        if doomed:
            space = space or self.space_usage()
            counted = {item.snapshot_id for item in space.snapshots}
            # A snapshot taken meanwhile, which the accounting did not see, frees nothing.
            freed = space.exclusive_bytes([s for s in doomed if s.snapshot_id in counted])
            held_before = space.held
        if not dry_run:
            self._delete(doomed)
        return PruneResult(tuple(doomed), dry_run, freed, held_before, self._live.budget.held)

    def _expired(
        self, policy: SnapshotRetentionPolicy
    ) -> tuple[list[FilesystemSnapshot], SpaceUsage | None]:
        """What ``policy`` expires, and the accounting its byte rule made (if it did)."""
        space = None
        limit = policy.max_snapshot_bytes
        if limit is not None and self._live.budget.held > limit:
            space = self.space_usage()
            # The snapshots it counted: one taken meanwhile waits for the next prune.
            records = [item.snapshot for item in space.snapshots]
        else:
            policy = dataclasses.replace(policy, max_snapshot_bytes=None)
            records = list(self._store.list())
        return policy.expired(records, space=space), space

    def _delete(self, snapshots: Iterable[FilesystemSnapshot]) -> None:
        for snapshot in snapshots:
            with contextlib.suppress(SnapshotNotFoundError):  # deleted meanwhile
                self._store.delete(snapshot.snapshot_id)
                self._forgotten(snapshot)

    def version(self, snapshot: FilesystemSnapshot) -> Version:
        """The frozen tree of a snapshot, for persistence and the FUSE layer."""
        if snapshot.workspace_id != self._workspace_id:
            raise SnapshotIncompatibleError(
                f"snapshot {snapshot.snapshot_id} belongs to another workspace", None
            )
        return self._store.payload(snapshot.snapshot_id)

    # -- hydration -------------------------------------------------------------

    def hydrate_from_host(
        self, mount: HostMount, *, allowed_roots: Sequence[str | os.PathLike[str]] = ()
    ) -> int:
        """Copy files from a host directory into the tree; return how many.

        Hydration sets the workspace up, so it works on a read-only one too.

        ``mount.host_path`` must lie inside one of ``allowed_roots`` (a
        relative one is looked up in each); anything else is refused.
        """
        from ._hydrate import hydrate  # a daemon resuming a store never hydrates: 7 ms

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
        # The owner's bulk change: no access rule binds it (they bind the doors).
        with tree.lock, self._rules.suspended():  # its release publishes what was touched
            before = tree.snapshot()
            try:
                yield tree
            except BaseException:
                tree.restore(before)
                raise


@contextlib.contextmanager
def _holding(outer: TreeLock, inner: TreeLock) -> Iterator[None]:
    """Hold two trees' locks, taken in one order for every pair (so two threads
    each holding one cannot wait for the other's) and released ``inner`` first:
    ``outer``'s release publishes what changed, which must happen holding
    neither (see ``TreeLock``)."""
    first, second = (outer, inner) if id(outer) < id(inner) else (inner, outer)
    first.__enter__()
    try:
        second.__enter__()
    except BaseException:
        first.__exit__(None, None, None)
        raise
    try:
        yield
    finally:
        try:
            inner.__exit__(None, None, None)
        finally:
            outer.__exit__(None, None, None)
