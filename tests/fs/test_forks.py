"""Forks: O(1) writable copies of a workspace that share unchanged data.

A hypothesis state machine writes to the origin and to forks (of forks, of
snapshots) and checks every workspace against its own dict model after each
step: a write shows only where it was made. The memory test measures what a
fork costs with tracemalloc.
"""

from __future__ import annotations

import gc
import tracemalloc

import hypothesis.strategies as st
import pytest
from hypothesis import settings
from hypothesis.stateful import invariant, precondition, rule

from workspacefs import FilesystemSnapshot, InMemoryFilesystem
from workspacefs.tree import Tree

from .families import PATHS, FamilyMachine


class ForkMachine(FamilyMachine):
    """Workspaces and their models; ``snapshots`` remembers what each snapshot held."""

    def __init__(self) -> None:
        super().__init__()
        self.snapshots: list[tuple[int, FilesystemSnapshot, dict[str, bytes]]] = []

    @rule(index=st.integers(0, 20), path=st.sampled_from(PATHS), data=st.binary(max_size=9))
    def append(self, index: int, path: str, data: bytes) -> None:
        i = self._pick(index)
        self.spaces[i].write_bytes(path, data, mode="append")
        self.models[i][path] = self.models[i].get(path, b"") + data

    @rule(index=st.integers(0, 20))
    def snapshot(self, index: int) -> None:
        i = self._pick(index)
        self.snapshots.append((i, self.spaces[i].snapshot(), dict(self.models[i])))

    @precondition(lambda self: self.snapshots and len(self.spaces) < self.MAX_SPACES)
    @rule(which=st.integers(0, 20))
    def fork_snapshot(self, which: int) -> None:
        i, record, model = self.snapshots[which % len(self.snapshots)]
        self.spaces.append(self.spaces[i].fork(record))
        self.models.append(dict(model))

    @invariant()
    def each_workspace_matches_its_model(self) -> None:
        for space, model in zip(self.spaces, self.models, strict=True):
            for path in PATHS:
                assert space.exists(path) == (path in model), path
                if path in model:
                    assert space.read_bytes(path).content == model[path], path

    @invariant()
    def snapshots_never_change(self) -> None:
        for i, record, model in self.snapshots:
            view = self.spaces[i].at(record)
            for path in PATHS:
                assert view.exists(path) == (path in model), path
                if path in model:
                    assert view.read_bytes(path).content == model[path], path

    @invariant()
    def budget_counts_shared_data_once(self) -> None:
        # Forks draw on one budget: it holds at least each workspace's live data
        # and never more than the sum of all (shared chunks counted once).
        budget = self.spaces[0].tree.budget
        lives = [space.tree.live_data_bytes() for space in self.spaces]
        assert all(space.tree.budget is budget for space in self.spaces)
        assert max(lives) <= budget.held


TestForkModel = ForkMachine.TestCase
TestForkModel.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)


def test_fork_is_isolated_both_ways_and_diffable() -> None:
    origin = InMemoryFilesystem()
    origin.write("keep.txt", "same")
    origin.write("edit.txt", "v1")
    base = origin.snapshot(tag="base")
    fork = origin.fork(base)
    fork.write("edit.txt", "fork")
    fork.write("new.txt", "only in fork")
    origin.delete("keep.txt")
    assert origin.read("edit.txt").content == "v1"
    assert not origin.exists("new.txt")
    assert fork.read("keep.txt").content == "same"
    assert fork.fork_point is origin.version(base)
    mine, theirs = origin.version(origin.snapshot()), fork.version(fork.snapshot())
    # One history: a version of each side compares in O(changes).
    changed = Tree.changes_between(mine, theirs)
    assert len(changed) < 10
    assert fork.workspace_id != origin.workspace_id
    assert fork.snapshots()[0].workspace_id == fork.workspace_id


def test_fork_of_a_foreign_snapshot_is_refused() -> None:
    one, other = InMemoryFilesystem(), InMemoryFilesystem()
    with pytest.raises(OSError):
        one.fork(other.snapshot())


def test_freed_fork_gives_its_memory_back_and_shared_data_stays() -> None:
    origin = InMemoryFilesystem()
    origin.write_bytes("big", b"x" * 300_000)
    held = origin.tree.budget.held
    fork = origin.fork()
    assert origin.tree.budget.held == held  # nothing copied
    fork.write_bytes("big", b"y" * 300_000)
    fork.write_bytes("more", b"z" * 100_000)
    assert origin.tree.budget.held == held + 400_000
    del fork
    gc.collect()
    assert origin.tree.budget.held == held
    assert origin.read_bytes("big").content == b"x" * 300_000


def _workspace(files: int) -> InMemoryFilesystem:
    fs = InMemoryFilesystem()
    with fs.transaction() as tree:
        for d in range(files // 500):
            parent = tree.make_dirs(f"pkg{d}")
            for f in range(500):
                ino = tree.create(parent, f"module{f}.py")
                tree.write(ino, 0, b"print('hello world')\n" * 4)
    return fs


def test_a_hundred_forks_cost_under_one_percent_each() -> None:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        origin = _workspace(50_000)
        workspace = tracemalloc.get_traced_memory()[0] - before
        forks = [origin.fork() for _ in range(100)]
        per_fork = (tracemalloc.get_traced_memory()[0] - before - workspace) / len(forks)
        for i, fork in enumerate(forks):  # one small write each: a path's worth of copies
            fork.write(f"pkg{i}/module{i}.py", "changed")
        written = (tracemalloc.get_traced_memory()[0] - before - workspace) / len(forks)
    finally:
        tracemalloc.stop()
    assert per_fork < workspace / 100, (per_fork, workspace)
    assert written < workspace / 100, (written, workspace)
    assert origin.read(f"pkg{3}/module{3}.py").content == "print('hello world')\n" * 4
    assert forks[3].read("pkg3/module3.py").content == "changed"
    assert forks[4].read("pkg3/module3.py").content == "print('hello world')\n" * 4


def test_a_fork_sets_every_field_of_a_tree() -> None:
    # Tree.fork builds the tree without __init__ (both go through Tree._init):
    # a field added to Tree must be set there.
    tree = Tree()
    fork = tree.fork(tree.snapshot())
    for name in Tree.__slots__:
        getattr(fork, name)
    assert fork.lock is not tree.lock
    assert fork.id != tree.id
