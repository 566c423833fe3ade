"""A durable workspace: an ``InMemoryFilesystem`` whose live tree and snapshots are
journalled to its store, and recovered from it when it is opened again.

``flush`` freezes the live tree (O(1)), and outside the tree lock writes one
``CHANGES`` record: the states of the inodes that differ from the last version it
wrote (``_changes``). Writers never wait for it: under the ``interval`` policy a
thread flushes and syncs every ``interval`` seconds while there are changes;
``sync`` is a durability point (everything before it is on disk when it returns);
every snapshot is one too, with its ``SNAPSHOT`` record (an undo point is never
lost); deleting a snapshot writes ``FORGET``.

Opening replays the journal into a new workspace: ``CHANGES`` records put their
states back, each ``SNAPSHOT`` record takes its snapshot again under the same record
(id, tag, parent, time), ``FORGET`` drops it. Replay stops at the first record that
is not intact and says so (``Recovery``); a torn last record was never acknowledged
and is dropped.
"""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import os
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pygit2

from .. import git
from .._errors import AlreadyExistsError, SnapshotIncompatibleError, StoreDamagedError
from ..fs import FilesystemSnapshot, InMemoryFilesystem
from ..tree import File, TreeView, Version
from ._changes import BlobOf, ChangesReplay, encode_changes
from ._directory import StoreDirectory
from ._journal import Journal, Reading, read_journal, segments, stop_before
from ._records import Damage, Kind, Record

log = logging.getLogger(__name__)

Counts = tuple[int, int, int]
"""A state's next inode number, file count and total bytes."""

DEFAULT_INTERVAL = 1.0
"""Seconds a change may wait for the disk under the ``interval`` policy."""


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
        blob_of: BlobOf | None = None,
    ) -> None:
        self.fs = fs
        self.store = store
        self.durability = durability
        self.interval = interval
        self._journal = journal
        # Lock order: the tree lock, then this one (a snapshot taken under the tree
        # lock journals itself); writing happens under this one alone.
        self._flushing = threading.Lock()
        with fs.tree.lock:
            frozen = fs.tree.track_changes()
        # A new store's first record holds every inode (written at the first flush, even
        # if nothing changed); later ones what changed.
        self._last: TreeView | None = None if fresh else frozen
        self._fresh = fresh
        self._blob_of = blob_of
        self._stop = threading.Event()
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

    @property
    def durable_through(self) -> int:
        """The sequence number of the last record on disk."""
        return self._journal.durable_through

    @property
    def synced_at(self) -> float | None:
        """When the last durability point that wrote anything was reached
        (``time.time()``; None: none yet in this process)."""
        return self._journal.synced_at

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
        with tree.lock:
            self._flushing.acquire()
            frozen = tree.freeze_changes()
            if frozen is None and self._last is None:
                # A new store's first record, though nothing changed: the workspace it
                # started with (else closed or killed before a change, it comes back empty).
                frozen = tree.track_changes(), set()
            counts = (tree.next_ino, tree.file_count, tree.total_bytes)
        try:
            if frozen is not None:
                self._write_changes(frozen[0], frozen[1], counts)
            sequence = self._journal.written_through
        finally:
            self._flushing.release()
        if sync:
            self._journal.sync(sequence)
        return sequence

    def sync(self) -> None:
        """A durability point: everything changed before it is on disk when it returns."""
        self.flush(sync=True)

    def _write_changes(self, after: TreeView, inodes: set[int], counts: Counts) -> None:
        """The group of ``CHANGES`` records from the last state written to ``after``;
        hold ``_flushing``."""
        if self._last is None:
            inodes = set(after.inodes())
        for payload in encode_changes(self._last, after, inodes, counts, self._blob_of):
            self._journal.append(Kind.CHANGES, payload)
        self._last = after

    # -- snapshots (SnapshotObserver) -----------------------------------------------------

    def snapshot_taken(self, record: FilesystemSnapshot, version: Any) -> Callable[[], None] | None:
        """Under the tree lock: note what the snapshot holds; the function returned
        journals it and returns once it is on disk."""
        assert isinstance(version, Version)
        tree = self.fs.tree
        self._flushing.acquire()  # the tree lock is held: the lock order holds
        # Every inode changed since the last freeze, a superset of those that differ
        # between the last state written and the snapshot; they stay recorded for the
        # next flush, which writes them again as the live tree has them then.
        inodes = tree.unfrozen_changes()
        counts = (tree.next_ino, version.file_count, version.total_bytes)

        def finish() -> None:
            try:
                self._write_changes(version, inodes, counts)
                sequence = self._journal.append(Kind.SNAPSHOT, _record_bytes(record))
            finally:
                self._flushing.release()
            self._journal.sync(sequence)

        return finish

    def snapshot_deleted(self, record: FilesystemSnapshot) -> None:
        """Journal that the snapshot is gone (on disk by the next durability point)."""
        with self._flushing:
            self._journal.append(Kind.FORGET, str(record.snapshot_id).encode())

    # -- lifecycle ------------------------------------------------------------------------

    def _flush_every_interval(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.flush(sync=True)
            except Exception:
                # The store's disk full or failing: said in the log, and raised by the
                # next durability point to its caller. Nothing more can be journalled.
                log.exception("journalling the workspace failed; it is no longer durable")
                return

    def close(self) -> None:
        """Journal and sync what is left, stop, and release the store; safe to call twice."""
        self._close(keep=True)

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
        self._stop_syncing()
        try:
            if keep:
                self.flush(sync=True)
        finally:
            self._stop_observing()
            self._journal.close()
            if not keep:
                for _, segment in segments(self.store.journal):
                    os.unlink(segment)
            self.store.close()

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
    **options: Any,
) -> tuple[DurableWorkspace, Recovery]:
    """Open the workspace kept in the store directory ``path`` (made if missing), with
    what its journal holds replayed; ``options`` go to ``InMemoryFilesystem``.

    Args:
        initial: Makes the workspace a store that holds none starts with (default:
            an empty one); refused on a store that holds one already.
        base: The git repository ``initial`` loads from (``git.load``): its files'
            bytes are journalled as blob ids, read from there on first use, never
            copied; the store keeps its path.

    Raises:
        BusyError: Another process has the store open.
        NotPermittedError: The store is not private to its owner.
        StoreDamagedError: The store is of another format.
        AlreadyExistsError: ``initial`` was given for a store holding a workspace.
    """
    store = StoreDirectory(path)
    try:
        reading = read_journal(store.journal)
        fresh = not reading.records
        if not fresh and initial is not None:
            raise AlreadyExistsError(
                "the store holds a workspace already: open it without a source to resume "
                "it, or discard it first",
                store.path,
            )
        if fresh:
            store.set_base(base)
        blobs = _BaseBlobs.of(store.base())
        if fresh and initial is not None:
            fs = initial()
            store.workspace_id(fs.workspace_id)
        else:
            new_id = store.workspace_id(uuid.uuid4().hex)
            fs = InMemoryFilesystem(workspace_id=new_id, **options)
        records, snapshots = _replay(fs, reading, blobs)
        journal = Journal.resume(store.journal, reading)
    except BaseException:
        store.close()
        raise
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
            blob_of=None if blobs is None else blobs.blob_of,
        )
    except BaseException:  # ``always`` syncs at once: the disk may be full
        with contextlib.suppress(OSError):
            journal.close()
        store.close()
        raise
    return durable, recovery


