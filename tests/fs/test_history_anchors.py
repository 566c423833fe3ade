"""What a snapshot changed is found from an index of the snapshots kept, kept up to date:
no pass over every snapshot per question (a durable store asks after every snapshot,
and a daemon recording tool calls takes two a call), and never a stale answer after a
snapshot is deleted, restored into or taken meanwhile."""

from __future__ import annotations

import threading
import uuid

from workspacefs.fs import FilesystemSnapshot, InMemoryFilesystem, InMemorySnapshotStore
from workspacefs.tree import Version


class CountingStore(InMemorySnapshotStore[Version]):
    """Counts the versions looked up."""

    looked_up = 0

    def payload(self, snapshot_id: uuid.UUID) -> Version:
        self.looked_up += 1
        return super().payload(snapshot_id)


def _changed(fs: InMemoryFilesystem, snapshot: FilesystemSnapshot) -> tuple[object, ...]:
    found = fs.changes(snapshot)
    base = None if found.base is None else (found.base.tag or found.base.file_count)
    return (base, tuple((c.path, c.kind) for c in found.changes))


def test_a_new_snapshots_changes_take_no_pass_over_those_kept() -> None:
    store = CountingStore()
    fs = InMemoryFilesystem(store=store)
    for i in range(300):
        fs.write("a.txt", f"{i}\n")
        fs.snapshot()
    fs.changes(fs.snapshots()[-1])
    store.looked_up = 0
    for i in range(50):
        fs.write(f"n{i}.txt", "new\n")
        taken = fs.snapshot()
        assert _changed(fs, taken)[1] == ((f"n{i}.txt", "added"),)
    assert store.looked_up < 50 * 5  # a pass over the kept ones: 300 a question


def _history(deleting: bool, asking: bool) -> list[tuple[object, ...]]:
    """What each kept snapshot changed after snapshots were taken, restored into and
    deleted; with ``asking``, questions asked all along (the index kept up to date),
    else only at the end (made once)."""
    fs = InMemoryFilesystem()
    taken = []
    for i in range(8):
        fs.write(f"f{i % 3}.txt", f"{i}\n")
        taken.append(fs.snapshot(tag=f"s{i}"))
        if asking:
            _changed(fs, taken[-1])
        if i == 4:
            fs.restore(taken[1])
            if asking:
                _changed(fs, taken[1])
    if deleting:
        for gone in (taken[2], taken[5]):
            fs.delete_snapshot(gone)
            if asking:
                _changed(fs, taken[-1])
    return [_changed(fs, snapshot) for snapshot in fs.snapshots()]


def test_answers_are_those_of_an_index_made_afresh() -> None:
    for deleting in (False, True):
        assert _history(deleting, asking=True) == _history(deleting, asking=False)


def test_snapshots_taken_while_the_index_is_made_are_counted() -> None:
    fs = InMemoryFilesystem()
    for i in range(200):
        fs.write("a.txt", f"{i}\n")
        fs.snapshot()
    fs.delete_snapshot(fs.snapshots()[0])  # the index is made again on the next question
    done = threading.Event()

    def take() -> None:
        for i in range(100):
            fs.write(f"t{i}.txt", "t\n")
            fs.snapshot()
        done.set()

    taker = threading.Thread(target=take)
    taker.start()
    while not done.is_set():
        fs.changes(fs.snapshots()[-1])
    taker.join()
    fresh = InMemoryFilesystem()
    for i in range(200):
        fresh.write("a.txt", f"{i}\n")
        fresh.snapshot()
    fresh.delete_snapshot(fresh.snapshots()[0])
    for i in range(100):
        fresh.write(f"t{i}.txt", "t\n")
        fresh.snapshot()
    assert [_changed(fs, s)[1] for s in fs.snapshots()] == [
        _changed(fresh, s)[1] for s in fresh.snapshots()
    ]
