"""Clean file data leaves memory when the budget needs room, coldest first (2Q), and
comes back on the next read; dirty data never leaves (``tree.Residency``).

The store here is a dict of contents, as a store's git blobs would be: ``clean``
copies a file's bytes into a content and marks the file backed by it, as write-back
does after its pack is synced.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from workspacefs import NoSpaceError
from workspacefs.tree import CHUNK_SIZE, ROOT_INO, File, MemoryBudget, Tree, TreeView

LIMIT = 64 * CHUNK_SIZE


class Stored:
    """Bytes kept by the test's store, read back in pieces."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.loads = 0

    @property
    def key(self) -> object:
        return ("stored", self.data)

    def pieces(self, budget: MemoryBudget, size: int) -> Iterator[bytes]:
        self.loads += 1
        for start in range(0, len(self.data), 1 << 20):
            yield self.data[start : start + (1 << 20)]


def keeps(content: object) -> bool:
    return isinstance(content, Stored)


def file_in(view: TreeView, ino: int) -> File:
    node = view.node(ino)
    assert isinstance(node, File)
    return node


class Workspace:
    """A tree whose budget evicts to the test's store; ``versions`` are cleaned too."""

    def __init__(self, *, clean: bool = True, limit: int = LIMIT) -> None:
        self.tree = Tree(budget=MemoryBudget(limit))
        self.versions: list[TreeView] = []
        self.cleaned = 0
        self.peak = 0
        self.tree.budget.residency.enable(keeps, self.clean if clean else None)

    def clean(self, nbytes: int, writer: object) -> None:
        """Write back every dirty file but ``writer``: the frozen versions' always, the
        live tree's only under its lock (as a store's write-back does)."""
        views: list[TreeView] = list(self.versions)
        taken = not self.tree.lock.owned() and self.tree.lock.try_hold()
        if taken or self.tree.lock.owned():
            views.append(self.tree)
        try:
            for view in views:
                for ino in view.inodes():
                    node = view.get(ino)
                    if not isinstance(node, File) or node is writer or node.backing is not None:
                        continue
                    if node.resident() is not None:
                        node.back(Stored(node.read(0, node.size)))
                        self.cleaned += 1
        finally:
            if taken:
                self.tree.lock.release_hold()

    def write(self, name: str, data: bytes) -> int:
        ino = self.tree.find(ROOT_INO, name) or self.tree.create(ROOT_INO, name)
        self.tree.replace(ino, data)
        self.note()
        return ino

    def read(self, view: TreeView, ino: int) -> bytes:
        data = view.read(ino, 0, file_in(view, ino).size)
        self.note()
        return data

    def note(self) -> None:
        budget = self.tree.budget
        assert budget.limit is not None
        assert budget.held <= budget.limit
        self.peak = max(self.peak, budget.held)


def payload(seed: int, chunks: int) -> bytes:
    return bytes([seed % 251 + 1]) * (chunks * CHUNK_SIZE - seed) + seed.to_bytes(2, "big") * (
        seed // 2
    )


def test_clean_data_leaves_memory_for_writes_and_reads_back() -> None:
    space = Workspace()
    files = {space.write(f"f{n}", payload(n, 6)): payload(n, 6) for n in range(40)}  # ~4x
    residency = space.tree.budget.residency
    assert residency.evicted > 0
    assert space.cleaned > 0
    for ino, data in files.items():
        assert space.read(space.tree, ino) == data
    assert space.tree.budget.held <= LIMIT
    usage = space.tree.live_residency()
    assert usage[0] == space.tree.budget.held
    assert usage[0] + usage[1] >= sum(map(len, files.values())) - LIMIT  # the rest: on disk


def test_dirty_data_never_leaves_and_a_write_past_it_changes_nothing() -> None:
    space = Workspace(clean=False)  # nothing writes data back
    first = space.write("a", payload(1, 40))
    second = space.write("b", payload(2, 20))
    with pytest.raises(NoSpaceError):
        space.write("b", payload(3, 30))
    assert space.tree.budget.residency.evicted == 0
    assert space.read(space.tree, first) == payload(1, 40)
    assert space.read(space.tree, second) == payload(2, 20)  # the old content, whole


def test_only_the_file_being_written_is_clean_then_the_write_is_refused() -> None:
    space = Workspace(clean=False)
    ino = space.write("a", payload(1, 30))
    node = file_in(space.tree, ino)
    node.back(Stored(payload(1, 30)))  # clean: the only data that could leave
    space.write("dirty", payload(2, 33))
    with pytest.raises(NoSpaceError):
        space.tree.write(ino, 30 * CHUNK_SIZE, b"x" * (2 * CHUNK_SIZE))
    assert space.tree.budget.residency.evicted == 0  # not the file being written
    assert space.read(space.tree, ino) == payload(1, 30)


def test_a_write_makes_data_dirty() -> None:
    space = Workspace(clean=False)
    ino = space.write("a", payload(1, 3))
    file_in(space.tree, ino).back(Stored(payload(1, 3)))
    assert file_in(space.tree, ino).stored_key == ("stored", payload(1, 3))
    space.tree.write(ino, 5, b"changed")
    assert file_in(space.tree, ino).backing is None
    assert file_in(space.tree, ino).stored_key is None


