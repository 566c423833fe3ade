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
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from .._errors import StoreDamagedError
from ..fs import FilesystemSnapshot, InMemoryFilesystem
from ..tree import Version
from ._changes import apply_changes, encode_changes
from ._directory import StoreDirectory
from ._journal import Journal, Reading, read_journal
from ._records import Damage, Kind

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 1.0
"""Seconds a change may wait for the disk under the ``interval`` policy."""


class Durability(enum.Enum):
    """When changes reach the disk."""

    INTERVAL = "interval"
    """Within ``interval`` seconds, and at every durability point."""
    NONE = "none"
    """Only when asked (``sync``, a snapshot): for throwaway workspaces."""


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
        last: Version | None,
        *,
        durability: Durability,
        interval: float,
    ) -> None:
        self.fs = fs
        self.store = store
        self.durability = durability
        self.interval = interval
        self._journal = journal
        self._last = last
        self._flushing = threading.Lock()  # one record at a time, in freeze order
        self._stop = threading.Event()
        self._stop_observing = fs.observe_snapshots(self)
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

    def flush(self, *, sync: bool = True) -> int:
        """Journal what changed since the last record (nothing if nothing did); with
        ``sync``, return once it and everything before it is on disk. The last record's
        sequence number."""
        tree = self.fs.tree
        with self._flushing:
            with tree.lock:
                last = self._last
                if last is None or not tree.unchanged_since(last):
                    version = tree.snapshot()
                    counts = (tree.next_ino, tree.file_count, tree.total_bytes)
                else:
                    version = None
            if version is not None:
                self._write_changes(last, version, counts)
            sequence = self._journal.written_through
        if sync:
            self._journal.sync(sequence)
        return sequence

    def sync(self) -> None:
        """A durability point: everything changed before it is on disk when it returns."""
        self.flush(sync=True)

    def _write_changes(
        self, last: Version | None, version: Version, counts: tuple[int, int, int]
    ) -> None:
        """One ``CHANGES`` record from ``last`` to ``version``; hold ``_flushing``."""
        tree = self.fs.tree
        inodes = set(version.inodes()) if last is None else tree.changes_between(last, version)
        self._journal.append(Kind.CHANGES, encode_changes(last, version, inodes, counts))
        self._last = version

    # -- snapshots (SnapshotObserver) -----------------------------------------------------

    def snapshot_taken(self, record: FilesystemSnapshot, version: Any) -> None:
        """Journal the snapshot and what it holds; return once it is on disk."""
        assert isinstance(version, Version)
        tree = self.fs.tree
        with self._flushing:
            with tree.lock:
                counts = (tree.next_ino, version.file_count, version.total_bytes)
            if self._last is None or self._last is not version:
                self._write_changes(self._last, version, counts)
            sequence = self._journal.append(Kind.SNAPSHOT, _record_bytes(record))
        self._journal.sync(sequence)

    def snapshot_deleted(self, record: FilesystemSnapshot) -> None:
        """Journal that the snapshot is gone (on disk by the next durability point)."""
        with self._flushing:
            self._journal.append(Kind.FORGET, str(record.snapshot_id).encode())

    # -- lifecycle ------------------------------------------------------------------------

    def _flush_every_interval(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.flush(sync=True)
            except OSError:
                # The store's disk full or failing: said in the log, and again by the
                # next durability point, which raises it to its caller.
                log.exception("journalling the workspace failed")

    def close(self) -> None:
        """Journal and sync what is left, stop, and release the store; safe to call twice."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            self.flush(sync=True)
        finally:
            self._stop_observing()
            self._journal.close()
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
    **options: Any,
) -> tuple[DurableWorkspace, Recovery]:
    """Open the workspace kept in the store directory ``path`` (made if missing), with
    what its journal holds replayed; ``options`` go to ``InMemoryFilesystem``.

    Raises:
        BusyError: Another process has the store open.
        NotPermittedError: The store is not private to its owner.
        StoreDamagedError: The store is of another format, or a record does not parse.
    """
    store = StoreDirectory(path)
    try:
        reading = read_journal(store.journal)
        fs = InMemoryFilesystem(workspace_id=store.workspace_id(uuid.uuid4().hex), **options)
        recovery, last = _replay(fs, reading)
        journal = Journal.resume(store.journal, reading)
    except BaseException:
        store.close()
        raise
    if reading.damage is not None:
        level = logging.ERROR if not reading.damage.torn else logging.WARNING
        log.log(level, "journal of %s stopped at %s: %s", path, reading.damaged_segment,
                reading.damage.reason)  # fmt: skip
    recovery = Recovery(
        recovery.records, recovery.snapshots, reading.damage, journal_set_aside(reading)
    )
    durable = DurableWorkspace(fs, store, journal, last, durability=durability, interval=interval)
    return durable, recovery


def journal_set_aside(reading: Reading) -> list[str]:
    """The files ``Journal.resume`` set aside for ``reading``."""
    if reading.damage is None or reading.damaged_segment is None:
        return []
    kept = [] if reading.damage.torn else [reading.damaged_segment + ".damaged"]
    return kept + [later + ".damaged" for later in reading.dropped_segments]


def _replay(fs: InMemoryFilesystem, reading: Reading) -> tuple[Recovery, Version | None]:
    tree = fs.tree
    last: Version | None = None
    kept: dict[str, FilesystemSnapshot] = {}
    for record in reading.records:
        if record.kind is Kind.CHANGES:
            with tree.lock:
                apply_changes(tree, record.payload)
                last = tree.snapshot()
        elif record.kind is Kind.SNAPSHOT:
            snapshot = _record_of(record.payload)
            fs.adopt_snapshot(snapshot)
            last = fs.version(snapshot)
            kept[str(snapshot.snapshot_id)] = snapshot
        elif record.kind is Kind.FORGET:
            doomed = kept.pop(record.payload.decode(), None)
            if doomed is not None:
                with contextlib.suppress(OSError):
                    fs.delete_snapshot(doomed)
    return Recovery(len(reading.records), len(kept)), last


def _record_bytes(record: FilesystemSnapshot) -> bytes:
    return json.dumps(record.to_dict(), sort_keys=True).encode()


def _record_of(payload: bytes) -> FilesystemSnapshot:
    try:
        return FilesystemSnapshot.from_dict(json.loads(payload))
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreDamagedError(f"a snapshot record does not parse: {exc}", None) from exc
