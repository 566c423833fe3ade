"""The memory budget: exact counts, ENOSPC before anything changes, snapshots counted."""

from __future__ import annotations

import errno
import gc
import resource
import subprocess
import sys
import textwrap

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from support.consistency import check_consistent
from workspacefs import InMemoryFilesystem, NoSpaceError
from workspacefs.fs import available_memory, default_memory_budget
from workspacefs.tree import (
    CHUNK_SIZE,
    FALLOC_FL_KEEP_SIZE,
    ROOT_INO,
    MemoryBudget,
    Tree,
)

MIB = 1 << 20


def tree_with(limit: int) -> Tree:
    return Tree(budget=MemoryBudget(limit))


def test_held_counts_every_chunk_once_until_it_is_freed() -> None:
    tree = tree_with(100 * MIB)
    ino = tree.create(ROOT_INO, "f")
    tree.write(ino, 0, b"x" * (3 * CHUNK_SIZE + 10))
    assert tree.budget.held == 3 * CHUNK_SIZE + 10
    version = tree.snapshot()
    tree.write(ino, 5, b"y")  # the first chunk is copied; the version keeps the old one
    assert tree.budget.held == 4 * CHUNK_SIZE + 10
    assert tree.live_data_bytes() == 3 * CHUNK_SIZE + 10
    del version
    assert tree.budget.held == 3 * CHUNK_SIZE + 10
    tree.unlink(ROOT_INO, "f")
    assert tree.budget.held == 0


def test_a_write_past_the_budget_changes_nothing() -> None:
    tree = tree_with(4 * CHUNK_SIZE)
    ino = tree.create(ROOT_INO, "f")
    tree.write(ino, 0, b"a" * (3 * CHUNK_SIZE))
    with pytest.raises(NoSpaceError) as excinfo:
        tree.write(ino, CHUNK_SIZE, b"b" * (3 * CHUNK_SIZE + 1))  # one byte more than fits
    assert excinfo.value.errno == errno.ENOSPC
    assert tree.read(ino, 0, 4 * CHUNK_SIZE) == b"a" * (3 * CHUNK_SIZE)
    assert tree.node(ino).size == 3 * CHUNK_SIZE
    tree.write(ino, CHUNK_SIZE, b"b" * (3 * CHUNK_SIZE))  # two chunks in place, one new: fits
    assert tree.budget.held == tree.budget.limit
    check_consistent(tree)


def test_has_room_says_what_reserve_would_allow() -> None:
    budget = MemoryBudget(100)
    budget.add(60)
    assert budget.has_room(40)
    assert not budget.has_room(41)
    budget.reserve(40)
    with pytest.raises(NoSpaceError):
        budget.reserve(41)
    assert MemoryBudget().has_room(1 << 62)  # no limit: always


def test_data_only_a_snapshot_holds_counts() -> None:
    fs = InMemoryFilesystem(memory_budget=4 * MIB)
    fs.write_bytes("big", b"1" * (3 * MIB))
    record = fs.snapshot()
    fs.delete("big")
    usage = fs.memory_usage()
    assert (usage.held, usage.live, usage.snapshots_only) == (3 * MIB, 0, 3 * MIB)
    with pytest.raises(NoSpaceError, match="snapshots"):
        fs.write_bytes("other", b"2" * (2 * MIB))
    assert not fs.exists("other")  # refused before the file was made
    fs.delete_snapshot(record)
    assert fs.memory_usage().held == 0
    fs.write_bytes("other", b"2" * (2 * MIB))  # usable again