def test_snapshots_read_evicted_data_and_never_change() -> None:
    space = Workspace()
    ino = space.write("f", payload(1, 10))
    first = space.tree.snapshot()
    space.versions.append(first)
    space.write("f", payload(2, 12))
    second = space.tree.snapshot()
    space.versions.append(second)
    for n in range(30):  # pressure: both versions' data leaves memory
        space.write(f"g{n}", payload(n + 3, 8))
    assert file_in(first, ino).absent() is not None
    assert space.read(first, ino) == payload(1, 10)
    assert space.read(second, ino) == payload(2, 12)
    assert space.read(space.tree, ino) == payload(2, 12)
    assert file_in(space.tree, ino) is file_in(second, ino)  # still shared
    space.write("f", payload(9, 5))  # the live tree changes, not the versions
    assert space.read(first, ino) == payload(1, 10)
    assert space.read(second, ino) == payload(2, 12)


def test_a_scan_does_not_push_out_a_file_read_again() -> None:
    space = Workspace()
    hot = space.write("hot", payload(0, 4))
    cold = [space.write(f"cold{n}", payload(n + 1, 4)) for n in range(100)]
    space.clean(0, None)
    tree = space.tree
    for ino in cold[:20]:
        space.read(tree, ino)  # data enters: the generation moves on
    space.read(tree, hot)
    for ino in cold[20:28]:
        space.read(tree, ino)
    assert file_in(tree, hot).resident() is not None
    space.read(tree, hot)  # read again, generations later: a re-reference
    scanned = cold[30:]  # none of it read for long: a scan of twice the budget, twice
    for ino in [*scanned, *scanned]:
        space.read(tree, ino)
    assert file_in(tree, hot).resident() is not None
    absent = sum(file_in(tree, ino).absent() is not None for ino in scanned)
    assert absent > len(scanned) * 3 // 4


def test_a_file_loaded_again_soon_after_leaving_is_kept_through_a_scan() -> None:
    space = Workspace()
    inos = [space.write(f"f{n}", payload(n, 4)) for n in range(60)]
    space.clean(0, None)
    tree = space.tree
    for ino in inos[:20]:
        space.read(tree, ino)
    first = inos[0]
    assert file_in(tree, first).absent() is not None  # it left, a ghost
    space.read(tree, first)  # back within half a budget: read again and again
    for ino in inos[20:]:
        space.read(tree, ino)
    assert file_in(tree, first).resident() is not None
    assert file_in(tree, inos[1]).absent() is not None  # read once: gone with the scan


def test_a_file_read_only_once_leaves_in_the_order_it_came() -> None:
    space = Workspace()
    inos = [space.write(f"f{n}", payload(n, 4)) for n in range(100)][:30]  # long gone
    space.clean(0, None)
    for ino in inos:
        space.read(space.tree, ino)  # each loaded once, in order
    resident = [file_in(space.tree, ino).resident() is not None for ino in inos]
    assert resident == sorted(resident)  # the oldest left first (probation is a FIFO)
    assert not resident[0]
    assert resident[-1]


def test_a_load_that_lost_to_a_write_installs_nothing() -> None:
    space = Workspace()
    ino = space.write("f", payload(1, 4))
    for n in range(30):
        space.write(f"g{n}", payload(n + 2, 4))
    assert file_in(space.tree, ino).absent() is not None
    pending = space.tree.prepare_read(ino, 0, 8)
    assert callable(pending)  # not in memory: read it without the tree lock
    space.tree.write(ino, 0, b"newbytes")
    assert pending() == payload(1, 4)[:8]  # the file as it was when the read began
    assert space.read(space.tree, ino)[:8] == b"newbytes"  # and the write is kept


def test_resident_reads_need_no_load() -> None:
    space = Workspace()
    ino = space.write("f", b"hello")
    assert space.tree.prepare_read(ino, 1, 3) == b"ell"


def test_frozen_readers_race_eviction_and_see_their_bytes() -> None:
    # Room for what the threads hold at once outside eviction's reach (what each
    # reader is loading, the file being written, the writer's dirty files).
    space = Workspace(limit=2 * LIMIT)
    inos = {space.write(f"f{n}", payload(n, 5)): payload(n, 5) for n in range(12)}
    version = space.tree.snapshot()
    space.versions.append(version)
    errors: list[BaseException] = []
    stop = threading.Event()

    def read_version() -> None:
        try:
            while not stop.is_set():
                for ino, data in inos.items():
                    assert version.read(ino, 0, len(data)) == data
        except BaseException as exc:
            errors.append(exc)
            raise

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    readers = [threading.Thread(target=read_version) for _ in range(2)]
    try:
        for reader in readers:
            reader.start()
        for round_ in range(60):  # writes that evict what the readers load
            with space.tree.lock:
                space.write(f"w{round_ % 10}", payload(round_ + 50, 9))
    finally:
        stop.set()
        for reader in readers:
            reader.join()
        sys.setswitchinterval(interval)
    assert not errors
    assert space.tree.budget.residency.evicted > 0
    assert space.tree.budget.held <= 2 * LIMIT


def test_without_a_store_nothing_leaves() -> None:
    tree = Tree(budget=MemoryBudget(8 * CHUNK_SIZE))
    ino = tree.create_deferred(ROOT_INO, "f", Stored(b"x" * (6 * CHUNK_SIZE)), 6 * CHUNK_SIZE)
    assert tree.read(ino, 0, 1) == b"x"
    other = tree.create(ROOT_INO, "g")
    with pytest.raises(NoSpaceError):
        tree.write(other, 0, b"y" * (4 * CHUNK_SIZE))
    assert file_in(tree, ino).resident() is not None
    assert tree.budget.residency.evicted == 0
