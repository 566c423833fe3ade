"""One lock around the live tree: concurrent API callers never see torn state."""

from __future__ import annotations

import sys
import threading
import time

from workspacefs import FilesystemSnapshot, InMemoryFilesystem
from workspacefs.tree import CHUNK_SIZE

SIZE = 3 * CHUNK_SIZE + 17  # spans chunks, so a torn write would show


def test_concurrent_writers_snapshots_and_readers() -> None:
    fs = InMemoryFilesystem()
    stop = threading.Event()
    errors: list[BaseException] = []
    snapshots: list[FilesystemSnapshot] = []

    def guard(work: object) -> threading.Thread:
        def run() -> None:
            try:
                assert callable(work)
                work()
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
                stop.set()

        return threading.Thread(target=run)

    def writer(worker: int) -> None:
        # Keep writing until the snapshotter has interleaved enough snapshots.
        for round_ in range(100_000):
            if round_ >= 100 and len(snapshots) >= 30:
                break
            letter = bytes([65 + (round_ % 26)])
            fs.write_bytes(f"w{worker}/file{round_ % 5}.bin", letter * SIZE)
            victim = f"w{worker}/file{(round_ + 1) % 5}.bin"
            if round_ % 7 == 0 and fs.exists(victim):  # only this worker touches it
                fs.delete(victim)

    def snapshotter() -> None:
        while not stop.is_set():
            snapshots.append(fs.snapshot())
            time.sleep(0)

    def reader() -> None:
        while not stop.is_set():
            for match in fs.glob("**/*.bin"):
                try:
                    data = fs.read_bytes(match.path).content
                except FileNotFoundError:
                    continue  # deleted between glob and read
                assert data == data[:1] * SIZE, "torn read"

    writers = [guard(lambda w=w: writer(w)) for w in range(3)]
    others = [guard(snapshotter), guard(reader)]
    for thread in writers + others:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in others:
        thread.join()
    assert not errors, errors
    assert len(snapshots) >= 30

    for snapshot in snapshots:
        view = fs.at(snapshot)
        files = [m.path for m in view.glob("**/*.bin")]
        assert snapshot.file_count == len(files)
        assert snapshot.total_bytes == SIZE * len(files)
        for path in files:
            data = view.read_bytes(path).content
            assert data == data[:1] * SIZE


def test_snapshots_taken_while_others_read_the_history() -> None:
    # Several clients' tool calls each take a snapshot, while others read what the
    # snapshots changed (blame, the journal): listing the snapshots raced a new one.
    fs = InMemoryFilesystem()
    fs.write("a", "x")
    stop = threading.Event()
    errors: list[BaseException] = []

    def repeat(action: object) -> None:
        assert callable(action)
        while not stop.is_set():
            try:
                action()
            except BaseException as exc:
                errors.append(exc)
                stop.set()

    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # hand the GIL over at every chance: the race shows at once
    try:
        threads = [threading.Thread(target=repeat, args=(fs.snapshot,)) for _ in range(2)]
        threads += [
            threading.Thread(target=repeat, args=(lambda: (fs.changes(None), fs.snapshots()),))
            for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        time.sleep(1.0)
        stop.set()
        for thread in threads:
            thread.join(10)
    finally:
        sys.setswitchinterval(switching)
    assert errors == []