def test_overwrite_and_append_are_all_or_nothing() -> None:
    fs = InMemoryFilesystem(memory_budget=3 * MIB // 2)
    fs.write_bytes("f", b"old" * 100_000)
    fs.write_bytes("f", b"new" * 300_000)  # the old content is freed: it fits
    with pytest.raises(NoSpaceError):
        fs.write_bytes("f", b"!" * (3 * MIB))
    with pytest.raises(NoSpaceError):
        fs.write_bytes("f", b"!" * (2 * MIB), mode="append")
    assert fs.read_bytes("f").content == b"new" * 300_000
    fs.snapshot()
    with pytest.raises(NoSpaceError):  # the snapshot keeps the old bytes: not enough room
        fs.write_bytes("f", b"n3w" * 300_000)
    assert fs.read_bytes("f").content == b"new" * 300_000


def test_truncate_and_fallocate_ask_before_allocating() -> None:
    tree = tree_with(2 * CHUNK_SIZE)
    ino = tree.create(ROOT_INO, "f")
    tree.truncate(ino, 1 << 40)  # a hole: nothing allocated
    assert tree.budget.held == 0
    with pytest.raises(NoSpaceError):
        tree.fallocate(ino, 0, 0, 3 * CHUNK_SIZE)
    with pytest.raises(NoSpaceError):  # past the end of file: checked, though not held
        tree.fallocate(ino, FALLOC_FL_KEEP_SIZE, (1 << 40) - 10, 3 * CHUNK_SIZE)
    assert tree.budget.held == 0
    tree.write(ino, 0, b"z" * CHUNK_SIZE)
    version = tree.snapshot()
    tree.write(ino, CHUNK_SIZE, b"z" * CHUNK_SIZE)
    with pytest.raises(NoSpaceError):  # shrinking into a chunk the version shares copies it
        tree.truncate(ino, 100)
    assert tree.node(ino).size == 1 << 40
    tree.truncate(ino, CHUNK_SIZE)  # at a chunk boundary nothing is copied
    assert version.node(ino).size == 1 << 40
    check_consistent(tree)


def test_budget_can_be_changed() -> None:
    fs = InMemoryFilesystem(memory_budget=MIB)
    fs.write_bytes("f", bytes(MIB // 2) + b"x")
    fs.memory_budget = MIB // 4
    with pytest.raises(NoSpaceError):
        fs.write_bytes("g", b"y")
    fs.delete("f")
    fs.write_bytes("g", b"y")
    assert fs.memory_usage().free == MIB // 4 - 1


def test_default_budget_is_half_of_what_can_be_allocated() -> None:
    before = available_memory()
    budget = default_memory_budget()
    after = available_memory()
    slack = 256 << 20  # other processes allocate and free meanwhile
    assert budget % CHUNK_SIZE == 0
    assert 0 < budget <= max(before, after) // 2 + slack
    assert InMemoryFilesystem().memory_budget <= max(before, after) + slack


def test_default_budget_follows_the_address_space_limit() -> None:
    limit = 2 << 30
    script = textwrap.dedent(
        """
        from workspacefs import InMemoryFilesystem
        from workspacefs.fs import available_memory
        print(available_memory(), InMemoryFilesystem().memory_budget)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    available, budget = int(out[0]), int(out[1])
    assert available < limit
    assert limit // 8 < budget <= available // 2


def test_chunks_are_freed_without_the_cycle_collector() -> None:
    gc.disable()
    try:
        tree = tree_with(10 * MIB)
        for n in range(20):
            tree.write(tree.create(ROOT_INO, f"f{n}"), 0, b"q" * 100_000)
            tree.snapshot()
        tree.empty(ROOT_INO)
        tree.snapshot()  # the last version is empty too; earlier ones are gone with no holder
        assert tree.budget.held == 0
    finally:
        gc.enable()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["overwrite", "append", "at", "truncate", "fallocate", "snapshot"]),
            st.sampled_from(["a", "b"]),
            st.integers(0, 3 * CHUNK_SIZE),
            st.integers(1, 2 * CHUNK_SIZE),
        ),
        max_size=30,
    )
)
def test_past_the_budget_nothing_changes(operations: list[tuple[str, str, int, int]]) -> None:
    limit = 4 * CHUNK_SIZE
    fs = InMemoryFilesystem(memory_budget=limit)
    tree = fs.tree
    for step, (action, name, offset, length) in enumerate(operations):
        before = {path: fs.read_bytes(path).content for path in ("a", "b") if fs.exists(path)}
        data = bytes([step % 200 + 1]) * length
        try:
            if action == "overwrite":
                fs.write_bytes(name, data)
            elif action == "append":
                fs.write_bytes(name, data, mode="append")
            elif action == "snapshot":
                fs.snapshot()
            elif fs.exists(name):
                with tree.lock:
                    ino = tree.lookup(ROOT_INO, name)
                    if action == "at":
                        tree.write(ino, offset, data)
                    elif action == "truncate":
                        tree.truncate(ino, offset)
                    else:
                        tree.fallocate(ino, 0, offset, length)
        except NoSpaceError:
            after = {path: fs.read_bytes(path).content for path in ("a", "b") if fs.exists(path)}
            assert after == before, f"{action} failed with ENOSPC but changed the files"
        assert tree.budget.held <= limit
        check_consistent(tree)
    for record in fs.snapshots():
        check_consistent(fs.version(record))
