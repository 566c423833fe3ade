"""Space accounting: shared and exclusive bytes per snapshot, live tree and fork.

Hand-built cases check exact figures. A hypothesis state machine writes,
snapshots, restores, forks and deletes, and after each step compares
``space_usage()`` with a brute-force count (every holder's every file walked,
chunks told apart by identity) and with the budget: what a deletion frees is
what the accounting said it would.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import hypothesis.strategies as st
import pytest
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from workspacefs import (
    FilesystemSnapshot,
    InMemoryFilesystem,
    InvalidArgumentError,
    SnapshotRetentionPolicy,
    SpaceUsage,
)
from workspacefs.tree import CHUNK_SIZE, File, Node, TreeView

MIB = 1 << 20


@pytest.fixture
def fs() -> InMemoryFilesystem:
    return InMemoryFilesystem(memory_budget=256 * MIB)


def write_at(fs: InMemoryFilesystem, path: str, offset: int, data: bytes) -> None:
    """Write into the middle of a file, as a process through the mount would."""
    with fs.tree.lock:
        ino = fs.tree.resolve_path(path)
        assert ino is not None
        fs.tree.write(ino, offset, data)


def snapshot_figures(usage: SpaceUsage) -> dict[str | None, tuple[int, int, int]]:
    return {s.tag: (s.reached, s.shared, s.exclusive) for s in usage.snapshots}


# -- hand-built cases ----------------------------------------------------------------


def test_a_file_shared_by_a_snapshot_and_the_live_tree_is_nobodys_alone(
    fs: InMemoryFilesystem,
) -> None:
    fs.write_bytes("a", b"x" * 1000)
    fs.snapshot(tag="one")
    usage = fs.space_usage()
    assert snapshot_figures(usage) == {"one": (1000, 1000, 0)}
    assert (usage.live.reached, usage.live.shared, usage.live.exclusive) == (1000, 1000, 0)
    assert usage.held == usage.accounted == 1000


def test_a_file_changed_after_a_snapshot_costs_only_the_chunk_it_copied(
    fs: InMemoryFilesystem,
) -> None:
    fs.write_bytes("big", b"b" * (3 * CHUNK_SIZE))
    fs.snapshot(tag="before")
    write_at(fs, "big", CHUNK_SIZE + 10, b"!")  # copies the middle chunk only
    usage = fs.space_usage()
    assert snapshot_figures(usage) == {"before": (3 * CHUNK_SIZE, 2 * CHUNK_SIZE, CHUNK_SIZE)}
    assert usage.live == type(usage.live)(3 * CHUNK_SIZE, CHUNK_SIZE)
    assert usage.held == usage.accounted == 4 * CHUNK_SIZE


def test_a_deleted_file_is_exclusive_to_the_snapshots_that_hold_it(
    fs: InMemoryFilesystem,
) -> None:
    fs.write_bytes("gone", b"g" * 5000)
    fs.write_bytes("kept", b"k" * 300)
    fs.snapshot(tag="one")
    fs.snapshot(tag="two")  # nothing changed: the same table as "one"
    fs.delete("gone")
    fs.snapshot(tag="three")
    usage = fs.space_usage()
    assert snapshot_figures(usage) == {
        "one": (5300, 5300, 0),  # "two" holds the same: deleting one alone frees nothing
        "two": (5300, 5300, 0),
        "three": (300, 300, 0),
    }
    assert usage.exclusive_bytes(fs.snapshots()[:2]) == 5000
    assert usage.workspace.snapshots_exclusive == 5000
    assert usage.live == type(usage.live)(300, 0)


def test_an_overwritten_file_splits_snapshots_by_version(fs: InMemoryFilesystem) -> None:
    fs.write_bytes("f", b"1" * 100)
    fs.snapshot(tag="v1")
    fs.write_bytes("f", b"2" * 200)
    fs.snapshot(tag="v2")
    fs.write_bytes("f", b"3" * 400)
    usage = fs.space_usage()
    assert snapshot_figures(usage) == {"v1": (100, 0, 100), "v2": (200, 0, 200)}
    assert usage.live == type(usage.live)(400, 400)
    assert usage.held == usage.accounted == 700


def test_a_chmod_shares_the_data(fs: InMemoryFilesystem) -> None:
    fs.write_bytes("f", b"1" * 100)
    fs.snapshot(tag="v1")
    with fs.tree.lock:
        ino = fs.tree.resolve_path("f")
        assert ino is not None
        fs.tree.setattr(ino, mode=0o600)  # a new node, the same chunks
    assert snapshot_figures(fs.space_usage()) == {"v1": (100, 100, 0)}


def test_a_fork_writing_holds_only_what_it_wrote(fs: InMemoryFilesystem) -> None:
    fs.write_bytes("shared", b"s" * 4000)
    fork = fs.fork()
    fork.write_bytes("mine", b"m" * 700)
    fork.write_bytes("shared", b"t" * 100)  # the origin keeps the old bytes
    usage = fs.space_usage()
    assert usage.live == type(usage.live)(4000, 0)  # the fork's fork point holds it too
    (theirs,) = usage.forks
    assert theirs.workspace_id == fork.workspace_id
    assert theirs.live == type(theirs.live)(800, 800)
    assert theirs.fork_point is not None
    assert theirs.fork_point.reached == 4000
    assert (theirs.reached, theirs.exclusive) == (4800, 800)
    seen_from_fork = fork.space_usage()
    assert seen_from_fork.workspace == theirs
    assert [space.workspace_id for space in seen_from_fork.forks] == [fs.workspace_id]
    held = fs.memory_usage().held
    del fork, seen_from_fork
    gc.collect()  # a tree refers to itself through its lock
    assert held - fs.memory_usage().held == theirs.exclusive
    assert fs.space_usage().forks == ()


def test_dropping_a_fork_with_a_fork_of_its_own_frees_what_it_alone_holds(
    fs: InMemoryFilesystem,
) -> None:
    # The fork's fork inherits its rules (and its origin's), but keeps only its
    # fork point of the dropped fork's data: the byte written afterwards goes.
    fork = fs.fork()
    fork.write_bytes("a", b"x")
    grandchild = fork.fork()
    fork.write_bytes("a", b"y")
    (counted,) = [s for s in fs.space_usage().forks if s.workspace_id == fork.workspace_id]
    assert counted.exclusive == 1
    held = fs.memory_usage().held
    del fork
    gc.collect()
    assert held - fs.memory_usage().held == counted.exclusive
    assert grandchild.read_bytes("a").content == b"x"
    assert [s.workspace_id for s in fs.space_usage().forks] == [grandchild.workspace_id]


def test_the_fork_point_of_a_fork_keeps_what_the_origin_changed_since(
    fs: InMemoryFilesystem,
) -> None:
    fs.write_bytes("f", b"1" * 1000)
    fork = fs.fork()
    fs.write_bytes("f", b"2" * 10)
    usage = fs.space_usage()
    (theirs,) = usage.forks
    assert theirs.fork_point == type(theirs.live)(1000, 0)  # the fork's live tree has it too
    assert (theirs.exclusive, usage.workspace.exclusive) == (1000, 10)
    assert fork.read_bytes("f").content == b"1" * 1000


def test_deleting_a_snapshot_frees_its_exclusive_bytes(fs: InMemoryFilesystem) -> None:
    for i in range(5):
        fs.write_bytes(f"f{i}", bytes([i]) * (CHUNK_SIZE + 100 * i))
        fs.snapshot(tag=f"s{i}")
        if i % 2:
            fs.delete(f"f{i - 1}")
    for record in list(fs.snapshots()):
        usage = fs.space_usage()
        (space,) = [s for s in usage.snapshots if s.snapshot_id == record.snapshot_id]
        held = fs.memory_usage().held
        fs.delete_snapshot(record)
        assert held - fs.memory_usage().held == space.exclusive
    assert fs.space_usage().accounted == fs.memory_usage().held == fs.memory_usage().live


def test_a_restored_snapshot_shares_with_the_live_tree(fs: InMemoryFilesystem) -> None:
    fs.write_bytes("f", b"1" * 100)
    first = fs.snapshot(tag="first")
    fs.write_bytes("f", b"2" * 200)
    fs.snapshot(tag="second")
    fs.restore(first)
    usage = fs.space_usage()
    assert snapshot_figures(usage) == {"first": (100, 100, 0), "second": (200, 0, 200)}


def test_branches_without_a_kept_common_snapshot(fs: InMemoryFilesystem) -> None:
    fs.write_bytes("a", b"a" * 100)
    first = fs.snapshot(tag="first")
    fs.write_bytes("b", b"b" * 200)
    fs.snapshot(tag="second")
    fs.restore(first)
    fs.write_bytes("c", b"c" * 400)
    fs.delete_snapshot(first)  # "second" and the live tree now meet in no kept version
    usage = fs.space_usage()
    assert snapshot_figures(usage) == {"second": (300, 100, 200)}
    assert usage.live == type(usage.live)(500, 400)
    assert usage.held == usage.accounted == 700


def test_an_open_unlinked_file_counts_for_the_live_tree(fs: InMemoryFilesystem) -> None:
    fs.write_bytes("open", b"o" * 3000)
    with fs.tree.lock:
        ino = fs.tree.resolve_path("open")
        assert ino is not None
        fs.tree.hold(ino)  # as the kernel's lookup count does
        fs.tree.unlink(1, "open")
    usage = fs.space_usage()
    assert usage.live == type(usage.live)(3000, 3000)
    assert usage.held == usage.accounted == 3000
    with fs.tree.lock:
        fs.tree.release(ino)
    assert fs.space_usage().accounted == fs.memory_usage().held == 0


def test_versions_held_elsewhere_are_other(fs: InMemoryFilesystem) -> None:
    fs.write_bytes("f", b"1" * 100)
    view = fs.frozen_view()
    fs.write_bytes("f", b"2" * 50)
    usage = fs.space_usage()
    assert usage.other == type(usage.other)(100, 100)
    assert usage.held == usage.accounted == 150
    del view
    assert fs.space_usage().other.reached == 0


def test_a_view_of_a_snapshot_holds_it_apart(fs: InMemoryFilesystem) -> None:
    fs.write_bytes("f", b"1" * 100)
    record = fs.snapshot()
    fs.write_bytes("f", b"2" * 10)
    view = fs.at(record)
    usage = fs.space_usage()
    assert usage.snapshots[0].exclusive == 0  # the view keeps the data too
    assert usage.other == type(usage.other)(100, 0)
    held = fs.memory_usage().held
    fs.delete_snapshot(record)
    assert fs.memory_usage().held == held
    assert fs.space_usage().other == type(usage.other)(100, 100)
    assert view.read("f").content == "1" * 100
    del view
    assert held - fs.memory_usage().held == 100


def test_the_wire_form_round_trips(fs: InMemoryFilesystem) -> None:
    fs.write_bytes("f", b"1" * 100)
    fs.snapshot(tag="t")
    fs.fork().write_bytes("g", b"2")
    usage = fs.space_usage()
    again = SpaceUsage.from_dict(usage.to_dict())
    assert again == usage
    with pytest.raises(InvalidArgumentError):
        again.exclusive_bytes(fs.snapshots())


def test_exclusive_bytes_refuses_a_snapshot_it_did_not_count(fs: InMemoryFilesystem) -> None:
    usage = fs.space_usage()
    record = fs.snapshot()
    with pytest.raises(InvalidArgumentError):
        usage.exclusive_bytes([record])


# -- retention by bytes --------------------------------------------------------------


def grow_history(fs: InMemoryFilesystem, count: int, size: int) -> list[FilesystemSnapshot]:
    """``count`` snapshots, each the only holder of one ``size``-byte file version."""
    records = []
    for i in range(count):
        fs.write_bytes("log", bytes([i]) * size)
        records.append(fs.snapshot())
    fs.write_bytes("log", b"now")
    return records


def test_prune_by_bytes_drops_the_oldest_until_the_snapshots_fit(
    fs: InMemoryFilesystem,
) -> None:
    records = grow_history(fs, 6, 10_000)
    policy = SnapshotRetentionPolicy(max_snapshot_bytes=25_000)
    usage = fs.space_usage()
    held = fs.memory_usage().held
    assert fs.prune(policy, dry_run=True).pruned == tuple(records[:4])
    assert fs.snapshots() == records
    result = fs.prune(policy)
    pruned = result.pruned
    assert pruned == tuple(records[:4])
    assert held - fs.memory_usage().held == usage.exclusive_bytes(pruned) == 40_000
    assert (result.freed_bytes, result.held_before, result.held_after) == (
        40_000,
        held,
        held - 40_000,
    )
    assert fs.space_usage().workspace.snapshots_exclusive == 20_000


def test_prune_by_bytes_counts_data_shared_between_snapshots(fs: InMemoryFilesystem) -> None:
    fs.write_bytes("big", b"b" * 50_000)
    old = fs.snapshot(tag=None)
    newer = fs.snapshot(tag=None)  # the same data: each alone frees nothing
    fs.delete("big")
    policy = SnapshotRetentionPolicy(max_snapshot_bytes=1000)
    assert fs.prune(policy).pruned == (old, newer)
    assert fs.memory_usage().held == 0


def test_prune_by_bytes_keeps_tagged_snapshots(fs: InMemoryFilesystem) -> None:
    fs.write_bytes("f", b"1" * 10_000)
    tagged = fs.snapshot(tag="keep")
    fs.write_bytes("f", b"2" * 10_000)
    plain = fs.snapshot()
    fs.write_bytes("f", b"3")
    assert fs.prune(SnapshotRetentionPolicy(max_snapshot_bytes=0)).pruned == (plain,)
    assert fs.snapshots() == [tagged]
    assert fs.prune(SnapshotRetentionPolicy(max_snapshot_bytes=0, keep_tagged=False)).pruned == (
        tagged,
    )


def test_prune_by_bytes_does_nothing_while_the_budget_holds_less(
    fs: InMemoryFilesystem,
) -> None:
    records = grow_history(fs, 3, 1000)
    assert fs.prune(SnapshotRetentionPolicy(max_snapshot_bytes=10_000)).pruned == ()
    assert fs.snapshots() == records


def test_retention_by_bytes_applies_on_every_snapshot() -> None:
    fs = InMemoryFilesystem(
        memory_budget=MIB, retention=SnapshotRetentionPolicy(max_snapshot_bytes=20_000)
    )
    for i in range(10):
        fs.write_bytes("f", bytes([i]) * 10_000)
        fs.snapshot()
    # The newest snapshot shares its file with the live tree; two older ones fit.
    assert len(fs.snapshots()) == 3
    assert fs.space_usage().workspace.snapshots_exclusive == 20_000


def test_the_byte_rule_needs_the_space_accounting(fs: InMemoryFilesystem) -> None:
    policy = SnapshotRetentionPolicy(max_snapshot_bytes=0)
    with pytest.raises(InvalidArgumentError):
        policy.expired([fs.snapshot()])
    with pytest.raises(InvalidArgumentError):
        SnapshotRetentionPolicy(max_snapshot_bytes=-1)


# -- property: the accounting against a brute-force count -----------------------------


def file_chunks(nodes: Iterator[Node]) -> dict[int, int]:
    """id -> size of every chunk the nodes hold."""
    found: dict[int, int] = {}
    for node in nodes:
        if isinstance(node, File) and node.lazy is None:
            found.update((id(chunk), len(chunk)) for chunk in node.chunks.values())
    return found


def view_chunks(view: TreeView) -> dict[int, int]:
    return file_chunks(node for _, _, node in view.walk())


def brute_force(spaces: list[InMemoryFilesystem]) -> list[dict[int, int]]:
    """The chunks of every holder, in ``space_usage``'s order for ``spaces[0]``:
    per workspace its live tree, its snapshots, its fork point."""
    holders = []
    for space in spaces:
        with space.tree.lock:
            live = view_chunks(space.tree)
            live.update(file_chunks(node for _, node in space.tree.orphan_nodes()))
        holders.append(live)
        holders.extend(view_chunks(space.version(record)) for record in space.snapshots())
        if space.fork_point is not None:
            holders.append(view_chunks(space.fork_point))
    return holders


def figures(usage: SpaceUsage) -> list[tuple[int, int]]:
    found = []
    for workspace in (usage.workspace, *usage.forks):
        found.append((workspace.live.reached, workspace.live.exclusive))
        found.extend((s.reached, s.exclusive) for s in workspace.snapshots)
        if workspace.fork_point is not None:
            found.append((workspace.fork_point.reached, workspace.fork_point.exclusive))
    return found


def expected(holders: list[dict[int, int]]) -> list[tuple[int, int]]:
    found = []
    for index, chunks in enumerate(holders):
        others: set[int] = set()
        for other, their in enumerate(holders):
            if other != index:
                others.update(their)
        exclusive = sum(size for key, size in chunks.items() if key not in others)
        found.append((sum(chunks.values()), exclusive))
    return found


PATHS = ["a", "b", "d/a", "d/b"]


class SpaceMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.spaces = [InMemoryFilesystem(memory_budget=1 << 30)]

    def pick(self, index: int) -> InMemoryFilesystem:
        return self.spaces[index % len(self.spaces)]

    @rule(i=st.integers(0, 9), path=st.sampled_from(PATHS), data=st.binary(max_size=140_000))
    def write(self, i: int, path: str, data: bytes) -> None:
        self.pick(i).write_bytes(path, data)

    @rule(i=st.integers(0, 9), path=st.sampled_from(PATHS), offset=st.integers(0, 200_000))
    def poke(self, i: int, path: str, offset: int) -> None:
        space = self.pick(i)
        if space.exists(path):
            write_at(space, path, offset, b"!")

    @rule(i=st.integers(0, 9), path=st.sampled_from(PATHS), hold=st.booleans())
    def delete(self, i: int, path: str, hold: bool) -> None:
        space = self.pick(i)
        if space.exists(path):
            with space.tree.lock:
                ino = space.tree.resolve_path(path)
                assert ino is not None
                if hold:
                    space.tree.hold(ino)  # stays an orphan
            space.delete(path)

    @rule(i=st.integers(0, 9))
    def snapshot(self, i: int) -> None:
        self.pick(i).snapshot()

    @rule(i=st.integers(0, 9), which=st.integers(0, 9))
    def restore(self, i: int, which: int) -> None:
        space = self.pick(i)
        records = space.snapshots()
        if records:
            space.restore(records[which % len(records)])

    @rule(i=st.integers(0, 9), which=st.integers(0, 9))
    def delete_snapshot(self, i: int, which: int) -> None:
        space = self.pick(i)
        records = space.snapshots()
        if records:
            record = records[which % len(records)]
            usage = space.space_usage()
            (counted,) = [s for s in usage.snapshots if s.snapshot_id == record.snapshot_id]
            held = space.memory_usage().held
            space.delete_snapshot(record)
            assert held - space.memory_usage().held == counted.exclusive

    @precondition(lambda self: len(self.spaces) < 4)
    @rule(i=st.integers(0, 9), which=st.integers(-1, 9))
    def fork(self, i: int, which: int) -> None:
        space = self.pick(i)
        records = space.snapshots()
        snapshot = records[which % len(records)] if records and which >= 0 else None
        self.spaces.append(space.fork(snapshot))

    @precondition(lambda self: len(self.spaces) > 1)
    @rule(i=st.integers(1, 9))
    def drop_fork(self, i: int) -> None:
        index = 1 + i % (len(self.spaces) - 1)
        dropped = self.spaces[index]
        (counted,) = [
            s for s in self.spaces[0].space_usage().forks if s.workspace_id == dropped.workspace_id
        ]
        held = self.spaces[0].memory_usage().held
        del self.spaces[index], dropped
        gc.collect()
        assert held - self.spaces[0].memory_usage().held == counted.exclusive

    @invariant()
    def matches_a_brute_force_count(self) -> None:
        origin = self.spaces[0]
        usage = origin.space_usage()
        order = [origin] + [
            next(s for s in self.spaces if s.workspace_id == fork.workspace_id)
            for fork in usage.forks
        ]
        assert len(order) == len(self.spaces)
        assert figures(usage) == expected(brute_force(order))
        assert usage.other.reached == 0
        assert usage.accounted == usage.held == origin.memory_usage().held
        assert usage.live.reached == origin.memory_usage().live


TestSpace = SpaceMachine.TestCase
TestSpace.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
