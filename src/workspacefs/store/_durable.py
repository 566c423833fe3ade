"""A durable workspace: an ``InMemoryFilesystem`` whose live tree and snapshots are
journalled to its store, and recovered from it when it is opened again.

``flush`` freezes the live tree (O(1)), and outside the tree lock writes one
``CHANGES`` record: the states of the inodes that differ from the last version it
wrote (``_changes``). Writers never wait for it: under the ``interval`` policy a
thread flushes and syncs every ``interval`` seconds while there are changes;
``sync`` is a durability point (everything before it is on disk when it returns);
every snapshot is one too, with its ``SNAPSHOT`` record (an undo point is never
lost); deleting a snapshot writes ``FORGET``.

Opening replays the newest checkpoint (``_checkpoint``), then the journal after it,
into a new workspace: ``CHANGES`` records put their states back, each ``SNAPSHOT``
record takes its snapshot again under the same record (id, tag, parent, time) with
what it changed and who changed it (its blame), ``FORGET`` drops it. Replay stops at
the first record that is not intact and says so (``Recovery``); a torn last record
was never acknowledged and is dropped. The journal is folded into a checkpoint once
it has grown by ``CHECKPOINT_BYTES``, and when the workspace closes.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import json
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import git
from .._errors import (
    AlreadyExistsError,
    NoSpaceError,
    SnapshotIncompatibleError,
    StoreDamagedError,
    StoreError,
)
from ..fs import FilesystemSnapshot, InMemoryFilesystem, SnapshotChanges
from ..tree import File, Tree, TreeView, Version, collector_paused, mount_busy, thaw
from ._changes import PART_BYTES, ChangesReplay, encode_changes
from ._checkpoint import (
    CHECKPOINTS,
    Blobs,
    newest_checkpoint,
    older_checkpoints,
    store_repository,
    write_checkpoint,
)
from ._directory import SUMMARY, StoreDirectory
from ._interval import DEFAULT_INTERVAL
from ._journal import Journal, Reading, read_journal, segments, stop_before
from ._records import Damage, Kind
from ._writeback import candidates, write_back

log = logging.getLogger(__name__)

Counts = tuple[int, int, int]
"""A state's next inode number, file count and total bytes."""

_RECORD_DICTS = 4
"""Snapshot records kept as dicts (``DurableWorkspace._record_dict``)."""

CHECKPOINT_BYTES = 64 << 20
"""Journal bytes written since the last checkpoint that start one in the background,
once the mount has been quiet for ``QUIET_SECONDS``."""
BUSY_CHECKPOINT_BYTES = 4 * CHECKPOINT_BYTES
"""Journal bytes since the last checkpoint that start one even while the mount is busy
(bounding what a crash leaves to replay); its blobs are stored uncompressed."""
QUIET_NS = 1_000_000_000
"""How long the mount must have answered no request for a checkpoint to start."""
CLOSING_CHECKPOINT_BYTES = 1 << 20
"""Journal bytes since the last checkpoint past which closing writes one."""


class Durability(enum.Enum):
    """When changes reach the disk (besides every durability point: ``sync``, a
    snapshot, an ``fsync`` on a mount made with ``on_sync``, ``close``)."""

    INTERVAL = "interval"
    """Within ``interval`` seconds."""
    ALWAYS = "always"
    """Before the call that made them returns: every API call that changes the live
    tree syncs on its way out (a mount does the same per request with ``on_change``)."""
    REQUESTED = "requested"
    """Only at durability points."""


@dataclass(frozen=True, slots=True)
class Recovery:
    """What opening a store found."""

    records: int
    """Records replayed."""
    snapshots: int
    """Snapshots restored (those not deleted later)."""
    damage: Damage | None = None
    """Where replay stopped before the journal's end, and why (None: it read all)."""
    set_aside: list[str] = field(default_factory=list)
    """Journal files kept beside the journal because of ``damage`` (``*.damaged``)."""

    @property
    def lost_records(self) -> bool:
        """True if intact records may follow the damage: acknowledged work was lost."""
        return self.damage is not None and not self.damage.torn


