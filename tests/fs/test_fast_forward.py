"""Fast-forward: a workspace that did not change since a fork adopts the fork's state in O(1).

The state machine writes to workspaces of one family, forks them and
fast-forwards one to another; every workspace is checked against its own
dict model and for consistency after each step (a fast-forward that reused
an inode number for two files would break both).
"""

from __future__ import annotations

import threading

import hypothesis.strategies as st
import pytest
from hypothesis import settings
from hypothesis.stateful import invariant, rule

from support.consistency import check_consistent
from workspacefs import InMemoryFilesystem, InvalidArgumentError, ReadOnlyError
from workspacefs.git import merge

from .families import FamilyMachine


def files(fs: InMemoryFilesystem) -> dict[str, bytes]:
    return {
        match.path.lstrip("/"): fs.read_bytes(match.path).content
        for match in fs.glob("**/*")
        if not fs.stat(match.path).is_directory
    }


def test_an_unchanged_origin_takes_the_forks_state() -> None:
    origin = InMemoryFilesystem()
    origin.write("keep.txt", "same")
    origin.write("src/app.py", "v1")
    origin.write("old/gone.txt", "x")
    before = origin.snapshot(tag="before")
    fork = origin.fork()
    fork.write("src/app.py", "v2")
    fork.write("src/new.py", "new")
    fork.delete("old", recursive=True)
    assert origin.fast_forward(fork)
    assert files(origin) == {"keep.txt": b"same", "src/app.py": b"v2", "src/new.py": b"new"}
    diff = origin.diff(before)
    assert (diff.added, diff.modified, diff.deleted) == (
        ("src/new.py",),
        ("src/app.py",),
        ("old/gone.txt",),
    )
    # Both go on independently, and new inodes of either never alias the other's.
    origin.write("src/after.py", "origin")
    fork.write("src/after.py", "fork")
    fork.write("src/new.py", "changed in the fork")
    assert origin.read("src/after.py").content == "origin"
    assert origin.read("src/new.py").content == "new"
    check_consistent(origin.tree)
    check_consistent(fork.tree)
    origin.restore(before)
    assert files(origin) == {"keep.txt": b"same", "src/app.py": b"v1", "old/gone.txt": b"x"}


def test_a_changed_origin_is_left_alone() -> None:
    origin = InMemoryFilesystem()
    origin.write("a", "1")
    fork = origin.fork()
    fork.write("b", "fork")
    origin.write("a", "2")
    assert not origin.fast_forward(fork)
    assert files(origin) == {"a": b"2"}
    assert files(fork) == {"a": b"1", "b": b"fork"}
    assert merge(origin, fork).applied  # what to do instead
    assert files(origin) == {"a": b"2", "b": b"fork"}


def test_snapshots_and_a_restore_of_the_origin_do_not_count_as_changes() -> None:
    origin = InMemoryFilesystem()
    origin.write("a", "1")
    early = origin.snapshot()
    origin.write("a", "2")
    fork = origin.fork()
    origin.snapshot(tag="nothing-changed")
    fork.write("b", "fork")
    assert origin.fast_forward(fork)
    assert files(origin) == {"a": b"2", "b": b"fork"}
    # Back to before the fork: the fork's state is still all a merge would give.
    origin.restore(early)
    fork.write("c", "more")
    assert origin.fast_forward(fork)
    assert files(origin) == {"a": b"2", "b": b"fork", "c": b"more"}


def test_two_workspaces_fast_forwarding_each_other_at_once_both_finish() -> None:
    origin = InMemoryFilesystem()
    fork = origin.fork()
    start = threading.Barrier(2)

    def forward(target: InMemoryFilesystem, source: InMemoryFilesystem) -> None:
        start.wait()
        for i in range(2_000):
            source.write("f.txt", f"{i}\n")
            target.fast_forward(source)

    threads = [
        threading.Thread(target=forward, args=pair, daemon=True)
        for pair in ((origin, fork), (fork, origin))
    ]
    for thread in threads:
        thread.start()
    threads[0].join(timeout=30)
    threads[1].join(timeout=5)
    assert not any(thread.is_alive() for thread in threads), "the two locks deadlocked"
    check_consistent(origin.tree)
    check_consistent(fork.tree)


def test_only_a_family_member_and_a_writable_workspace() -> None:
    origin = InMemoryFilesystem()
    with pytest.raises(InvalidArgumentError):
        origin.fast_forward(InMemoryFilesystem())
    with pytest.raises(InvalidArgumentError):
        origin.fast_forward(origin)
    frozen = InMemoryFilesystem(read_only=True)
    with pytest.raises(ReadOnlyError):
        frozen.fast_forward(frozen.fork())


class FastForwardMachine(FamilyMachine):
    """Workspaces of one family and their models."""

    MAX_SPACES = 5

    @rule(index=st.integers(0, 20))
    def snapshot(self, index: int) -> None:
        self.spaces[self._pick(index)].snapshot()

    @rule(into=st.integers(0, 20), source=st.integers(0, 20))
    def fast_forward(self, into: int, source: int) -> None:
        i, j = self._pick(into), self._pick(source)
        if i == j:
            return
        if self.spaces[i].fast_forward(self.spaces[j]):
            self.models[i] = dict(self.models[j])

    @invariant()
    def every_workspace_matches_its_model(self) -> None:
        for fs, model in zip(self.spaces, self.models, strict=True):
            assert files(fs) == model
            check_consistent(fs.tree)


TestFastForwardMachine = FastForwardMachine.TestCase
TestFastForwardMachine.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
