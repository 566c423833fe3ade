"""fallocate on the sparse chunk store, against a plain bytes model.

Random writes, truncates, fallocates (every mode) and snapshots on one file:
its bytes match the model, snapshots never change, holes hold nothing, and
the budget's count equals the bytes of the distinct chunks still reachable.
"""

from __future__ import annotations

import errno

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from support.consistency import check_consistent
from workspacefs.tree import (
    CHUNK_SIZE,
    FALLOC_FL_KEEP_SIZE,
    FALLOC_FL_PUNCH_HOLE,
    FALLOC_FL_ZERO_RANGE,
    ROOT_INO,
    File,
    Tree,
    Version,
)

OFFSETS = st.integers(0, 4 * CHUNK_SIZE)
LENGTHS = st.integers(1, 3 * CHUNK_SIZE)
MODES = st.sampled_from(
    [
        0,
        FALLOC_FL_KEEP_SIZE,
        FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
        FALLOC_FL_ZERO_RANGE,
        FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
    ]
)
OPERATIONS = st.one_of(
    st.tuples(st.just("write"), OFFSETS, LENGTHS),
    st.tuples(st.just("truncate"), OFFSETS, st.just(0)),
    st.tuples(st.just("snapshot"), st.just(0), st.just(0)),
    st.tuples(MODES, OFFSETS, LENGTHS),
)


def expected_after_fallocate(data: bytes, mode: int, offset: int, length: int) -> bytes:
    end = offset + length
    size = len(data) if mode & FALLOC_FL_KEEP_SIZE else max(len(data), end)
    grown = data + bytes(size - len(data))
    if mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE):
        zeroed = max(0, min(end, size) - offset)
        grown = grown[:offset] + bytes(zeroed) + grown[offset + zeroed :]
    return grown


def reachable_chunk_bytes(*views: Tree | Version) -> int:
    seen: dict[int, int] = {}
    for view in views:
        for _, _, node in view.walk():
            if isinstance(node, File):
                seen.update((id(chunk), len(chunk)) for chunk in node.chunks.values())
    return sum(seen.values())


@settings(max_examples=300, deadline=None)
@given(st.lists(OPERATIONS, max_size=25))
def test_fallocate_matches_the_model(operations: list[tuple[object, int, int]]) -> None:
    tree = Tree()
    ino = tree.create(ROOT_INO, "f")
    model = b""
    versions: list[tuple[Version, bytes]] = []
    for step, (action, offset, length) in enumerate(operations):
        if action == "write":
            data = bytes([step % 250 + 1]) * length
            tree.write(ino, offset, data)
            model = (
                (model + bytes(max(0, offset - len(model))))[:offset]
                + data
                + model[offset + length :]
            )
        elif action == "truncate":
            tree.truncate(ino, offset)
            model = model[:offset] + bytes(max(0, offset - len(model)))
        elif action == "snapshot":
            versions.append((tree.snapshot(), model))
        else:
            assert isinstance(action, int)
            tree.fallocate(ino, action, offset, length)
            model = expected_after_fallocate(model, action, offset, length)
        assert tree.node(ino).size == len(model)
        assert tree.read(ino, 0, len(model) + 1) == model
    for version, frozen in versions:
        assert version.read(ino, 0, len(frozen) + 1) == frozen
        check_consistent(version)
    check_consistent(tree)
    assert tree.budget.held == reachable_chunk_bytes(tree, *(v for v, _ in versions))


def test_modes_and_what_they_hold() -> None:
    tree = Tree()
    ino = tree.create(ROOT_INO, "f")
    node = tree.node(ino)
    tree.fallocate(ino, 0, 0, 3 * CHUNK_SIZE)  # preallocated: zeros held in memory
    assert (node.size, tree.node(ino).allocated) == (3 * CHUNK_SIZE, 3 * CHUNK_SIZE)
    tree.fallocate(ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 10, 2 * CHUNK_SIZE)
    node = tree.node(ino)
    assert node.size == 3 * CHUNK_SIZE
    assert node.allocated == 10 + CHUNK_SIZE  # chunk 0 cut to 10 bytes, 1 dropped, 2 zeroed
    tree.fallocate(ino, FALLOC_FL_KEEP_SIZE, 5 * CHUNK_SIZE, 100)  # past the end: size kept
    assert tree.node(ino).size == 3 * CHUNK_SIZE
    tree.fallocate(ino, FALLOC_FL_ZERO_RANGE, 0, 4 * CHUNK_SIZE)
    assert tree.node(ino).size == tree.node(ino).allocated == 4 * CHUNK_SIZE
    assert tree.read(ino, 0, 4 * CHUNK_SIZE) == bytes(4 * CHUNK_SIZE)
    check_consistent(tree)


@pytest.mark.parametrize(
    ("mode", "offset", "length", "code"),
    [
        (FALLOC_FL_PUNCH_HOLE, 0, 10, errno.EOPNOTSUPP),  # without KEEP_SIZE
        (
            FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
            0,
            10,
            errno.EOPNOTSUPP,
        ),
        (0x08, 0, 10, errno.EOPNOTSUPP),  # COLLAPSE_RANGE
        (0, -1, 10, errno.EINVAL),
        (0, 0, 0, errno.EINVAL),
    ],
)
def test_refused_modes_and_ranges(mode: int, offset: int, length: int, code: int) -> None:
    tree = Tree()
    ino = tree.create(ROOT_INO, "f")
    with pytest.raises(OSError) as excinfo:
        tree.fallocate(ino, mode, offset, length)
    assert excinfo.value.errno == code
    assert tree.node(ino).size == 0