class DurableWorkspace:
    """The journal of one workspace, open on its store; ``close`` syncs and releases it.

    Use ``open_workspace`` to make one.
    """

    def __init__(
        self,
        fs: InMemoryFilesystem,
        store: StoreDirectory,
        journal: Journal,
        *,
        durability: Durability,
        interval: float,
        fresh: bool = False,
        blobs: Blobs | None = None,
        checkpoints: bool = True,
        payloads: dict[str, bytes] | None = None,
        replayed: int = 0,
    ) -> None:
        self.fs = fs
        self.store = store
        self.durability = durability
        self.interval = interval
        self._journal = journal
        # Lock order: the tree lock, then this one (a snapshot taken under the tree
        # lock journals itself); writing happens under this one alone.
        self._flushing = threading.Lock()
        self._flushing_owner: int | None = None  # the thread holding it (see _make_room)
        with fs.tree.lock:
            frozen: TreeView | None = None
            if fresh and fs.tree.unlisted:
                # A tree still being listed (``git.load(background=True)``): freezing it
                # would list it all now. A new store freezes nothing until its first
                # record, which waits for the listing (``_flush_every_interval``).
                fs.tree.start_tracking()
            else:
                frozen = fs.tree.track_changes()
        # A new store's first record holds every inode (written at the first flush, even
        # if nothing changed); later ones what changed.
        self._last: TreeView | None = None if fresh else frozen
        # The counts the journal last gave with it (None: not known here, as on opening).
        self._last_counts: Counts | None = None
        self._record_dicts: dict[uuid.UUID, dict[str, Any]] = {}  # see ``_record_dict``
        self._fresh = fresh
        self._blobs = blobs or Blobs(store_repository(store.path, store.base()))
        # The snapshots a checkpoint holds: those kept, oldest first (record, version).
        payloads = payloads or {}
        self._kept: dict[str, tuple[bytes, Version]] = {
            str(record.snapshot_id): (
                payloads.get(str(record.snapshot_id)) or _snapshot_bytes(record, None),
                fs.version(record),
            )
            for record in fs.snapshots()
        }
        # Those a new store's workspace came with or adopts (a load's), not journalled
        # yet: ``_write_loaded`` writes them before the first record.
        self._loaded: set[str] = set(self._kept) if fresh else set()
        self._checkpointing = threading.Lock()
        self._checkpointer: threading.Thread | None = None
        # Journal bytes since the last checkpoint, those replayed included: a long
        # tail found at open is folded soon, and a crash after it replays little.
        self._since_checkpoint = replayed
        self._checkpoints = checkpoints
        # Write-back (``_writeback``): inodes whose nodes may hold data no blob holds,
        # in the states the journal wrote; its own repository handle and pack writer,
        # so that it may run beside a checkpoint. Lock order: the tree lock, then
        # ``_cleaning``, then ``_flushing``.
        self._cleaning = threading.Lock()
        self._cleaner: threading.Thread | None = None
        # Frozen states being journalled now (by the holder of ``_flushing``), and
        # their changed inodes: write-back covers them too.
        self._pending: list[tuple[TreeView, set[int]]] = []
        self._unclean: set[int] = {
            ino
            for view in [*([] if frozen is None else [frozen]), *fs.tree.versions()]
            for ino in view.inodes()
            if isinstance(node := view.get(ino), File)
            and node.backing is None
            and node.resident() is not None
        }
        # Data replayed (or loaded) dirty counts as new: past a quarter of the budget,
        # write-back starts at once (below).
        self._since_clean = fs.tree.budget.held if self._unclean else 0
        self._cleaned = Blobs(store_repository(store.path, store.base()))
        self._stop = threading.Event()
        self._residency = fs.tree.budget.residency
        self._residency.enable(self._blobs.keeps, self._make_room)
        self._stop_observing = fs.observe_snapshots(self)
        self._stop_syncing: Callable[[], None] = lambda: None
        if durability is Durability.ALWAYS:
            self._stop_syncing = fs.subscribe(lambda _: self.sync())
            self.sync()  # what it starts with too (a new store's first record)
        self._thread: threading.Thread | None = None
        if durability is Durability.INTERVAL:
            self._thread = threading.Thread(
                target=self._flush_every_interval, name="workspacefs-journal", daemon=True
            )
            self._thread.start()
        self._clean_when_due()

    @property
    def durable_through(self) -> int:
        """The sequence number of the last record on disk."""
        return self._journal.durable_through

    @property
    def synced_at(self) -> float | None:
        """When the last durability point that wrote anything was reached
        (``time.time()``; None: none yet in this process)."""
        return self._journal.synced_at

    def check_writable(self) -> None:
        """Refuse a change the journal could not take: once writing it failed (the
        store's disk full), every change is refused until the store is opened again,
        so nothing more reaches memory than the disk has been offered.

        Raises:
            NoSpaceError: The store's disk was full.
            StoreError: Writing the journal failed otherwise.
        """
        failure = self._journal.failure
        if failure is None:
            return
        kind = NoSpaceError if failure.errno in (errno.ENOSPC, errno.EDQUOT) else StoreError
        raise kind(
            f"the workspace's store could not take a change ({failure.strerror}): changes "
            "are refused until it is opened again (unmount, free space, mount --name)",
            self.store.path,
        )

    def flush(self, *, sync: bool = True) -> int:
        """Journal what changed since the last record (nothing if nothing did); with
        ``sync``, return once it and everything before it is on disk. The last record's
        sequence number.

        Raises:
            NoSpaceError: The store's disk is full (the journal then refuses every
                later write until the store is opened again).
            StoreError: Writing the journal failed, now or earlier.
        """
        tree = self.fs.tree
        # Unpublished: a freeze changes nothing a subscriber must hear of, and it must
        # go on when the tree refuses callers (its mount was lost): what is in memory
        # is still to be journalled.
        with tree.lock.unpublished:
            self._hold_flushing()
            frozen = self._freeze()
            counts = (tree.next_ino, tree.file_count, tree.total_bytes)
        try:
            if frozen is not None:
                self._write_changes(frozen[0], frozen[1], counts)
            sequence = self._journal.written_through
        finally:
            self._drop_flushing()
        if sync:
            self._journal.sync(sequence)
        self._clean_when_due()
        return sequence

    def sync(self) -> None:
        """A durability point: everything changed before it is on disk when it returns."""
        self.flush(sync=True)

    def _freeze(self) -> tuple[TreeView, set[int]] | None:
        """Under the tree lock and ``_flushing``: the live tree frozen, with what changed
        since the last freeze (None: nothing did, and the store holds the workspace)."""
        tree = self.fs.tree
        frozen = tree.freeze_changes()
        if frozen is None and self._last is None:
            # A new store's first record, though nothing changed: the workspace it
            # started with (else closed or killed before a change, it comes back empty).
            frozen = tree.track_changes(), set()
        return frozen

    def _write_changes(self, after: TreeView, inodes: set[int], counts: Counts) -> None:
        """The group of ``CHANGES`` records from the last state written to ``after``
        (none if ``after`` is that state, as for a snapshot taken right after
        another); hold ``_flushing``."""
        last = self._last
        if last is not None and counts == self._last_counts:
            # Frozen nodes never change: the very nodes ``last`` holds are its state.
            get_last, get_after = last.get, after.get
            if all(get_last(ino) is get_after(ino) for ino in inodes):
                self._last = after
                return
        if self._last is None:
            self._write_loaded(counts)
            if self._last is None:
                inodes = set(after.inodes())
            # Else ``inodes``, changed since the tree began tracking (before any load's
            # snapshot was adopted, or with nothing between), covers what differs.
        self._write_group(after, inodes, counts)

    def _write_loaded(self, counts: Counts) -> None:
        """Before a new store's first record: the snapshots its workspace came with (a
        load's, adopted at once or once listed in the background), each journalled as
        its state and a ``SNAPSHOT`` record, as if taken then; the live tree's record
        follows as what changed since."""
        for record in self.fs.snapshots():
            key = str(record.snapshot_id)
            if key not in self._loaded:
                continue  # replayed from the store, or taken (``snapshot_taken``)
            version = self.fs.version(record)
            last = self._last
            if isinstance(last, Version):
                state = Tree.changes_between(last, version)
            else:
                state = set(version.inodes())
            self._write_group(version, state, (counts[0], version.file_count, version.total_bytes))
            data = _snapshot_bytes(record, None)
            self._journal.append(Kind.SNAPSHOT, data)
            self._kept[key] = (data, version)
        self._loaded = set()

    def _write_group(self, after: TreeView, inodes: set[int], counts: Counts) -> None:
        """``_write_changes`` once the first record's states are written."""
        self._pending.append((after, inodes))  # write-back may clean them meanwhile
        try:
            parts = encode_changes(
                self._last, after, inodes, counts, self._blobs.stored, record_bytes(self.fs)
            )
            for payload in parts:
                self._journal.append(Kind.CHANGES, payload)
                self._since_checkpoint += len(payload)
                self._since_clean += len(payload)
        finally:
            self._pending.pop()
        self._last, self._last_counts = after, counts
        self._unclean |= inodes

    # -- snapshots (SnapshotObserver) -----------------------------------------------------

    def _record_dict(self, record: FilesystemSnapshot) -> dict[str, Any]:
        """``record.to_dict()``, kept for the next few snapshots' records (a record is
        written with its base, the snapshot before it: a recorded tool call's snapshot
        after has its snapshot before as base); hold ``_flushing``. Records never change."""
        made = self._record_dicts.get(record.snapshot_id)
        if made is None:
            made = self._record_dicts[record.snapshot_id] = record.to_dict()
            while len(self._record_dicts) > _RECORD_DICTS:
                del self._record_dicts[next(iter(self._record_dicts))]
        return made

    def snapshot_taken(self, record: FilesystemSnapshot, version: Any) -> Callable[[], None] | None:
        """Under the tree lock: note what the snapshot holds; the function returned
        journals it and returns once it is on disk."""
        assert isinstance(version, Version)
        tree = self.fs.tree
        self._hold_flushing()  # the tree lock is held: the lock order holds
        # Every inode changed since the last freeze, a superset of those that differ
        # between the last state written and the snapshot; they stay recorded for the
        # next flush, which writes them again as the live tree has them then.
        inodes = tree.unfrozen_changes()
        counts = (tree.next_ino, version.file_count, version.total_bytes)

        def finish() -> None:
            try:
                # What it changed, with the causes (blame): from frozen versions, no
                # tree lock taken, so holding ``_flushing`` here keeps the lock order.
                # The comparison may load files: write-back may clean the snapshot's.
                self._pending.append((version, inodes))
                try:
                    changes = self.fs.recorded_changes(record)
                finally:
                    self._pending.pop()
                self._write_changes(version, inodes, counts)
                data = _snapshot_bytes(record, changes, self._record_dict)
                sequence = self._journal.append(Kind.SNAPSHOT, data)
                self._kept[str(record.snapshot_id)] = (data, version)
            finally:
                self._drop_flushing()
            self._journal.sync(sequence)

        return finish

    def snapshot_adopted(self, record: FilesystemSnapshot, version: Any) -> None:
        """Under the tree lock: a load adopted its state as ``record`` (in the background,
        once listed: before the first record, whose freeze lists all first)."""
        self._loaded.add(str(record.snapshot_id))

    def snapshot_deleted(self, record: FilesystemSnapshot) -> None:
        """Journal that the snapshot is gone (on disk by the next durability point)."""
        self._hold_flushing()
        try:
            self._journal.append(Kind.FORGET, str(record.snapshot_id).encode())
            self._kept.pop(str(record.snapshot_id), None)
        finally:
            self._drop_flushing()

    # -- checkpoints ----------------------------------------------------------------------

    def checkpoint(self) -> int:
        """Fold the journal into a checkpoint (``_checkpoint``): opening the store then
        replays it and the records after it, not the whole journal; the journal's
        segments it covers are removed. The last sequence number it covers.

        Writers go on meanwhile: only journalling what changed so far holds them.

        Raises:
            NoSpaceError: The store's disk is full (the journal is left as it was).
        """
        with self._checkpointing:
            tree = self.fs.tree
            with tree.lock.unpublished:  # as in ``flush``
                self._hold_flushing()
                frozen = self._freeze()
                counts = (tree.next_ino, tree.file_count, tree.total_bytes)
            try:
                if frozen is not None:
                    self._write_changes(*frozen, counts)
                covers = self._journal.written_through
                live, kept = self._last, list(self._kept.values())
                self._last_counts = counts  # what the checkpoint gives ``live``
                self._since_checkpoint = 0
            finally:
                self._drop_flushing()
            assert live is not None, "written above"
            self._journal.sync(covers)
            write_checkpoint(
                self.store.path, covers, kept, live, counts, self._blobs, record_bytes(self.fs)
            )
            for older in older_checkpoints(self.store.path, covers):
                shutil.rmtree(older, ignore_errors=True)
            self._journal.remove_through(covers)
            self._summarize(counts)
            return covers

    def _summarize(self, counts: Counts) -> None:
        """Say in the store how big the workspace is (``list --all`` reads it)."""
        summary = {"files": counts[1], "bytes": counts[2]}
        try:
            self.store.set_setting(SUMMARY, json.dumps(summary))
        except OSError as exc:  # a full disk: only what list --all shows is missing
            log.warning("could not write the summary of %s: %s", self.store.path, exc.strerror)

    def _checkpoint_in_background(self, *, compress: bool) -> None:
        """Start a checkpoint in a thread of its own, unless one runs (``compress``:
        its blobs at the repository's usual zlib level, else stored)."""
        if self._checkpointer is not None and self._checkpointer.is_alive():
            return

        def run() -> None:
            try:
                self._blobs.compression = git.DEFAULT_COMPRESSION if compress else 0
                self.checkpoint()
            except Exception:
                # The journal is intact and goes on: only opening stays slow.
                log.warning(
                    "checkpointing the workspace failed; its journal goes on", exc_info=True
                )

        self._checkpointer = threading.Thread(target=run, name="workspacefs-checkpoint")
        self._checkpointer.start()

    # -- write-back (memory as a cache) ---------------------------------------------------

    def _hold_flushing(self) -> None:
        self._flushing.acquire()
        self._flushing_owner = threading.get_ident()

    def _drop_flushing(self) -> None:
        self._flushing_owner = None
        self._flushing.release()

    def _make_room(self, nbytes: int, writer: object) -> None:
        """The residency's ``clean``: eviction alone could not make room for a write or
        a load, so write dirty data back until about ``nbytes`` more are clean (a
        quarter of the budget at least, so that the writes after this one find room),
        the file ``writer`` changes excepted. Runs in the thread that needs the room."""
        if self._stop.is_set():
            return
        limit = self.fs.tree.budget.limit or 0
        self._write_back(max(nbytes, limit // 4), writer)

    def _write_back(self, enough: int | None, writer: object, *, take_lock: bool = True) -> None:
        """Write back the data of the files changed since the last write-back (``enough``
        bytes of it; None: all), so that it may leave memory when room is needed.

        With the tree lock (the caller's, or taken if free), the live tree's changed
        files are cleaned as well as the frozen states'. A thread that is journalling
        (it holds ``_flushing``: a flush, a snapshot comparing what it changed) cleans
        only if no write-back runs: it cannot wait for one, which may wait for it.
        """
        tree = self.fs.tree
        journalling = self._flushing_owner == threading.get_ident()
        if not self._cleaning.acquire(blocking=not journalling):
            return
        # The live tree's changed files may be written back only under its lock: the
        # caller's, or taken now if free (a load outside it, a fork's write: waiting
        # for it could deadlock with its holder, who may wait for this thread). Not
        # in the background: the mount would wait for the writing.
        live = tree.lock.owned()
        taken_here = not live and take_lock and tree.lock.try_hold()
        live = live or taken_here
        try:
            taken, views, pending = self._dirty_states(journalling)
            inodes = sorted(taken)
            extra = set(pending)
            if live:
                extra |= tree.unfrozen_changes()
                views.append(tree)
            inodes += sorted(extra - taken)
            try:
                done = write_back(self._cleaned, candidates(inodes, views, writer), enough)
            except OSError as exc:
                self._settle(taken, journalling)  # all still dirty
                log.warning("could not write data back to %s: %s", self.store.path, exc.strerror)
                return
            except BaseException:
                self._settle(taken, journalling)
                raise
            self._settle(taken - done, journalling)
        finally:
            if taken_here:
                tree.lock.release_hold()
            self._cleaning.release()

    def _dirty_states(self, journalling: bool) -> tuple[set[int], list[TreeView], set[int]]:
        """The inodes write-back has not covered (taken: those changed from now on
        gather anew), the frozen states they are in, and the inodes of states being
        journalled now."""
        if not journalling:
            self._hold_flushing()
        try:
            # Every frozen state the data may be in: the journal's, the snapshots', and
            # any other version still alive (a view, a fork's origin, a deleted
            # snapshot something still holds): frozen nodes never change.
            views: list[TreeView] = [] if self._last is None else [self._last]
            views += [view for view, _ in self._pending]
            views += [version for _, version in self._kept.values()]
            known = {id(view) for view in views}
            views += [v for v in self.fs.tree.versions() if id(v) not in known]
            pending = set().union(*(inodes for _, inodes in self._pending))
            self._since_clean = 0
            taken, self._unclean = self._unclean, set()
            return taken, views, pending
        finally:
            if not journalling:
                self._drop_flushing()

    def _settle(self, still_dirty: set[int], journalling: bool) -> None:
        """Give back to the next write-back the inodes this one did not get through."""
        if not still_dirty:
            return
        if not journalling:
            self._hold_flushing()
        try:
            self._unclean |= still_dirty
        finally:
            if not journalling:
                self._drop_flushing()

    def _clean_when_due(self) -> None:
        """Start write-back in the background once the journal has taken a quarter of
        the memory budget since it last ran, so that writers seldom wait for it."""
        limit = self.fs.tree.budget.limit
        if limit is None or self._since_clean * 4 < limit or self._stop.is_set():
            return
        if self._cleaner is not None and self._cleaner.is_alive():
            return

        def run() -> None:
            try:
                self._write_back(None, None, take_lock=False)
            except Exception:
                log.warning("writing data back failed", exc_info=True)

        self._cleaner = threading.Thread(target=run, name="workspacefs-writeback", daemon=True)
        self._cleaner.start()

    # -- lifecycle ------------------------------------------------------------------------

    def _flush_every_interval(self) -> None:
        while not self._stop.wait(self.interval):
            if self.fs.tree.unlisted:
                # Still being listed, and not changed (a change lists it all first): the
                # first record waits, rather than list it all here (``tree.Unlisted``).
                continue
            try:
                self.flush(sync=True)
                self._journal.lengthen()
                if self._checkpoints and self._since_checkpoint > CHECKPOINT_BYTES:
                    # A burst of writes (an archive extracted, a build) is not slowed by
                    # folding it while it goes on: the checkpoint waits for a pause.
                    quiet = not mount_busy(QUIET_NS)
                    if quiet or self._since_checkpoint > BUSY_CHECKPOINT_BYTES:
                        self._checkpoint_in_background(compress=quiet)
            except Exception:
                # The store's disk full or failing: said in the log, and raised by the
                # next durability point to its caller. Nothing more can be journalled.
                log.exception("journalling the workspace failed; it is no longer durable")
                return

    def close(self) -> None:
        """Journal and sync what is left, stop, and release the store; safe to call twice."""
        self._close(keep=True)

    def _keep_the_rest(self) -> None:
        """Closing: journal what changed since the last record, as a checkpoint if the
        journal has grown (the next open then replays little)."""
        if self._journal.failure is not None:
            # Said when it failed; what it holds is what the next open finds.
            log.warning("closing %s without journalling what changed since", self.store.path)
            return
        if self._checkpoints and self._since_checkpoint > CLOSING_CHECKPOINT_BYTES:
            try:
                self.checkpoint()
                return
            except OSError as exc:  # the journal holds it all: only the next open is slower
                log.warning("no checkpoint of %s on closing: %s", self.store.path, exc.strerror)
        self.flush(sync=True)
        tree = self.fs.tree
        self._summarize((tree.next_ino, tree.file_count, tree.total_bytes))

    def abandon(self) -> None:
        """Close; if the store held no workspace when it was opened, leave it so: what
        was journalled since is deleted. For a caller that could not start serving a
        new workspace (its start can then be tried again, with a source)."""
        self._close(keep=not self._fresh)

    def _close(self, *, keep: bool) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._checkpointer is not None:
            self._checkpointer.join()
        if self._cleaner is not None:
            self._cleaner.join()
        # What was evicted stays readable from the store's objects; nothing leaves now.
        self._residency.disable()
        self._stop_syncing()
        try:
            if keep:
                self._keep_the_rest()
        finally:
            self._stop_observing()
            self._journal.close()
            if not keep:
                for _, segment in segments(self.store.journal):
                    os.unlink(segment)
            self.store.close()
            thaw()  # what opening froze (``collector_paused``)

    def __enter__(self) -> DurableWorkspace:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def open_workspace(
    path: str,
    *,
    durability: Durability = Durability.INTERVAL,
    interval: float = DEFAULT_INTERVAL,
    initial: Callable[[], InMemoryFilesystem] | None = None,
    base: str | None = None,
    checkpoints: bool = True,
    **options: Any,
) -> tuple[DurableWorkspace, Recovery]:
    """Open the workspace kept in the store directory ``path`` (made if missing), with
    what its journal holds replayed; ``options`` go to ``InMemoryFilesystem``. Its
    ``memory_budget`` is a cache target: data the store holds leaves memory to make
    room and is read back on access (docs/memory.md, *Memory as a cache*).

    Args:
        initial: Makes the workspace a store that holds none starts with (default:
            an empty one); refused on a store that holds one already.
        base: The git repository ``initial`` loads from (``git.load``): its files'
            bytes are journalled as blob ids, read from there on first use, never
            copied; the store keeps its path.
        checkpoints: Fold the journal into a checkpoint when it has grown by
            ``CHECKPOINT_BYTES`` and on ``close`` (False: only when ``checkpoint``
            is called).

    Raises:
        BusyError: Another process has the store open.
        NotPermittedError: The store is not private to its owner.
        StoreDamagedError: The store is of another format.
        AlreadyExistsError: ``initial`` was given for a store holding a workspace.
    """
    store = StoreDirectory(path)
    try:
        with collector_paused():  # building every inode, then leaving them to refcounts
            return _open(store, durability, interval, initial, base, checkpoints, options)
    except BaseException:
        store.close()
        raise


def _open(
    store: StoreDirectory,
    durability: Durability,
    interval: float,
    initial: Callable[[], InMemoryFilesystem] | None,
    base: str | None,
    checkpoints: bool,
    options: dict[str, Any],
) -> tuple[DurableWorkspace, Recovery]:
    """``open_workspace`` on a store it has locked (closed by the caller on failure)."""
    path = store.path
    if initial is not None and os.path.isdir(os.path.join(store.path, CHECKPOINTS)):
        raise _held(store)
    found = newest_checkpoint(store.path)
    # Read once, from the checkpoint on: the records it covers are only framed.
    reading = read_journal(store.journal, after=0 if found is None else found.covers)
    if initial is not None and reading.records:
        raise _held(store)
    fresh = found is None and not reading.records
    if fresh:
        store.set_base(base)
    blobs = Blobs(store_repository(store.path, store.base()))
    if fresh and initial is not None:
        fs = initial()
        store.workspace_id(fs.workspace_id)
    else:
        new_id = store.workspace_id(uuid.uuid4().hex)
        fs = InMemoryFilesystem(workspace_id=new_id, **options)
    replay = _Replay(fs, blobs)
    # Replay puts back states the workspace held, whatever the budget: a file changed
    # since it was written back is its blob loaded and changed again, and refusing
    # that would leave the store unopenable. Write-back brings it within the budget
    # once the workspace serves (``DurableWorkspace``).
    budget = fs.tree.budget
    limit, budget.limit = budget.limit, None
    try:
        if found is not None:
            replay.read(found.reading)
            if found.reading.damage is not None:
                raise StoreDamagedError(found.reading.damage.reason, store.path)
        records = replay.read(reading)
    finally:
        budget.limit = limit
    snapshots = len(replay.kept)
    journal = Journal.resume(store.journal, reading)
    if reading.damage is not None:
        level = logging.WARNING if reading.damage.torn else logging.ERROR
        log.log(
            level,
            "the journal of %s stops at %s, offset %d: %s",
            path,
            reading.damaged_segment,
            reading.damage.offset,
            reading.damage.reason,
        )
    recovery = Recovery(records, snapshots, reading.damage, journal.set_aside)
    try:
        durable = DurableWorkspace(
            fs,
            store,
            journal,
            durability=durability,
            interval=interval,
            fresh=fresh,
            blobs=blobs,
            checkpoints=checkpoints,
            payloads=replay.payloads,
            replayed=sum(len(record.payload) for record in reading.records),
        )
    except BaseException:  # ``always`` syncs at once: the disk may be full
        with contextlib.suppress(OSError):
            journal.close()
        raise
    return durable, recovery


def _held(store: StoreDirectory) -> AlreadyExistsError:
    """The error for a source given to a store that holds a workspace already."""
    return AlreadyExistsError(
        "the store holds a workspace already: open it without a source to resume it, "
        "or discard it first",
        store.path,
    )


class _Replay:
    """Puts journal readings into ``fs``, a checkpoint's first, then the journal's:
    the snapshots they keep, and the changes each made (its blame) as recorded."""

    def __init__(self, fs: InMemoryFilesystem, blobs: Blobs) -> None:
        self.fs = fs
        self.blobs = blobs
        self.kept: dict[str, FilesystemSnapshot] = {}
        self.payloads: dict[str, bytes] = {}
        """The ``SNAPSHOT`` payload of each kept snapshot (what a checkpoint writes again)."""
        self.history: list[SnapshotChanges] = []  # newest first

    def read(self, reading: Reading) -> int:
        """Apply ``reading``'s records; how many. A record that does not parse ends
        the reading there, as damage does; a group of ``CHANGES`` records without its
        final one (cut short) is dropped."""
        changes = ChangesReplay(self.fs.tree, self.blobs.content_of)
        applied = 0
        group_start: int | None = None
        for index, record in enumerate(reading.records):
            try:
                if record.kind is Kind.CHANGES:
                    group_start = index if group_start is None else group_start
                    if changes.add(record.payload):
                        group_start = None
                elif record.kind is Kind.SNAPSHOT:
                    self._snapshot(record.payload)
                elif record.kind is Kind.FORGET:
                    self._forget(record.payload)
            except (StoreDamagedError, SnapshotIncompatibleError) as exc:
                at = index if group_start is None else group_start
                stop_before(reading, reading.records[at], str(exc))
                return applied
            if group_start is None:
                applied = index + 1
        if group_start is not None:  # the last group never ended: never acknowledged
            start = reading.records[group_start]
            stop_before(reading, start, "a group of records cut short", torn=True)
        return applied

    def _snapshot(self, payload: bytes) -> None:
        snapshot, changes = _snapshot_of(payload)
        if changes is not None:
            self.history.insert(0, changes)
        history = tuple(self.history) if changes is not None else None
        self.fs.adopt_snapshot(snapshot, history=history)
        self.kept[str(snapshot.snapshot_id)] = snapshot
        self.payloads[str(snapshot.snapshot_id)] = payload

    def _forget(self, payload: bytes) -> None:
        name = payload.decode("ascii", "replace")
        self.payloads.pop(name, None)
        doomed = self.kept.pop(name, None)
        if doomed is not None:
            with contextlib.suppress(OSError):
                self.fs.delete_snapshot(doomed)


def record_bytes(fs: InMemoryFilesystem) -> int:
    """How much a ``CHANGES`` record holds at most: a 64th of the memory budget, between
    1 MiB and ``PART_BYTES`` (a record holds the chunks it names until it is written,
    and its own fields besides, outside the budget)."""
    return max(1 << 20, min(PART_BYTES, fs.memory_budget // 64))


def _snapshot_bytes(
    record: FilesystemSnapshot,
    changes: SnapshotChanges | None,
    record_dict: Callable[[FilesystemSnapshot], dict[str, Any]] = FilesystemSnapshot.to_dict,
) -> bytes:
    """A ``SNAPSHOT`` record's payload: the snapshot's record and what it changed, with
    the causes (``git``'s history format), so blame comes back with it. ``record_dict``
    as ``git.history_document`` takes it."""
    document: dict[str, Any] = {"record": record_dict(record)}
    if changes is not None:
        document["changes"] = git.history_document([changes], record_dict)
    return json.dumps(document, sort_keys=True).encode()


def _snapshot_of(payload: bytes) -> tuple[FilesystemSnapshot, SnapshotChanges | None]:
    try:
        document = json.loads(payload)
        if "record" not in document:  # written before records held their changes
            return FilesystemSnapshot.from_dict(document), None
        changes = document.get("changes")
        steps = None if changes is None else git.decode_history(json.dumps(changes).encode())
        return FilesystemSnapshot.from_dict(document["record"]), steps[0] if steps else None
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise StoreDamagedError(f"a snapshot record does not parse: {exc}", None) from exc