class _BaseBlobs:
    """The store's base repository, whose blobs the journal names instead of copying."""

    def __init__(self, repository: str) -> None:
        self.blobs = git.BlobStore(git.open_repository(repository))
        self.objects = self.blobs.objects

    @classmethod
    def of(cls, repository: str | None) -> _BaseBlobs | None:
        return None if repository is None else cls(repository)

    def blob_of(self, node: File) -> bytes | None:
        lazy = node.lazy
        if isinstance(lazy, git.BlobContent) and lazy.store.objects == self.objects:
            return lazy.key.raw
        return None

    def content_of(self, blob: bytes) -> git.BlobContent:
        return git.BlobContent(self.blobs, pygit2.Oid(raw=blob))


def _replay(fs: InMemoryFilesystem, reading: Reading, blobs: _BaseBlobs | None) -> tuple[int, int]:
    """Put what ``reading`` holds into ``fs``: (records applied, snapshots kept). A
    record that does not parse ends the reading there, as damage does; a group of
    ``CHANGES`` records without its final one (cut short) is dropped."""
    changes = ChangesReplay(fs.tree, None if blobs is None else blobs.content_of)
    kept: dict[str, FilesystemSnapshot] = {}
    applied = 0
    group_start: Record | None = None
    for record in list(reading.records):
        try:
            if record.kind is Kind.CHANGES:
                group_start = group_start or record
                if changes.add(record.payload):
                    group_start = None
            elif record.kind is Kind.SNAPSHOT:
                snapshot = _record_of(record.payload)
                fs.adopt_snapshot(snapshot)
                kept[str(snapshot.snapshot_id)] = snapshot
            elif record.kind is Kind.FORGET:
                doomed = kept.pop(record.payload.decode("ascii", "replace"), None)
                if doomed is not None:
                    with contextlib.suppress(OSError):
                        fs.delete_snapshot(doomed)
        except (StoreDamagedError, SnapshotIncompatibleError) as exc:
            stop_before(reading, group_start or record, str(exc))
            break
        if group_start is None:
            applied = reading.records.index(record) + 1
    else:
        if group_start is not None:  # the last group never ended: never acknowledged
            stop_before(reading, group_start, "a group of records cut short", torn=True)
    return applied, len(kept)


def _record_bytes(record: FilesystemSnapshot) -> bytes:
    return json.dumps(record.to_dict(), sort_keys=True).encode()


def _record_of(payload: bytes) -> FilesystemSnapshot:
    try:
        return FilesystemSnapshot.from_dict(json.loads(payload))
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreDamagedError(f"a snapshot record does not parse: {exc}", None) from exc
