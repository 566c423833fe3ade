"""Chunks own their memory: no chunk keeps a larger buffer alive.

Measured with tracemalloc: what the tree still holds after the caller's
buffer is gone must be what the file holds, not what was once written.
"""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Iterator

import pytest

from workspacefs.tree import CHUNK_SIZE, ROOT_INO, MemoryBudget, Tree

MIB = 1 << 20


class Blob:
    """Deferred content standing for a git blob."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    @property
    def key(self) -> object:
        return ("blob", id(self))

    def pieces(self, budget: MemoryBudget, size: int) -> Iterator[bytes]:
        data, self._data = self._data, b""
        yield data


@pytest.fixture
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def held_now() -> int:
    return tracemalloc.get_traced_memory()[0]


@pytest.mark.usefixtures("traced")
def test_truncate_frees_the_rest_of_a_large_write() -> None:
    tree = Tree()
    inodes = [tree.create(ROOT_INO, f"f{n}") for n in range(4)]
    baseline = held_now()
    for ino in inodes:
        data = os.urandom(16 * MIB)
        tree.write(ino, 0, data)
        del data
        tree.truncate(ino, CHUNK_SIZE)
    assert held_now() - baseline < 1 * MIB  # 4 chunks of 64 KiB, not 4 x 16 MiB


@pytest.mark.usefixtures("traced")
def test_overwritten_chunks_free_the_buffer_they_came_from() -> None:
    tree = Tree()
    ino = tree.create(ROOT_INO, "f")
    baseline = held_now()
    data = os.urandom(8 * MIB)
    tree.write(ino, 0, data)
    del data
    tree.write(ino, 0, bytes(8 * MIB - CHUNK_SIZE))  # every chunk but the last rewritten
    assert held_now() - baseline < 8 * MIB + 1 * MIB  # not 16 MiB


@pytest.mark.usefixtures("traced")
def test_deferred_content_is_not_pinned_by_what_is_kept() -> None:
    tree = Tree()
    baseline = held_now()
    ino = tree.create_deferred(ROOT_INO, "f", Blob(os.urandom(16 * MIB)), 16 * MIB)
    assert tree.read(ino, 0, 4) != b""
    tree.truncate(ino, CHUNK_SIZE)
    assert held_now() - baseline < 1 * MIB
