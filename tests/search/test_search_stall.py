"""Pathological globs and link loops end at once, and no walk stalls a writer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from workspacefs import Filesystem, InMemoryFilesystem

from .conftest import Trees

MANY_STARS = "**/" * 10 + "*.txt"


def finishes_within(seconds: float, action: Callable[[], object]) -> object:
    """Run ``action`` in a daemon thread: a walk that never ends fails the test, not the run."""
    outcome: list[object] = []
    worker = threading.Thread(target=lambda: outcome.append(action()), daemon=True)
    started = time.perf_counter()
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s"
    assert outcome, "the walk raised"
    assert time.perf_counter() - started < seconds
    return outcome[0]


@pytest.mark.parametrize("backend", ["memory", "host"])
def test_many_double_stars_are_linear(
    tmp_path_factory: pytest.TempPathFactory, backend: str
) -> None:
    fs: Filesystem
    if backend == "memory":
        fs = InMemoryFilesystem()
    else:
        from workspacefs import HostFilesystem

        fs = HostFilesystem(tmp_path_factory.mktemp("stars"))
    for i in range(30):
        fs.write(f"d{i % 3}/e{i % 5}/f{i}.txt", "x")
    found = finishes_within(1.0, lambda: fs.glob(MANY_STARS))
    assert isinstance(found, list)
    assert len(found) == 30


@pytest.mark.parametrize("backend", ["memory", "host"])
@pytest.mark.parametrize(
    "search",
    [
        lambda fs: fs.glob("**"),
        lambda fs: fs.glob(MANY_STARS),
        lambda fs: fs.glob("**/" * 10),
        lambda fs: fs.grep("needle"),
        lambda fs: fs.grep(""),
    ],
    ids=["glob **", "glob many **", "glob many **/", "grep", "grep empty"],
)
def test_link_loops_end(trees: Trees, backend: str, search: Callable[[Filesystem], object]) -> None:
    fs = trees.backend("loops", backend)
    finishes_within(1.0, lambda: search(fs))


def test_a_write_is_not_stalled_by_walks() -> None:
    fs = InMemoryFilesystem()
    with fs.tree.lock:  # a tree big enough that each walk takes a while (20,000 files)
        for d in range(500):
            parent = fs.tree.make_dirs(f"tree/d{d}")
            for f in range(40):
                fs.tree.write(fs.tree.create(parent, f"f{f}.txt"), 0, b"line\nneedle\n")
        fs.tree.symlink(1, "a", ".")  # and loops, which once made walks endless
        fs.tree.symlink(1, "b", ".")
    stop = threading.Event()
    walks: list[tuple[float, float]] = []

    def walk() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            fs.glob(MANY_STARS)
            fs.grep("needle", max_matches=1000)
            fs.glob("**")
            walks.append((started, time.perf_counter()))

    latencies: list[float] = []
    starts: list[float] = []

    def write() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            fs.write(f"w/{len(latencies)}.txt", "written during a walk")
            latencies.append(time.perf_counter() - started)
            starts.append(started)
            time.sleep(0.005)

    threads = [threading.Thread(target=work, daemon=True) for work in (walk, write)]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    stop.set()
    for thread in threads:
        thread.join(5)
        assert not thread.is_alive(), "a walk never ended, or a write waited for one"
    # The writes this test is about are those made while a walk went on (however fast
    # the machine walks): most of them, as the walker never rests.
    during = [t for t in starts if any(begun <= t <= ended for begun, ended in walks)]
    assert len(during) > 50, "too few writes overlapped a walk"
    # Walks hold the lock one directory at a time, so no write waits for a walk. A
    # loaded machine may still deschedule a thread now and then: allow 2% stragglers.
    slow = sorted(latency for latency in latencies if latency >= 0.050)
    assert len(slow) <= len(latencies) // 50, f"writes over 50 ms: {slow}"


def test_a_walk_of_the_live_tree_reads_a_freeze_of_it_without_the_lock() -> None:
    fs = InMemoryFilesystem()
    for i in range(20):
        fs.write(f"d/f{i}.txt", "needle\n")
    holding, release = threading.Event(), threading.Event()

    def writer() -> None:
        with fs.tree.lock:
            directory = fs.tree.resolve_path("d")
            assert directory is not None
            fs.tree.unlink(directory, "f0.txt")
            holding.set()
            release.wait(10)

    with fs._walk() as walk:  # what a listing, glob or grep walks: frozen as it starts
        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        assert holding.wait(5)
        try:
            listing = finishes_within(5.0, lambda: walk.scan("d"))
            content = finishes_within(5.0, lambda: b"".join(walk.read_blocks("d/f0.txt")))
        finally:
            release.set()
            thread.join(5)
    assert len(listing.entries) == 20  # type: ignore[attr-defined]
    assert content == b"needle\n"


def test_long_readers_pause_only_while_a_mount_is_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    from workspacefs.tree import _turns

    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # the module _turns sleeps with
    monkeypatch.setattr(_turns, "_last_request", -_turns.BUSY_NS)
    _turns.make_way()
    assert slept == []  # no mount: never
    _turns.mount_request(time.perf_counter_ns())
    _turns.make_way()
    assert slept == [_turns.PAUSE]  # a request just now: once, a moment
    monkeypatch.setattr(_turns, "_last_request", time.perf_counter_ns() - 2 * _turns.BUSY_NS)
    _turns.make_way()
    assert slept == [_turns.PAUSE]  # the mount idle since
